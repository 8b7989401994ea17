import assert from "node:assert/strict";
import { validateConfig } from "../config/schema/schema.ts";
import { changedPaths, planApply } from "./apply.ts";

const base = validateConfig({
  access: { access_key_id: "AKIA", secret_access_key: "secret" },
  advanced: { listen_addr: "127.0.0.1:9000", max_object_size: 1000 },
});

Deno.test("changedPaths lists leaf paths that differ", () => {
  assert.deepEqual(changedPaths({ a: { b: 1, c: [1] } }, { a: { b: 2, c: [1] }, d: 3 }), [
    "a.b",
    "d",
  ]);
  assert.deepEqual(changedPaths(base, structuredClone(base)), []);
});

Deno.test("planApply: hot-reloadable settings apply, restart-only ones keep their running value", () => {
  const next = validateConfig({
    access: { access_key_id: "AKIA2", secret_access_key: "secret2" },
    advanced: { listen_addr: "127.0.0.1:9999", max_object_size: 5000, log_level: "warn" },
  });
  const { snapshot, result } = planApply(base, next);
  assert.deepEqual(result.applied.sort(), [
    "access.access_key_id",
    "access.secret_access_key",
    "advanced.log_level",
    "advanced.max_object_size",
  ]);
  assert.deepEqual(result.requires_restart, ["advanced.listen_addr"]);
  assert.match(result.warnings[0], /advanced\.listen_addr/);
  assert.equal(snapshot.advanced.listen_addr, "127.0.0.1:9000", "the running listener is kept");
  assert.equal(snapshot.advanced.max_object_size, 5000);
  assert.equal(snapshot.access.access_key_id, "AKIA2");
  assert.equal(next.advanced.listen_addr, "127.0.0.1:9999", "the input is not modified");
});

Deno.test("planApply: applying the same document twice reports the pending restart again", () => {
  const next = validateConfig({ ...structuredClone(base), advanced: { listen_addr: ":1" } });
  const first = planApply(base, next);
  const second = planApply(first.snapshot, next);
  assert.deepEqual(second.result.requires_restart, ["advanced.listen_addr"]);
  assert.ok(!second.result.applied.includes("advanced.listen_addr"));
});
