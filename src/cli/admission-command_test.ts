/**
 * `svc admission trace` over a real config file on disk: in-process for the outcomes and exit
 * codes, and once through main.ts as a subprocess.
 */
import assert from "node:assert/strict";
import { runSvc } from "../../tests/helpers/run-svc.ts";
import { EXIT } from "./config-command.ts";
import { runAdmissionCommand } from "./admission-command.ts";

const CONFIG = `admission:
  blocks:
    - name: lab-deny
      match:
        source_ip_list: ["10.20.0.0/16"]
      action: deny
    - name: mirror
      match:
        bucket: mirror
        path_glob: "pub/**"
      action: allow-anonymous
access:
  access_key_id: AKIAEXAMPLE
  secret_access_key: \${env:TRACE_SECRET}
storage:
  buckets:
    site:
      public_prefixes: ["assets/"]
`;

async function trace(args: string[], text = CONFIG, env: Record<string, string> = {}) {
  const dir = await Deno.makeTempDir({ prefix: "svc-trace-test-" });
  try {
    await Deno.writeTextFile(`${dir}/svc.yaml`, text);
    const out: string[] = [];
    const err: string[] = [];
    const code = await runAdmissionCommand(
      ["trace", "--config", `${dir}/svc.yaml`, ...args],
      {
        env: { TRACE_SECRET: "s3cr3t", ...env },
        stdout: (line) => out.push(line),
        stderr: (line) => err.push(line),
      },
    );
    return { code, stdout: out.join("\n"), stderr: err.join("\n") };
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

Deno.test("admission trace: names the deciding block, or says none matched", async () => {
  const denied = await trace([
    "--method",
    "GET",
    "--path",
    "/mirror/pub/a",
    "--source-ip",
    "10.20.1.2",
  ]);
  assert.equal(denied.code, EXIT.ok, denied.stderr);
  assert.match(denied.stdout, /GET \/mirror\/pub\/a \(object-read, unsigned, from 10\.20\.1\.2\)/);
  assert.match(denied.stdout, /outcome: deny \(403\)/);
  assert.match(denied.stdout, /block "lab-deny" \(#0\) denies/);

  const admitted = await trace(["--path", "/mirror/pub/a"]);
  assert.match(admitted.stdout, /outcome: anonymous/);
  assert.match(admitted.stdout, /block "mirror" \(#1\) admits/);

  const signed = await trace(["--path=/site/assets/x.css", "--authenticated"]);
  assert.match(signed.stdout, /outcome: authenticate/);
  // The synthesized public-prefix block matches unsigned requests only.
  assert.match(signed.stdout, /no block matched/);

  const none = await trace(["--method", "PUT", "--bucket", "other", "--key", "k"]);
  assert.match(none.stdout, /no block matched: falls through to authentication/);
});

Deno.test("admission trace --json prints the whole trace", async () => {
  const result = await trace(["--path", "/mirror/pub/a", "--json"]);
  assert.equal(result.code, EXIT.ok);
  const json = JSON.parse(result.stdout);
  assert.deepEqual(json.decided_by, { name: "mirror", action: "allow-anonymous", index: 1 });
  assert.equal(json.request.kind, "object-read");
});

Deno.test("admission trace: the file is judged alone (SVC_* overrides ignored)", async () => {
  const result = await trace(["--path", "/mirror/pub/a"], CONFIG, { SVC_LISTEN_ADDR: "junk" });
  assert.equal(result.code, EXIT.ok, result.stderr);
});

Deno.test("admission trace: exit codes for usage, I/O, parse and validation errors", async () => {
  assert.equal((await trace([])).code, EXIT.usage, "no path or bucket");
  assert.equal((await trace(["--path", "/a", "--bogus"])).code, EXIT.usage);
  const badIp = await trace(["--path", "/a", "--source-ip", "not-an-ip"]);
  assert.equal(badIp.code, EXIT.usage);
  assert.match(badIp.stderr, /source_ip must be an IP address, got "not-an-ip"/);
  assert.equal((await trace(["--path", "/a"], "admission: [\n")).code, EXIT.parse);
  const invalid = await trace(["--path", "/a"], "admission:\n  blocks:\n    - name: x\n");
  assert.equal(invalid.code, EXIT.validation);
  assert.match(invalid.stderr, /admission\.blocks\.0\.action/);
  const io = { env: {}, stdout: () => {}, stderr: () => {} };
  const missing = await runAdmissionCommand(
    ["trace", "--config", "/nonexistent.yaml", "--path", "/a"],
    io,
  );
  assert.equal(missing, EXIT.io);
  assert.equal(await runAdmissionCommand(["nope"], io), EXIT.usage);
  const out: string[] = [];
  const help = { ...io, stdout: (line: string) => out.push(line) };
  assert.equal(await runAdmissionCommand(["trace", "--help"], help), EXIT.ok);
  assert.match(out.join("\n"), /svc admission trace --config/);
});

Deno.test("svc admission trace through main.ts (subprocess)", async () => {
  const result = await runSvc(
    ["admission", "trace", "--config", "svc.yaml", "--method", "HEAD", "--path", "/mirror/pub/x"],
    { "svc.yaml": CONFIG },
    { TRACE_SECRET: "s3cr3t" },
  );
  assert.equal(result.code, 0, result.stderr);
  assert.match(result.stdout, /block "mirror" \(#1\) admits the request without authentication/);
});
