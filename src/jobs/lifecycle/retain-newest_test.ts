import assert from "node:assert/strict";
import { DAY, withLifecycle } from "../../testing/lifecycle-fixtures.ts";

const retain = (action: Record<string, unknown>, extra: Record<string, unknown> = {}) => ({
  bucket: "b",
  prefix: "builds/",
  action: { type: "retain-newest", ...action },
  ...extra,
});

Deno.test("retain-newest keeps the newest count; ties by key descending", async () => {
  await withLifecycle(async (t) => {
    await t.put("b", "builds/1", 10 * DAY);
    await t.put("b", "builds/2", 5 * DAY);
    await t.put("b", "builds/3a", 2 * DAY);
    await t.put("b", "builds/3b", 2 * DAY); // same created_at as 3a: the greater key is newer
    await t.put("b", "other/x", 90 * DAY);
    const preview = await t.run(retain({ count: 1 }), { dryRun: true });
    assert.deepEqual(preview.candidates.map((c) => [c.key, c.action]), [
      ["builds/3a", "retain-newest"],
      ["builds/2", "retain-newest"],
      ["builds/1", "retain-newest"],
    ]);
    const run = await t.run(retain({ count: 1 }));
    assert.deepEqual(run.candidates, preview.candidates);
    assert.equal(run.objects_scanned, 4);
    assert.equal(run.objects_skipped, 1); // the kept one
    assert.equal(run.objects_ignored, 0);
    assert.equal(run.objects_protected, 0);
    assert.deepEqual(await t.keys("b"), ["builds/3b", "other/x"]);
    assert.deepEqual(t.events.map((e) => e.lifecycle?.action), [
      "retain-newest",
      "retain-newest",
      "retain-newest",
    ]);
  });
});

Deno.test("retain-newest: qualify filters ignore; protect spares without promoting", async () => {
  await withLifecycle(async (t) => {
    await t.put("b", "builds/tiny-old", 50 * DAY, 1); // fails min_size_bytes: ignored
    await t.put("b", "builds/fresh", 0, 100); // fails min_age: ignored
    await t.put("b", "builds/a", 20 * DAY, 100);
    await t.put("b", "builds/b", 10 * DAY, 100);
    await t.put("b", "builds/c", 3 * DAY, 100);
    await t.put("b", "builds/d", 2 * DAY, 100);
    const report = await t.run(retain({
      count: 1,
      qualify: { min_size_bytes: 50, min_age: "1d" },
      protect_younger_than: "7d",
    }));
    assert.equal(report.status, "succeeded");
    // Ranked d, c, b, a: d is kept; c is protected (and d stays the only one kept); b and a go.
    assert.deepEqual(report.candidates.map((c) => c.key), ["builds/b", "builds/a"]);
    assert.equal(report.objects_ignored, 2);
    assert.equal(report.objects_protected, 1);
    assert.equal(report.objects_affected, 2);
    assert.deepEqual(await t.keys("b"), [
      "builds/c",
      "builds/d",
      "builds/fresh",
      "builds/tiny-old",
    ]);
  });
});

Deno.test("retain-newest: more candidates than the cap fail the rule and delete nothing", async () => {
  await withLifecycle(async (t) => {
    for (let i = 0; i < 4; i++) await t.put("b", `builds/${i}`, i * DAY);
    const over = await t.run(retain({ count: 1 }), { retainCap: 3 });
    assert.equal(over.status, "failed");
    assert.match(over.error!, /More than 3 retain-newest candidates/);
    assert.equal((await t.keys("b")).length, 4);
    const at = await t.run(retain({ count: 1 }), { retainCap: 4 });
    assert.equal(at.status, "succeeded");
    assert.deepEqual(await t.keys("b"), ["builds/0"]);
  });
});

Deno.test("retain-newest: expire_after does not apply", async () => {
  await withLifecycle(async (t) => {
    await t.put("b", "builds/x", 2 * DAY);
    await t.put("b", "builds/y", 1 * DAY);
    const report = await t.run(retain({ count: 1 }, { expire_after: "30d" }));
    assert.deepEqual(report.candidates.map((c) => c.key), ["builds/x"]);
  });
});
