import assert from "node:assert/strict";
import type { ListOptions, ListPage, ObjectInfo } from "../../storage/backend.ts";
import { fakeInfo } from "../../testing/object-fixtures.ts";
import { scanDeltaspaceSavings } from "./deltaspace-savings.ts";

const delta = (key: string, size: number, stored: number): ObjectInfo => {
  const base = fakeInfo(key, size, stored);
  return { ...base, meta: { ...base.meta, storage: "delta" } };
};

/** Buckets as sorted key lists, listed one object per page (paging is exercised). */
function source(buckets: Record<string, ObjectInfo[]>, baselines: Record<string, number>) {
  const heads: string[] = [];
  return {
    heads,
    list(bucket: string, options: ListOptions): Promise<ListPage> {
      const objects = buckets[bucket].filter((o) =>
        options.startAfter === undefined || o.key > options.startAfter
      );
      const page = objects.slice(0, 1);
      const truncated = objects.length > 1;
      return Promise.resolve({
        objects: page,
        commonPrefixes: [],
        isTruncated: truncated,
        ...(truncated ? { nextStartAfter: page[0].key } : {}),
      });
    },
    baselineSize(bucket: string, deltaspace: string): Promise<number | null> {
      heads.push(`${bucket}/${deltaspace}`);
      return Promise.resolve(baselines[`${bucket}/${deltaspace}`] ?? null);
    },
  };
}

Deno.test("savings are grouped per deltaspace with the shared baseline, best first", async () => {
  const src = source({
    one: [
      delta("a/v1.zip", 1000, 20),
      delta("a/v2.zip", 1000, 30),
      fakeInfo("a/v2.zip.sha256", 64),
      delta("b/only.tar", 500, 10),
      fakeInfo("plain/x.bin", 99),
    ],
    two: [delta("v1.iso", 4000, 100), delta("v2.iso", 4000, 200)],
  }, { "one/a/": 1000, "one/b/": 500, "two/": 4000 });
  const report = await scanDeltaspaceSavings(src, ["one", "two"], { now: () => 7 });
  assert.deepEqual(src.heads.sort(), ["one/a/", "one/b/", "two/"], "one HEAD per deltaspace");
  assert.equal(report.computed_at, 7);
  assert.deepEqual(report.deltaspaces.map((d) => [d.bucket, d.prefix, d.saved_bytes]), [
    ["two", "", 8000 - 4300],
    ["one", "a/", 2000 - 1050],
    ["one", "b/", 500 - 510], // one object and its baseline: costs more than it saves
  ]);
  assert.deepEqual(report.deltaspaces[1], {
    bucket: "one",
    prefix: "a/",
    object_count: 2, // the passthrough sidecar is not part of the delta savings
    logical_bytes: 2000,
    stored_bytes: 1050,
    baseline_bytes: 1000,
    saved_bytes: 950,
    savings_percentage: 47.5,
  });
  assert.deepEqual(report.totals, {
    object_count: 5,
    logical_bytes: 10500,
    stored_bytes: 5860,
    saved_bytes: 4640,
    savings_percentage: 44.19,
  });
});

Deno.test("a bucket without deltas reports nothing and costs no HEAD", async () => {
  const src = source({ flat: [fakeInfo("x", 5), fakeInfo("y/z", 6)] }, {});
  const report = await scanDeltaspaceSavings(src, ["flat"]);
  assert.deepEqual(report.deltaspaces, []);
  assert.equal(report.totals.savings_percentage, 0);
  assert.deepEqual(src.heads, []);
});
