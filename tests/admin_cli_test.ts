/**
 * `svc admin …` driven like an operator: the real server (tests/helpers/svc.ts), the CLI as a
 * subprocess of main.ts with a clean environment and its own session file. Covers login (the
 * bootstrap password and IAM keys), the session file's mode, IAM users/groups/keys, buckets,
 * jobs (a re-encrypt followed to the end, a lifecycle rule run, paused and resumed), backup
 * export and import, config export/validate, diagnostics, `--json` output, and the exit codes:
 * 0 ok, 1 refused, 2 usage, 3 not logged in / login refused, 4 unreachable. Every command's
 * `--help` is checked in process over the command table.
 */
import assert from "node:assert/strict";
import { PutObjectCommand } from "@aws-sdk/client-s3";
import { ADMIN_PASSWORD } from "./helpers/admin.ts";
import { startSvc } from "./helpers/svc.ts";
import { ADMIN_GROUPS, runAdminCommand } from "../src/cli/admin/admin-command.ts";
import type { AdminIo } from "../src/cli/admin/admin-io.ts";
import { type CliRun, runAdminCli } from "./helpers/admin-cli.ts";

const ROOT = new URL("../", import.meta.url).pathname;
const DENO = `${ROOT}node_modules/.bin/deno`;

type Run = CliRun;

type Json = Record<string, unknown>;

/** Runs `svc admin <args>` with `env` (and `stdin` piped in when given). */
const cli = runAdminCli;

/** Asserts the exit code (showing the output when it differs). */
function expect(run: Run, code: number, what: string): Run {
  assert.equal(run.code, code, `${what}: exit ${run.code}\n${run.stdout}\n${run.stderr}`);
  return run;
}

/** A refusal: the code, and one `svc: …` line on stderr. */
function refused(run: Run, code: number, pattern: RegExp, what: string): void {
  expect(run, code, what);
  const lines = run.stderr.trim().split("\n").filter((line) => line.startsWith("svc: "));
  assert.equal(lines.length, 1, `${what}: ${run.stderr}`);
  assert.match(lines[0], pattern, what);
}

const LIFECYCLE = `storage:
  lifecycle:
    enabled: true
    tick_interval: 1h
    rules:
      - name: tidy
        enabled: true
        bucket: photos
        action: delete
        expire_after: 30d
`;

/** A port nothing listens on (bound, then released). */
function closedPort(): number {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const { port } = listener.addr as Deno.NetAddr;
  listener.close();
  return port;
}

Deno.test("svc admin against a running server: sessions, IAM, buckets, jobs, backup, config, diagnostics", async () => {
  const dir = await Deno.makeTempDir({ prefix: "svc-admin-cli-" });
  const config = `${dir}/svc.yaml`;
  await Deno.writeTextFile(config, LIFECYCLE);
  await using svc = await startSvc({ args: ["--config", config] });
  const session = `${dir}/home/.config/svc/admin-session.json`;
  const env = { HOME: `${dir}/home`, SVC_ADMIN_URL: svc.url };
  const run = (args: string[], stdin?: string, extra: Record<string, string> = {}) =>
    cli(args, { ...env, ...extra }, stdin);
  const json = async (args: string[]): Promise<Json> =>
    JSON.parse(expect(await run([...args, "--json"]), 0, args.join(" ")).stdout);
  try {
    // ── Sessions: none yet, a wrong password, the right one.
    refused(await run(["whoami"]), 3, /Not logged in: run svc admin login/, "no session");
    refused(await run(["users", "list"]), 3, /Not logged in/, "no session");
    refused(
      await run(["login"], undefined, { SVC_ADMIN_PASSWORD: "wrong-password-123" }),
      3,
      /Login refused: Wrong password \(HTTP 401 unauthorized\)/,
      "wrong password",
    );
    await assert.rejects(() => Deno.stat(session), Deno.errors.NotFound);
    const login = expect(
      await run(["login", "--password-stdin"], `${ADMIN_PASSWORD}\n`),
      0,
      "login",
    );
    assert.match(login.stdout, /Logged in to http:\/\/127\.0\.0\.1:\d+ as \$bootstrap/);
    assert.equal((await Deno.stat(session)).mode! & 0o777, 0o600);
    assert.equal((await json(["whoami"])).user, "$bootstrap");
    // A session file someone widened is narrowed before use, with a warning.
    await Deno.chmod(session, 0o644);
    const narrowed = expect(await run(["whoami"]), 0, "whoami after chmod");
    assert.match(narrowed.stderr, /was mode 644; narrowed to 600/);
    assert.equal((await Deno.stat(session)).mode! & 0o777, 0o600);

    // ── IAM: a user with keys, a group, rotation, IAM-key login, disable, delete.
    const alice = await json(["users", "create", "alice", "--admin"]);
    assert.equal(alice.name, "alice");
    assert.equal(typeof alice.secret_access_key, "string");
    expect(await run(["groups", "create", "devs", "--description", "the devs"]), 0, "group");
    expect(await run(["groups", "add-member", "devs", "alice"]), 0, "add-member");
    const users = (await json(["users", "list"])).users as Json[];
    assert.deepEqual(users.map((u) => [u.name, u.groups]), [["alice", ["devs"]]]);
    const table = expect(await run(["users", "list"]), 0, "users list").stdout;
    assert.match(table, /^NAME\s+ID\s+ACCESS KEY\s+ENABLED/);
    assert.match(
      table,
      new RegExp(`alice\\s+${alice.id}\\s+${alice.access_key_id}\\s+yes\\s+devs`),
    );

    const rotated = await json(["keys", "rotate", "alice"]);
    assert.notEqual(rotated.access_key_id, alice.access_key_id);
    const aliceSession = `${dir}/alice-session.json`;
    const asAlice = (args: string[], stdin?: string) =>
      run([...args, "--session-file", aliceSession], stdin);
    refused(
      await asAlice(
        ["login", "--access-key-id", String(alice.access_key_id), "--secret-stdin"],
        `${alice.secret_access_key}\n`,
      ),
      3,
      /Login refused: Unknown access key or wrong secret/,
      "the rotated-away key",
    );
    expect(
      await asAlice(
        ["login", "--access-key-id", String(rotated.access_key_id), "--secret-stdin"],
        `${rotated.secret_access_key}\n`,
      ),
      0,
      "IAM key login",
    );
    assert.equal((await Deno.stat(aliceSession)).mode! & 0o777, 0o600);
    assert.match(expect(await asAlice(["whoami"]), 0, "whoami alice").stdout, /user:\s+alice/);

    expect(await run(["users", "disable", "alice"]), 0, "disable");
    assert.equal((await json(["users", "show", "alice"])).enabled, false);
    // Disabling ends alice's session: the server now answers 401, exit 3.
    refused(await asAlice(["users", "list"]), 3, /HTTP 401/, "disabled user's session");
    expect(await run(["users", "enable", "alice"]), 0, "enable");
    expect(await run(["users", "delete", "alice"]), 0, "delete user");
    expect(await run(["groups", "delete", "devs"]), 0, "delete group");
    assert.deepEqual((await json(["users", "list"])).users, []);
    assert.deepEqual((await json(["groups", "list"])).groups, []);
    refused(await run(["users", "show", "alice"]), 1, /No user "alice"/, "deleted user");

    // ── Buckets and backends.
    expect(await run(["buckets", "create", "photos"]), 0, "bucket create");
    const buckets = (await json(["buckets", "list"])).buckets as Json[];
    assert.deepEqual(buckets.map((b) => [b.name, b.backend]), [["photos", "default"]]);
    assert.match(expect(await run(["buckets", "list"]), 0, "buckets").stdout, /photos\s+default/);
    refused(
      await run(["buckets", "create", "photos"]),
      1,
      /already exists \(HTTP 409 conflict\)/,
      "dup",
    );
    const backends = (await json(["backends", "list"])).backends as Json[];
    assert.equal(backends[0].name, "default");

    // ── Jobs: a re-encrypt followed to the end (plain lines: stdout is a pipe).
    const s3 = svc.client();
    for (let i = 0; i < 3; i++) {
      await s3.send(new PutObjectCommand({ Bucket: "photos", Key: `p${i}`, Body: `photo ${i}` }));
    }
    const started = await json(["jobs", "reencrypt", "photos"]);
    const id = String((started.started as Json[])[0].id);
    const followed = expect(await run(["jobs", "follow", id, "--interval", "0.2"]), 0, "follow");
    for (const control of ["\r", "\u001b"]) {
      assert.ok(!followed.stdout.includes(control), "no terminal control codes in a pipe");
    }
    assert.match(followed.stdout, new RegExp(`^${id} \\w+`, "m"));
    assert.match(followed.stdout, new RegExp(`Job ${id} succeeded`));
    const job = await json(["jobs", "show", id]);
    assert.equal(job.status, "succeeded");
    assert.ok(Number((job.progress as Json).objects_done) >= 3, JSON.stringify(job.progress));
    const jobs = expect(await run(["jobs", "list"]), 0, "jobs list").stdout;
    assert.match(
      jobs,
      // With the job's totals (progress fields): "100%, 3/3 objects, 21 B/21 B, eta 0s".
      new RegExp(`${id}\\s+reencrypt\\s+photos\\s+succeeded\\s+done\\s+100%, (\\d+)/\\1 objects`),
    );
    assert.match(jobs, /lifecycle:tidy/);
    refused(await run(["jobs", "pause", id]), 1, /not supported by maintenance jobs/, "405");
    // The lifecycle rule: run now, pause, resume.
    expect(await run(["jobs", "run-now", "lifecycle:tidy"]), 0, "run-now");
    expect(await run(["jobs", "pause", "lifecycle:tidy"]), 0, "pause");
    assert.equal((await json(["jobs", "show", "lifecycle:tidy"])).paused, true);
    expect(await run(["jobs", "resume", "lifecycle:tidy"]), 0, "resume");
    assert.equal((await json(["jobs", "show", "lifecycle:tidy"])).paused, false);
    assert.ok(((await json(["jobs", "runs", "lifecycle:tidy"])).runs as Json[]).length >= 1);

    // ── Backup: export to a file (0600, a zip), import it back.
    const zip = `${dir}/backup.zip`;
    expect(await run(["backup", "export", "--output", zip]), 0, "export");
    assert.equal((await Deno.stat(zip)).mode! & 0o777, 0o600);
    assert.deepEqual([...(await Deno.readFile(zip)).slice(0, 2)], [0x50, 0x4b]); // "PK"
    const imported = await json(["backup", "import", zip]);
    assert.equal(imported.format, "zip");
    refused(await run(["backup", "import", `${dir}/none.zip`]), 1, /Cannot read backup file/, "io");

    // ── Config over the API.
    const yaml = expect(await run(["config", "export"]), 0, "config export").stdout;
    assert.match(yaml, /lifecycle:/);
    const exported = `${dir}/exported.yaml`;
    expect(await run(["config", "export", "--output", exported]), 0, "export to file");
    assert.match(
      expect(await run(["config", "validate", exported]), 0, "validate").stdout,
      /valid/,
    );
    await Deno.writeTextFile(`${dir}/bad.yaml`, "storage:\n  bogus_key: 1\n");
    refused(
      await run(["config", "validate", `${dir}/bad.yaml`]),
      1,
      /bogus_key.*\(HTTP 422 invalid_config\)/,
      "invalid config",
    );
    assert.equal(
      typeof (await json(["config", "show", "--section", "storage"])).lifecycle,
      "object",
    );

    // ── Diagnostics.
    const efficiency = await json(["diagnostics", "delta-efficiency"]);
    assert.equal(typeof (efficiency.totals as Json).objects, "number");
    expect(await run(["diagnostics", "scan", "start"]), 0, "scan start");
    assert.equal(typeof (await json(["diagnostics", "scan", "status"])).state, "string");
    expect(await run(["diagnostics", "scan", "stop"]), 0, "scan stop");

    // ── Usage errors (2) and an unreachable server (4).
    refused(await run(["users", "frob"]), 2, /Unknown command "frob"/, "unknown command");
    refused(await run(["users", "show"]), 2, /takes 1 argument/, "missing argument");
    refused(await run(["users", "list", "--bogus"]), 2, /Unknown option "--bogus"/, "bad flag");
    refused(await run(["nope"]), 2, /Unknown admin command "nope"/, "unknown group");
    refused(await run(["jobs", "follow", id, "--interval", "0"]), 2, /positive number/, "bad n");
    const nowhere = `http://127.0.0.1:${closedPort()}`;
    refused(
      await run(["login", "--password-stdin"], `${ADMIN_PASSWORD}\n`, { SVC_ADMIN_URL: nowhere }),
      4,
      /Cannot reach the server at/,
      "unreachable",
    );

    // ── Logout: the file goes, the server's session ends.
    const cookie = JSON.parse(await Deno.readTextFile(session)).cookie;
    expect(await run(["logout"]), 0, "logout");
    await assert.rejects(() => Deno.stat(session), Deno.errors.NotFound);
    const after = await fetch(`${svc.url}/_/api/admin/users`, { headers: { cookie } });
    assert.equal(after.status, 401);
    await after.body?.cancel();
    refused(await run(["whoami"]), 3, /Not logged in/, "after logout");
  } finally {
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
});

function captureIo(): AdminIo & { out: string[]; err: string[] } {
  const out: string[] = [];
  const err: string[] = [];
  return {
    out,
    err,
    env: { HOME: "/nonexistent" },
    stdout: (line) => out.push(line),
    stderr: (line) => err.push(line),
    write: (text) => out.push(text),
    stdoutIsTerminal: false,
    columns: () => 80,
    readStdin: () => Promise.resolve(""),
    promptSecret: () => Promise.resolve(undefined),
    sleep: () => Promise.resolve(),
  };
}

Deno.test("svc admin: --help and -h on every command exit 0 with its usage", async () => {
  let commands = 0;
  for (const group of ADMIN_GROUPS) {
    for (const command of group.commands) {
      const words = [group.name, command.name].filter((w) => w !== "");
      for (const flag of ["--help", "-h"]) {
        const io = captureIo();
        const code = await runAdminCommand([...words, flag], io);
        assert.equal(code, 0, `${words.join(" ")} ${flag}: ${io.err.join("\n")}`);
        assert.match(io.out.join("\n"), new RegExp(`^Usage: svc admin ${words.join(" ")}`));
        assert.match(io.out.join("\n"), /Exit codes: 0 ok/);
      }
      commands++;
    }
    if (group.commands.every((c) => c.name !== "")) {
      const io = captureIo();
      assert.equal(await runAdminCommand([group.name, "--help"], io), 0, group.name);
      for (const command of group.commands) {
        assert.match(io.out.join("\n"), new RegExp(`\\b${command.name}\\b`));
      }
    }
  }
  assert.ok(commands >= 40, `${commands} commands`);
  const io = captureIo();
  assert.equal(await runAdminCommand(["--help"], io), 0);
  assert.match(io.out.join("\n"), /jobs follow <id>/);
  // No command at all is a usage error (the usage goes to stderr).
  const bare = captureIo();
  assert.equal(await runAdminCommand([], bare), 2);
});

Deno.test("svc admin --help and svc config lint --help through main.ts", async () => {
  for (
    const args of [["admin", "--help"], ["admin", "jobs", "follow", "-h"], [
      "config",
      "lint",
      "--help",
    ], ["admission", "trace", "--help"]]
  ) {
    const child = await new Deno.Command(DENO, {
      args: ["run", "--allow-all", `${ROOT}main.ts`, ...args],
      env: { DENO_NO_UPDATE_CHECK: "1" },
      stdout: "piped",
      stderr: "piped",
    }).output();
    const stdout = new TextDecoder().decode(child.stdout);
    assert.equal(child.code, 0, `${args.join(" ")}: ${new TextDecoder().decode(child.stderr)}`);
    assert.match(stdout, /Usage/, args.join(" "));
  }
});
