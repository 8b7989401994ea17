import assert from "node:assert/strict";
import type { CoordinationBucket } from "../../jobs/mod.ts";
import type { BucketUsage } from "../../objects/mod.ts";
import { BackendError, type ObjectInfo } from "../../storage/mod.ts";
import { FleetUsage } from "./fleet-usage.ts";

/** A coordination bucket in memory that counts the requests made to it. */
function memoryBucket() {
  const objects = new Map<string, string>();
  const calls = { list: 0, get: 0, put: 0 };
  const client = {
    send(request: { method: string; key?: string; body?: string; query?: Record<string, string> }) {
      if (request.method === "PUT") {
        calls.put++;
        objects.set(request.key!, request.body!);
        return Promise.resolve({ text: "", headers: new Headers() });
      }
      if (request.key === undefined) {
        calls.list++;
        const keys = [...objects.keys()].filter((key) => key.startsWith(request.query!.prefix));
        const xml = `<ListBucketResult>${
          keys.map((key) => `<Contents><Key>${key}</Key></Contents>`).join("")
        }<IsTruncated>false</IsTruncated></ListBucketResult>`;
        return Promise.resolve({ text: xml });
      }
      calls.get++;
      const text = objects.get(request.key);
      if (text === undefined) {
        return Promise.reject(
          new BackendError(404, "NoSuchKey", "", `GET "${request.key}"`, false),
        );
      }
      return Promise.resolve({ text, headers: new Headers({ etag: `"${text.length}"` }) });
    },
  };
  const shared = { client, bucket: "coord" } as unknown as CoordinationBucket;
  return { shared, calls };
}

function info(size: number): ObjectInfo {
  return { key: "k", storedSize: size, meta: { size } } as unknown as ObjectInfo;
}

function usageOf(logical: number, at: number): BucketUsage {
  return {
    bucket: "b",
    object_count: 0,
    logical_bytes: logical,
    stored_bytes: logical,
    savings_percentage: 0,
    last_scan_at: at,
  } as unknown as BucketUsage;
}

Deno.test("fleet usage: quotas judge the others' published writes without a read per write", async () => {
  let now = 10_000;
  const clock = () => now;
  const { shared, calls } = memoryBucket();
  const options = { publishDelayMs: 60_000, readCacheMs: 2000, quotaStaleMs: 5000, now: clock };
  const a = new FleetUsage(shared, { ...options, instance: "a" });
  const c = new FleetUsage(shared, { ...options, instance: "c" });
  const scanned = usageOf(0, 5000); // c's counter scanned the bucket empty before the writes
  now = 11_000;
  a.committed("b", info(700), null);
  await a.publish();
  // c never read the others: the first quota check reads them once.
  assert.equal((await c.forQuota("b", scanned)).logical_bytes, 700);
  assert.equal(calls.list, 1);
  // Later checks within the stale bound read nothing (one background refresh at most).
  now = 12_000;
  c.committed("b", info(100), null);
  for (let i = 0; i < 20; i++) {
    assert.equal((await c.forQuota("b", scanned)).logical_bytes, 800);
  }
  assert.equal(calls.list, 1);
  // A's next write, published: once the view is readCacheMs old, a check starts a refresh in
  // the background and answers the old view; the next check sees the new one.
  a.committed("b", info(300), null);
  await a.publish();
  now = 13_500;
  assert.equal((await c.forQuota("b", scanned)).logical_bytes, 800);
  await new Promise((resolve) => setTimeout(resolve, 10));
  assert.equal(calls.list, 2);
  assert.equal((await c.forQuota("b", scanned)).logical_bytes, 1100);
  // Idle past the stale bound: the check reads first.
  a.committed("b", info(50), null);
  await a.publish();
  now = 30_000;
  assert.equal((await c.forQuota("b", scanned)).logical_bytes, 1150);
  assert.equal(calls.list, 3);
  // A counter never scanned is left alone (its scan counts everything).
  assert.equal((await c.forQuota("b", usageOf(0, null as unknown as number))).logical_bytes, 0);
  await a.close();
  await c.close();
});
