/**
 * `svc config lint` and `svc config defaults` as an operator runs them: main.ts as a subprocess in
 * a temp directory with a minimal environment (PATH, HOME, DENO_NO_UPDATE_CHECK plus what a test
 * adds). Exit codes from the spec: 0 valid, 3 I/O, 4 parse, 6 validation.
 */
import assert from "node:assert/strict";
import { runSvc } from "./helpers/run-svc.ts";

const ROOT = new URL("../", import.meta.url).pathname;

const VALID = `access:
  access_key_id: AKIAEXAMPLE
  secret_access_key: \${env:LINT_SECRET}
advanced:
  listen_addr: 127.0.0.1:9100
`;

Deno.test("config lint: a valid file exits 0 and prints ok", async () => {
  const run = await runSvc(["config", "lint", "svc.yaml"], { "svc.yaml": VALID }, {
    LINT_SECRET: "s3cr3t",
  });
  assert.equal(run.code, 0, run.stderr);
  assert.equal(run.stdout.trim(), "ok");
});

Deno.test("config lint: SVC_* overrides are not applied (the file is judged alone)", async () => {
  const run = await runSvc(["config", "lint", "svc.yaml"], { "svc.yaml": VALID }, {
    LINT_SECRET: "s3cr3t",
    SVC_LISTEN_ADDR: "not-an-address",
    SVC_REQUEST_TIMEOUT_SECS: "nope",
  });
  assert.equal(run.code, 0, run.stderr);
});

Deno.test("config lint: a missing file exits 3", async () => {
  const run = await runSvc(["config", "lint", "absent.yaml"]);
  assert.equal(run.code, 3, run.stderr);
  assert.match(run.stderr, /absent\.yaml/);
  assert.equal(run.stdout, "");
});

Deno.test("config lint: a directory (unreadable as a file) exits 3", async () => {
  const run = await runSvc(["config", "lint", "."]);
  assert.equal(run.code, 3, run.stderr);
});

Deno.test("config lint: bad YAML, a non-mapping and a TOML file exit 4", async () => {
  const cases: Record<string, string> = {
    "bad.yaml": "advanced:\n  listen_addr: [unclosed\n",
    "list.yaml": "- just\n- a list\n",
    "svc.toml": 'listen_addr = "0.0.0.0:9000"\n',
  };
  for (const [name, text] of Object.entries(cases)) {
    const run = await runSvc(["config", "lint", name], { [name]: text });
    assert.equal(run.code, 4, `${name}: ${run.stderr}`);
    assert.match(run.stderr, new RegExp(name.replace(".", "\\.")));
  }
});

Deno.test("config lint: validation errors exit 6 and name the field", async () => {
  const run = await runSvc(["config", "lint", "svc.yaml"], {
    "svc.yaml": "advanced:\n  listen_addr: nowhere\n  request_timeout_secs: -1\n",
  });
  assert.equal(run.code, 6, run.stderr);
  assert.match(run.stderr, /advanced\.listen_addr/);
  assert.match(run.stderr, /advanced\.request_timeout_secs/);
});

Deno.test("config lint: a placeholder naming a missing variable exits 6", async () => {
  const run = await runSvc(["config", "lint", "svc.yaml"], { "svc.yaml": VALID });
  assert.equal(run.code, 6, run.stderr);
  assert.match(run.stderr, /LINT_SECRET/);
});

Deno.test("config lint: usage errors exit 2", async () => {
  assert.equal((await runSvc(["config", "lint"])).code, 2);
  assert.equal((await runSvc(["config", "frobnicate"])).code, 2);
});

Deno.test("svc.example.yaml lints clean", async () => {
  const example = await Deno.readTextFile(`${ROOT}svc.example.yaml`);
  const run = await runSvc(["config", "lint", "svc.yaml"], { "svc.yaml": example });
  assert.equal(run.code, 0, run.stderr);
  assert.equal(run.stdout.trim(), "ok");
  for (const section of ["access:", "storage:", "advanced:", "admission:"]) {
    assert.ok(example.includes(`\n${section}`), `example lacks ${section}`);
  }
  for (const commented of ["# backends:", "# buckets:"]) {
    assert.ok(example.includes(commented), `example lacks ${commented}`);
  }
});

Deno.test("config defaults prints the JSON Schema; --section narrows it", async () => {
  const full = await runSvc(["config", "defaults"]);
  assert.equal(full.code, 0, full.stderr);
  const schema = JSON.parse(full.stdout);
  for (const section of ["admission", "access", "storage", "advanced"]) {
    assert.ok(section in schema.properties, section);
  }
  const advanced = await runSvc(["config", "defaults", "--section", "advanced"]);
  assert.equal(advanced.code, 0, advanced.stderr);
  const section = JSON.parse(advanced.stdout);
  assert.equal(section.properties.listen_addr.default, "0.0.0.0:9000");
  const unknown = await runSvc(["config", "defaults", "--section=bogus"]);
  assert.equal(unknown.code, 2);
  assert.match(unknown.stderr, /bogus/);
});

Deno.test("config lint: a setting accepted but not built yet is named in a warning", async () => {
  const file = `access:
  access_key_id: AKIAEXAMPLE
  secret_access_key: s3cr3t
storage:
  filesystem: ./data
advanced:
  blocking_threads: 64
`;
  const run = await runSvc(["config", "lint", "svc.yaml"], { "svc.yaml": file });
  assert.equal(run.code, 0, "a warning never fails lint");
  assert.match(
    run.stderr,
    /advanced\.blocking_threads: accepted but not built yet.*no effect/,
  );
});
