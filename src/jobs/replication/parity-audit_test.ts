import assert from "node:assert/strict";
import { buildConfig } from "../../config/load.ts";
import { parityAudit } from "./parity-audit.ts";
import { contextOf, ruleOf, withWorld } from "../../testing/replication-fixtures.ts";
import { reconcileRun } from "./reconcile-run.ts";

Deno.test("verify: parity after a run; then missing, extra and differing keys are found", async () => {
  await withWorld(async (w) => {
    for (const key of ["a", "b/c", "b/d", "e"]) await w.put("src", key, `body ${key}`);
    const rule = ruleOf({ destination: { bucket: "dst", prefix: "m/" } });
    await reconcileRun(rule, w.env, contextOf({}));
    const clean = await parityAudit(rule, w.env, new AbortController().signal);
    assert.equal(clean.in_parity, true);
    assert.equal(clean.matching, 4);
    assert.deepEqual(clean.source, { bucket: "src", prefix: "", objects: 4, bytes: 28 });

    await w.put("src", "new", "n"); // missing at the destination
    await w.put("dst", "m/stray", "s"); // extra
    await w.put("dst", "m/b/c", "body b/x"); // same size, other content
    const report = await parityAudit(rule, w.env, new AbortController().signal);
    assert.equal(report.in_parity, false);
    assert.deepEqual(report.missing_keys, ["new"]);
    assert.deepEqual(report.extra_keys, ["m/stray"]);
    assert.deepEqual(report.differing_keys, ["b/c"]);
    assert.equal(report.capped, false);
  });
});

Deno.test("verify: beyond parity_max_objects the report is a capped partial result", async () => {
  const config = buildConfig({
    access: { authentication: "none" },
    advanced: { parity_max_objects: 1000 },
  }, { env: {} }).config;
  await withWorld(async (w) => {
    for (let i = 0; i < 1005; i++) await w.put("src", `k${String(i).padStart(4, "0")}`, "x");
    const report = await parityAudit(ruleOf(), w.env, new AbortController().signal);
    assert.equal(report.capped, true);
    assert.equal(report.scanned, 1000);
    assert.equal(report.missing, 1000);
    assert.equal((report.missing_keys as string[]).length, 100);
    assert.equal(report.in_parity, false);
  }, config);
});
