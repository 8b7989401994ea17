/** `svc config` in process: error classification, the lint environment, and output routing. */
import assert from "node:assert/strict";
import { ConfigError } from "../config/schema/schema.ts";
import type { CommandIo } from "./command-io.ts";
import { isParseError, lintEnvironment, runConfigCommand } from "./config-command.ts";

function capture(env: Record<string, string> = {}) {
  const out: string[] = [];
  const err: string[] = [];
  const io: CommandIo = { env, stdout: (l) => out.push(l), stderr: (l) => err.push(l) };
  return { io, out, err };
}

Deno.test("isParseError: parse-shaped errors vs validation errors", () => {
  class ConfigParseError extends Error {
    override name = "ConfigParseError";
  }
  assert.equal(isParseError(new ConfigParseError("x")), true);
  assert.equal(isParseError(Object.assign(new ConfigError("x"), { kind: "parse" })), true);
  assert.equal(
    isParseError(new ConfigError("mixing flat and sectioned keys: listen_addr, advanced")),
    true,
  );
  const mixed = "(document): mixed flat and sectioned config: flat keys listen_addr cannot be " +
    "combined with sections advanced; move them under their section";
  assert.equal(isParseError(new ConfigError(mixed)), true);
  assert.equal(isParseError(new ConfigError("a.toml: TOML configs are no longer supported")), true);
  assert.equal(isParseError(new ConfigError("advanced.listen_addr: expected host:port")), false);
  assert.equal(isParseError("nope"), false);
});

Deno.test("lintEnvironment drops SVC_* unless a placeholder names it", () => {
  const env = { HOME: "/h", SVC_LISTEN_ADDR: ":1", SVC_SECRET: "s", OTHER: "o" };
  assert.deepEqual(lintEnvironment(env, "x: ${env:SVC_SECRET}\ny: ${env:OTHER}"), {
    HOME: "/h",
    SVC_SECRET: "s",
    OTHER: "o",
  });
});

Deno.test("runConfigCommand lint: ok on stdout, errors on stderr", async () => {
  const dir = await Deno.makeTempDir({ prefix: "svc-config-cmd-" });
  try {
    await Deno.writeTextFile(`${dir}/ok.yaml`, "advanced:\n  listen_addr: ':9'\n");
    await Deno.writeTextFile(`${dir}/empty.yaml`, "# nothing but comments\n");
    await Deno.writeTextFile(`${dir}/bad.yaml`, "advanced:\n  max_object_size: -5\n");
    let run = capture({ SVC_MAX_OBJECT_SIZE: "-1" });
    assert.equal(await runConfigCommand(["lint", `${dir}/ok.yaml`], run.io), 0);
    assert.deepEqual(run.out, ["ok"]);
    run = capture();
    assert.equal(await runConfigCommand(["lint", `${dir}/empty.yaml`], run.io), 0);
    run = capture();
    assert.equal(await runConfigCommand(["lint", `${dir}/bad.yaml`], run.io), 6);
    assert.deepEqual(run.out, []);
    assert.match(run.err.join("\n"), /advanced\.max_object_size/);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("runConfigCommand defaults: JSON on stdout; help; usage errors", async () => {
  let run = capture();
  assert.equal(await runConfigCommand(["defaults", "--section", "access"], run.io), 0);
  assert.equal(JSON.parse(run.out.join("\n")).properties.iam_mode.default, "gui");
  run = capture();
  assert.equal(await runConfigCommand(["help"], run.io), 0);
  assert.match(run.out.join("\n"), /config lint <file>/);
  run = capture();
  assert.equal(await runConfigCommand([], run.io), 2);
  assert.equal(await runConfigCommand(["defaults", "--section"], run.io), 2);
  assert.equal(await runConfigCommand(["lint", "a", "b"], run.io), 2);
});

Deno.test("svc config <command> --help prints usage and exits 0", async () => {
  for (const args of [["lint", "--help"], ["defaults", "-h"], ["apply", "--help"], ["--help"]]) {
    const { io, out, err } = capture();
    assert.equal(await runConfigCommand(args, io), 0, args.join(" "));
    assert.match(out.join("\n"), /svc config (lint|apply)/, args.join(" "));
    assert.deepEqual(err, []);
  }
});
