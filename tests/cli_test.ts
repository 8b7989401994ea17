/**
 * The command line: `parseArgs` as a unit, then main.ts as a subprocess in a temp directory with
 * a clean environment (only PATH, HOME, DENO_NO_UPDATE_CHECK) for the refusals an operator meets
 * first: no credentials, a TOML config, a bad --listen; and --version / --help.
 */
import assert from "node:assert/strict";
import { runSvc } from "./helpers/run-svc.ts";
import { parseArgs } from "../main.ts";
import { ConfigError } from "../src/config/schema/schema.ts";
import { VERSION } from "../src/lib/version.ts";

// --- parseArgs ----------------------------------------------------------------------------------

Deno.test("parseArgs: no arguments and `serve` both serve with nothing set", () => {
  const expected = { command: "serve", verbose: false };
  assert.deepEqual(parseArgs([]), expected);
  assert.deepEqual(parseArgs(["serve"]), expected);
});

Deno.test("parseArgs: --config takes the next argument or an = value", () => {
  assert.equal(parseArgs(["--config", "x.yaml"]).config, "x.yaml");
  assert.equal(parseArgs(["--config=x.yaml"]).config, "x.yaml");
  assert.equal(parseArgs(["-c", "y.yaml"]).config, "y.yaml");
  assert.equal(parseArgs(["--config=a=b.yaml"]).config, "a=b.yaml");
  assert.deepEqual(parseArgs(["serve", "--config", "x.yaml"]), {
    command: "serve",
    verbose: false,
    config: "x.yaml",
  });
});

Deno.test("parseArgs: --listen takes the next argument or an = value", () => {
  assert.equal(parseArgs(["--listen", "127.0.0.1:1"]).listen, "127.0.0.1:1");
  assert.equal(parseArgs(["--listen=[::1]:2"]).listen, "[::1]:2");
  assert.equal(parseArgs(["-l", ":3"]).listen, ":3");
});

Deno.test("parseArgs: --verbose, --help and --version", () => {
  assert.equal(parseArgs(["--verbose"]).verbose, true);
  assert.equal(parseArgs(["-v"]).verbose, true);
  for (const help of ["--help", "-h", "help"]) assert.equal(parseArgs([help]).command, "help");
  for (const version of ["--version", "-V"]) {
    assert.equal(parseArgs([version]).command, "version");
  }
});

Deno.test("parseArgs: everything together", () => {
  assert.deepEqual(
    parseArgs(["serve", "--config=c.yaml", "--listen", ":9001", "--verbose"]),
    { command: "serve", config: "c.yaml", listen: ":9001", verbose: true },
  );
});

Deno.test("parseArgs: an unknown flag or argument is a ConfigError naming it", () => {
  for (const arg of ["--bogus", "-x", "start", "--configx", "--listen-addr=1"]) {
    assert.throws(() => parseArgs([arg]), (err: unknown) => {
      assert.ok(err instanceof ConfigError);
      assert.match(err.message, /Unknown argument/);
      assert.ok(err.message.includes(`"${arg}"`), err.message);
      return true;
    });
  }
});

Deno.test("parseArgs: a flag without its value is an error", () => {
  for (
    const args of [["--config"], ["--listen"], ["serve", "-c"], ["--config="], ["--listen="], [
      "--config",
      "",
    ]]
  ) {
    assert.throws(() => parseArgs(args), (err: unknown) => {
      assert.ok(err instanceof ConfigError, String(args));
      assert.match(err.message, /needs a value/);
      return true;
    });
  }
});

// --- main.ts as a subprocess --------------------------------------------------------------------

Deno.test("svc without credentials exits non-zero and says how to fix it", async () => {
  const run = await runSvc([]);
  assert.notEqual(run.code, 0, run.stderr);
  assert.match(run.stderr, /No credentials configured/);
  assert.match(run.stderr, /SVC_ACCESS_KEY_ID/);
  assert.match(run.stderr, /authentication: none/);
  assert.deepEqual(run.entries, [], "nothing is created before the refusal");
});

Deno.test("svc with a svc.toml in the working directory exits with the TOML message", async () => {
  const run = await runSvc([], {
    "svc.toml": '[access]\nauthentication = "none"\n',
  });
  assert.notEqual(run.code, 0, run.stderr);
  assert.match(run.stderr, /TOML configs are no longer supported/);
  assert.match(run.stderr, /svc\.toml/);
  assert.deepEqual(run.entries, ["svc.toml"]);
});

Deno.test("svc --listen garbage exits non-zero naming the bad address", async () => {
  // Open access, so the listen address is the only thing wrong.
  const run = await runSvc(["--listen", "garbage"], {
    "svc.yaml": "access:\n  authentication: none\n",
  });
  assert.notEqual(run.code, 0, run.stderr);
  assert.match(run.stderr, /listen/);
  assert.match(run.stderr, /"garbage"/);
  assert.deepEqual(run.entries, ["svc.yaml"], "refused before the data directory is created");
});

Deno.test("svc --config naming a missing file exits non-zero naming it", async () => {
  const run = await runSvc(["--config", "absent.yaml"]);
  assert.notEqual(run.code, 0);
  assert.match(run.stderr, /absent\.yaml/);
});

Deno.test("svc with an unknown flag exits with usage error code 2", async () => {
  const run = await runSvc(["--bogus"]);
  assert.equal(run.code, 2);
  assert.match(run.stderr, /Unknown argument "--bogus"/);
});

Deno.test("svc --version prints the version", async () => {
  const run = await runSvc(["--version"]);
  assert.equal(run.code, 0, run.stderr);
  assert.equal(run.stdout.split("\n")[0], `svc ${VERSION}`);
});

Deno.test("svc --help prints usage", async () => {
  const run = await runSvc(["--help"]);
  assert.equal(run.code, 0, run.stderr);
  assert.match(run.stdout, /Usage:/);
  assert.match(run.stdout, /--config <path>/);
  assert.match(run.stdout, /--listen <host:port>/);
  assert.match(run.stdout, /--version/);
  assert.ok(run.stdout.includes(VERSION));
});

Deno.test("svc refuses an S3 backend without credentials, before writing anything", async () => {
  const run = await runSvc(["--listen", "127.0.0.1:0"], {
    "svc.yaml": "access:\n  authentication: none\nstorage:\n  s3: https://s3.example.com\n",
  });
  assert.notEqual(run.code, 0);
  assert.match(run.stderr, /Backend "default": .*has no credentials/);
  assert.deepEqual(run.entries, ["svc.yaml"], "no data directory was created");
});
