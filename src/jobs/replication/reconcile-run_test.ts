import assert from "node:assert/strict";
import { contextOf, ruleOf, withWorld } from "../../testing/replication-fixtures.ts";
import { reconcileRun } from "./reconcile-run.ts";

Deno.test("reconcile: copies a tree with metadata, skips never-replicated keys, then has nothing to do", async () => {
  await withWorld(async (w) => {
    const keys = ["a.txt", "d1/b.txt", "d1/d2/c.txt", "d1/d2/d3/e.txt", "z/y.bin", "tmp/x.txt"];
    for (const key of keys) await w.put("src", key, `body of ${key}`);
    await w.put("src", "marker/", "");
    await w.put("src", "d1/reference.bin", "artifact");
    const rule = ruleOf({
      exclude_globs: ["tmp/**"],
      destination: { bucket: "dst", prefix: "m/" },
    });
    const context = contextOf({});
    const outcome = await reconcileRun(rule, w.env, context);
    assert.deepEqual(outcome, { status: "succeeded" });
    assert.deepEqual(await w.keys("dst"), [
      "m/a.txt",
      "m/d1/b.txt",
      "m/d1/d2/c.txt",
      "m/d1/d2/d3/e.txt",
      "m/z/y.bin",
    ]);
    assert.equal(await w.read("dst", "m/d1/d2/c.txt"), "body of d1/d2/c.txt");
    const copy = await w.objects.head("dst", "m/d1/b.txt");
    assert.equal(copy.meta.contentType, "text/plain");
    assert.deepEqual(copy.meta.userMeta, { origin: "d1/b.txt" });
    assert.equal(context.recorder.counters.objects_affected, 5);
    assert.equal(context.recorder.counters.errors, 0);
    assert.equal(context.state.cursor, null, "a finished walk clears its cursor");

    // Nothing changed: the destination copies are newer, so a second run copies nothing.
    const again = contextOf({});
    await reconcileRun(rule, w.env, again);
    assert.equal(again.recorder.counters.objects_affected, 0);
    assert.equal(again.recorder.counters.objects_skipped, 5);
    assert.equal(w.copied.length, 5);
  });
});

Deno.test("reconcile: replicate_deletes removes a destination key only once the source lacks it", async () => {
  await withWorld(async (w) => {
    await w.put("src", "keep.txt", "k");
    await w.put("dst", "gone.txt", "g");
    await w.put("dst", "sub/gone2.txt", "g");
    const kept = contextOf({});
    await reconcileRun(ruleOf(), w.env, kept);
    assert.deepEqual(await w.keys("dst"), ["gone.txt", "keep.txt", "sub/gone2.txt"]);

    const removed = contextOf({});
    await reconcileRun(ruleOf({ replicate_deletes: true }), w.env, removed);
    assert.deepEqual(await w.keys("dst"), ["keep.txt"]);
    assert.equal(removed.recorder.counters.objects_affected, 2);
  });
});

Deno.test("reconcile: an aborted run resumes from its cursor; nothing is lost, little is redone", async () => {
  await withWorld(async (w) => {
    const keys: string[] = [];
    for (const dir of ["a", "b", "c", "d"]) {
      for (let i = 0; i < 6; i++) keys.push(`${dir}/k${i}`);
    }
    for (const key of keys) await w.put("src", key, key);
    const rule = ruleOf({ batch_size: 3 });
    const state: Record<string, unknown> = {};
    const abort = new AbortController();
    let saves = 0;
    const first = contextOf(state, {
      signal: abort.signal,
      onSave: () => {
        if (++saves === 4) abort.abort(new Error("killed"));
      },
    });
    await assert.rejects(() => reconcileRun(rule, w.env, first), /killed/);
    const cursor = state.cursor as { after: string; scope: string };
    assert.ok(cursor.after > "a/", `cursor ${cursor.after} moved past the first directory`);
    const copiedBefore = w.copied.length;
    assert.ok(copiedBefore < keys.length);

    const second = contextOf(state);
    assert.deepEqual(await reconcileRun(rule, w.env, second), { status: "succeeded" });
    assert.deepEqual(await w.keys("dst"), keys);
    // The resumed run started at the cursor: it saw only keys after it.
    assert.ok(second.recorder.counters.objects_scanned <= keys.length - copiedBefore + 3);
    assert.equal(state.cursor, null);
  });
});

Deno.test("reconcile: a cursor stamped with another scope restarts from the top", async () => {
  await withWorld(async (w) => {
    for (const key of ["a/1", "b/1", "c/1"]) await w.put("src", key, key);
    const state = { cursor: { scope: "another scope", after: "b/" } };
    const context = contextOf(state);
    await reconcileRun(ruleOf(), w.env, context);
    assert.deepEqual(await w.keys("dst"), ["a/1", "b/1", "c/1"]);
  });
});

Deno.test("reconcile: a source deleted mid-run is one failure; the run goes on and succeeds", async () => {
  await withWorld(async (w) => {
    for (const key of ["a", "b", "c"]) await w.put("src", key, key);
    w.hooks.beforeCopy = async (key) => {
      if (key === "b") await w.objects.delete("src", "b");
    };
    const context = contextOf({});
    const outcome = await reconcileRun(ruleOf(), w.env, context);
    assert.equal(outcome.status, "succeeded");
    assert.deepEqual(await w.keys("dst"), ["a", "c"]);
    assert.equal(context.recorder.counters.errors, 1);
    assert.match(context.recorder.failures[0].message, /"b" was deleted during the run/);
  });
});

Deno.test("reconcile: every copy failing fails the run; a failed listing fails it with one row", async () => {
  await withWorld(async (w) => {
    for (const key of ["a", "b"]) await w.put("src", key, key);
    w.hooks.beforeCopy = () => Promise.reject(new Error("destination on fire"));
    const context = contextOf({});
    const outcome = await reconcileRun(ruleOf(), w.env, context);
    assert.equal(outcome.status, "failed");
    assert.equal(context.recorder.counters.errors, 2);

    const listing = contextOf({});
    const failed = await reconcileRun(
      ruleOf({ source: { bucket: "missing", prefix: "" } }),
      w.env,
      listing,
    );
    assert.equal(failed.status, "failed");
    assert.equal(listing.recorder.failures.length, 1);
    assert.match(listing.recorder.failures[0].message, /Listing "missing\/" failed/);
  });
});

Deno.test("reconcile: a destination under a maintenance write gate is skipped as a failure", async () => {
  await withWorld(async (w) => {
    await w.put("src", "a", "a");
    w.gated.add("dst");
    const context = contextOf({});
    const outcome = await reconcileRun(ruleOf(), w.env, context);
    assert.equal(outcome.status, "failed");
    assert.match(outcome.error!, /held by maintenance job maintenance:1/);
    assert.equal(context.recorder.failures.length, 1);
    assert.deepEqual(await w.keys("dst"), []);
  });
});

Deno.test("reconcile: a preview decides everything and changes nothing", async () => {
  await withWorld(async (w) => {
    for (const key of ["a", "b/c"]) await w.put("src", key, key);
    const context = contextOf({}, { dryRun: true });
    await reconcileRun(ruleOf(), w.env, context);
    assert.deepEqual(context.recorder.candidates.map((c) => [c.key, c.action]), [
      ["a", "copy"],
      ["b/c", "copy"],
    ]);
    assert.deepEqual(await w.keys("dst"), []);
  });
});
