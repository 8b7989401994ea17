import assert from "node:assert/strict";
import type { ObjectInfo } from "../../storage/mod.ts";
import { isTallyDocument, MAX_CHECKPOINTS, writesSince, WriteTally } from "./fleet-usage-tally.ts";

function object(key: string, size: number, storedSize = size): ObjectInfo {
  return { key, meta: { size }, storedSize } as unknown as ObjectInfo;
}

Deno.test("a tally counts commits, overwrites and removals, negative included", () => {
  let now = 1000;
  const tally = new WriteTally("i1", { now: () => now });
  tally.committed("b", object("k", 10, 4), null);
  tally.committed("b", object("k", 30, 12), object("k", 10, 4));
  tally.removed("b", object("other", 50, 20));
  assert.deepEqual(tally.totals("b"), { count: 0, logical: -20, stored: -8 });
  assert.equal(tally.dirty, true);
  const doc = tally.document();
  assert.equal(tally.dirty, false);
  assert.deepEqual(doc.buckets, { b: [[1000, 0, -20, -8]] });
  assert.ok(isTallyDocument(doc));
  now = 2000;
  // Restarted: it goes on from its last document.
  const resumed = new WriteTally("i1", { now: () => now, previous: doc });
  resumed.committed("b", object("n", 5), null);
  assert.deepEqual(resumed.totals("b"), { count: 1, logical: -15, stored: -3 });
  assert.deepEqual(resumed.document().buckets.b, [[1000, 0, -20, -8], [2000, 1, -15, -3]]);
});

Deno.test("writesSince takes the writes after the last checkpoint at or before `since`", () => {
  let now = 100;
  const tally = new WriteTally("i1", { now: () => now });
  tally.committed("b", object("a", 10), null);
  tally.document(); // [100, 1, 10, 10]
  now = 200;
  tally.committed("b", object("c", 5), null);
  const doc = tally.document(); // [200, 2, 15, 15]
  assert.deepEqual(writesSince([doc], "b", 50), { count: 2, logical: 15, stored: 15 });
  assert.deepEqual(writesSince([doc], "b", 150), { count: 1, logical: 5, stored: 5 });
  assert.deepEqual(writesSince([doc], "b", 250), { count: 0, logical: 0, stored: 0 });
  assert.deepEqual(writesSince([doc, doc], "b", 150), { count: 2, logical: 10, stored: 10 });
  assert.deepEqual(writesSince([doc], "other", 0), { count: 0, logical: 0, stored: 0 });
});

Deno.test("old checkpoints are thinned; damaged documents are not taken", () => {
  let now = 0;
  const tally = new WriteTally("i1", { now: () => now });
  for (let i = 0; i < 3 * MAX_CHECKPOINTS; i++) {
    now += 10;
    tally.committed("b", object(`k${i}`, 1), null);
    tally.document();
  }
  const points = tally.document().buckets.b ?? [];
  const doc = { instance: "i1", started_at: 0, updated_at: now, buckets: { b: points } };
  assert.ok(points.length <= MAX_CHECKPOINTS);
  assert.deepEqual(points.at(-1), [
    now,
    3 * MAX_CHECKPOINTS,
    3 * MAX_CHECKPOINTS,
    3 * MAX_CHECKPOINTS,
  ]);
  assert.ok(isTallyDocument(doc));
  assert.equal(isTallyDocument({ ...doc, buckets: { b: [[1, 2, "x", 4]] } }), false);
  assert.equal(isTallyDocument({ instance: 1 }), false);
  assert.equal(isTallyDocument(null), false);
});
