import assert from "node:assert/strict";
import type { ListOptions, ListPage, ObjectInfo } from "../../storage/backend.ts";
import { UsageCounter } from "./usage.ts";
import { fakeInfo as info } from "../../testing/object-fixtures.ts";

/** A bucket listing over a mutable key → object map, in pages of `pageSize`. */
function lister(objects: Map<string, ObjectInfo>, pageSize = 2) {
  let calls = 0;
  let beforePage: (() => void) | undefined;
  const list = (_bucket: string, options: ListOptions): Promise<ListPage> => {
    calls++;
    beforePage?.();
    const keys = [...objects.keys()].sort().filter((k) =>
      options.startAfter === undefined || k > options.startAfter
    );
    const page = keys.slice(0, Math.min(pageSize, options.maxKeys));
    const truncated = keys.length > page.length;
    return Promise.resolve({
      objects: page.map((k) => objects.get(k)!),
      commonPrefixes: [],
      isTruncated: truncated,
      ...(truncated ? { nextStartAfter: page[page.length - 1] } : {}),
    });
  };
  return {
    list,
    get calls() {
      return calls;
    },
    onPage(hook: () => void) {
      beforePage = hook;
    },
  };
}

Deno.test("usage is seeded by one scan, then kept inline", async () => {
  const objects = new Map([["a", info("a", 10, 4)], ["b", info("b", 20)], ["c", info("c", 5)]]);
  const backend = lister(objects);
  const counter = new UsageCounter(backend.list, { now: () => 1234 });
  assert.equal(counter.tracks("bkt"), false);
  assert.equal(counter.peek("bkt").never_scanned, true);
  const first = await counter.usage("bkt");
  assert.deepEqual(first, {
    object_count: 3,
    logical_bytes: 35,
    stored_bytes: 29,
    savings_percentage: 17.14,
    last_scan_at: 1234,
    never_scanned: false,
  });
  const calls = backend.calls;
  counter.committed("bkt", info("d", 100), null); // new key
  counter.committed("bkt", info("a", 1), info("a", 10, 4)); // overwrite: new minus replaced
  counter.removed("bkt", info("b", 20));
  const after = await counter.usage("bkt");
  assert.equal(after.object_count, 3);
  assert.equal(after.logical_bytes, 35 - 10 + 1 - 20 + 100);
  assert.equal(after.stored_bytes, 29 - 4 + 1 - 20 + 100);
  assert.equal(backend.calls, calls, "no second scan");
});

Deno.test("changes to untracked buckets are ignored (the scan will count them)", async () => {
  const counter = new UsageCounter(lister(new Map()).list);
  counter.committed("bkt", info("a", 10), null);
  assert.equal((await counter.usage("bkt")).logical_bytes, 0);
});

Deno.test("during the scan, only changes to keys already scanned are applied", async () => {
  const objects = new Map([
    ["a", info("a", 1)],
    ["b", info("b", 1)],
    ["c", info("c", 1)],
    ["d", info("d", 1)],
  ]);
  const backend = lister(objects);
  const counter = new UsageCounter(backend.list);
  let page = 0;
  backend.onPage(() => {
    if (++page !== 2) return;
    // Between the first page (a, b) and the second: "a" grows (already counted at 1 byte, so
    // the difference applies) and "d" grows (not reached: the scan will read the new size).
    objects.set("a", info("a", 10));
    counter.committed("bkt", info("a", 10), info("a", 1));
    objects.set("d", info("d", 10));
    counter.committed("bkt", info("d", 10), info("d", 1));
  });
  const usage = await counter.usage("bkt");
  assert.equal(usage.logical_bytes, 10 + 1 + 1 + 10);
  assert.equal(usage.object_count, 4);
});

Deno.test("concurrent first questions share one scan; a failed scan is retried", async () => {
  const backend = lister(new Map([["a", info("a", 3)]]), 1000);
  const counter = new UsageCounter(backend.list);
  const [x, y] = await Promise.all([counter.usage("bkt"), counter.usage("bkt")]);
  assert.equal(x.logical_bytes, 3);
  assert.equal(y.logical_bytes, 3);
  assert.equal(backend.calls, 1);

  let fail = true;
  const flaky = new UsageCounter((bucket, options) => {
    if (fail) return Promise.reject(new Error("backend down"));
    return backend.list(bucket, options);
  });
  await assert.rejects(flaky.usage("bkt"), /backend down/);
  assert.equal(flaky.tracks("bkt"), false);
  fail = false;
  assert.equal((await flaky.usage("bkt")).logical_bytes, 3);
});

Deno.test("counts never go negative, and forget() rescans", async () => {
  const objects = new Map([["a", info("a", 3)]]);
  const backend = lister(objects);
  const counter = new UsageCounter(backend.list);
  await counter.usage("bkt");
  counter.removed("bkt", info("zz", 100));
  assert.equal((await counter.usage("bkt")).logical_bytes, 0);
  counter.forget("bkt");
  assert.equal((await counter.usage("bkt")).logical_bytes, 3);
});

Deno.test("a rescan keeps the counter in force meanwhile and replaces it when done", async () => {
  const objects = new Map([
    ["a", info("a", 1)],
    ["b", info("b", 1)],
    ["c", info("c", 1)],
    ["d", info("d", 1)],
  ]);
  const backend = lister(objects);
  let clock = 100;
  const counter = new UsageCounter(backend.list, { now: () => clock });
  await counter.usage("bkt");
  // Behind svc's back: "b" disappears; the counter cannot know.
  objects.delete("b");
  assert.equal(counter.peek("bkt").object_count, 4);
  clock = 200;
  let page = 0;
  backend.onPage(() => {
    if (++page !== 2) return;
    // Between the rescan's pages (a, c | d, z): a write the scan has not reached yet.
    assert.equal(counter.scanning("bkt"), true);
    objects.set("z", info("z", 5));
    counter.committed("bkt", info("z", 5), null);
    assert.equal(counter.peek("bkt").object_count, 5, "the live counter took the write");
    assert.equal(counter.peek("bkt").last_scan_at, 100);
  });
  const after = await counter.rescan("bkt");
  assert.equal(after.object_count, 4); // a, c, d, z: z counted once, by the scan
  assert.equal(after.logical_bytes, 8);
  assert.equal(after.last_scan_at, 200);
  assert.equal(counter.scanning("bkt"), false);
});

Deno.test("a failed rescan keeps the counter; a bucket gone is forgotten", async () => {
  const objects = new Map([["a", info("a", 4)]]);
  const backend = lister(objects);
  let failWith: Error | undefined;
  const counter = new UsageCounter((bucket, options) =>
    failWith ? Promise.reject(failWith) : backend.list(bucket, options)
  );
  await counter.usage("bkt");
  failWith = new Error("backend down");
  await assert.rejects(counter.rescan("bkt"), /backend down/);
  assert.equal(counter.peek("bkt").logical_bytes, 4, "the old counter stays in force");
  failWith = Object.assign(new Error("gone"), { code: "NoSuchBucket" });
  await assert.rejects(counter.rescan("bkt"), /gone/);
  assert.equal(counter.tracks("bkt"), false);
});

Deno.test("created buckets count from zero; rows round-trip through load; sink hears changes", async () => {
  const backend = lister(new Map());
  const changed: string[] = [], removed: string[] = [];
  const counter = new UsageCounter(backend.list, { now: () => 42 });
  counter.persistTo({ changed: (b) => changed.push(b), removed: (b) => removed.push(b) });
  counter.created("new");
  counter.committed("new", info("k", 9), null);
  assert.deepEqual(counter.peek("new"), {
    object_count: 1,
    logical_bytes: 9,
    stored_bytes: 9,
    savings_percentage: 0,
    last_scan_at: 42,
    never_scanned: false,
  });
  assert.equal(backend.calls, 0, "no scan for a bucket svc created");
  assert.deepEqual(changed, ["new", "new"]);
  const row = counter.row("new")!;
  assert.deepEqual(row, {
    bucket: "new",
    objectCount: 1,
    logicalBytes: 9,
    storedBytes: 9,
    lastScanAt: 42,
  });
  assert.equal(counter.row("never-counted"), null);

  const restarted = new UsageCounter(backend.list);
  restarted.load([row]);
  assert.deepEqual(await restarted.usage("new"), counter.peek("new"));
  assert.equal(backend.calls, 0, "a loaded counter needs no scan");
  counter.forget("new");
  assert.deepEqual(removed, ["new"]);
  assert.equal(counter.peek("new").never_scanned, true);
});

Deno.test("baselines are stored bytes: counted by the scan and when a write creates one", async () => {
  const delta = (key: string, size: number, stored: number): ObjectInfo => {
    const base = info(key, size, stored);
    return { ...base, meta: { ...base.meta, storage: "delta" } };
  };
  const objects = new Map([
    ["rel/a.zip", delta("rel/a.zip", 1000, 10)],
    ["rel/b.zip", delta("rel/b.zip", 1000, 50)],
    ["top.txt", info("top.txt", 7)],
  ]);
  const heads: string[] = [];
  const counter = new UsageCounter(lister(objects).list, {
    baselineSize: (_bucket, deltaspace) => {
      heads.push(deltaspace);
      return Promise.resolve(deltaspace === "rel/" ? 1016 : null);
    },
  });
  const usage = await counter.usage("bkt");
  assert.deepEqual(heads, ["rel/"], "one HEAD per deltaspace holding deltas");
  assert.equal(usage.stored_bytes, 10 + 50 + 7 + 1016);
  assert.equal(usage.logical_bytes, 2007);

  // A write that created a new deltaspace's baseline adds its bytes.
  const first = { ...delta("new/x.zip", 500, 12), debug: { decision: "reference" as const } };
  counter.committed("bkt", first, null);
  assert.equal(counter.peek("bkt").stored_bytes, 1083 + 12 + 500);
  // With no object left, no baseline is left either: the bytes are exactly zero.
  for (const object of [...objects.values(), first]) counter.removed("bkt", object);
  assert.deepEqual(counter.peek("bkt").stored_bytes, 0);
  assert.deepEqual(counter.peek("bkt").object_count, 0);
});
