import assert from "node:assert/strict";
import { usageOf } from "./usage.ts";
import { type FullScanStatus, FullUsageScan } from "./usage-full-scan.ts";

Deno.test("a full scan counts every bucket once; failures are listed, vanished buckets are not", async () => {
  const scanned: string[] = [];
  let release!: () => void;
  const gate = new Promise<void>((resolve) => release = resolve);
  const finished: [FullScanStatus, string | null][] = [];
  let clock = 10;
  const scan = new FullUsageScan({
    bucketNames: () => Promise.resolve(["b", "a", "gone", "broken", "a"]),
    rescan: async (bucket) => {
      await gate;
      scanned.push(bucket);
      if (bucket === "gone") throw Object.assign(new Error("gone"), { code: "NoSuchBucket" });
      if (bucket === "broken") throw new Error("backend down");
      return usageOf({ count: 1, logical: 1, stored: 1 }, clock);
    },
    now: () => clock++,
    onFinish: (status, from) => finished.push([status, from]),
  });
  const first = await scan.start({ user: "ops", ip: "192.0.2.1" });
  assert.equal(first.started, true);
  assert.equal(first.status.running, true);
  assert.equal(first.status.buckets_total, 4, "names deduplicated");
  const second = await scan.start({ user: "other", ip: "192.0.2.2" });
  assert.equal(second.started, false, "joined");
  assert.equal(second.status.started_by, "ops");
  release();
  await scan.done;
  assert.deepEqual(scanned, ["a", "b", "broken", "gone"]);
  const status = scan.status();
  assert.equal(status.running, false);
  assert.equal(status.buckets_done, 4);
  assert.equal(status.buckets_failed, 1);
  assert.deepEqual(status.failures, [{ bucket: "broken", error: "backend down" }]);
  assert.ok(status.finished_at! > status.started_at!);
  assert.equal(finished.length, 1);
  assert.equal(finished[0][1], "192.0.2.1");
  assert.equal((await scan.start({ user: "ops", ip: "192.0.2.1" })).started, true, "again");
  await scan.done;
});
