import assert from "node:assert/strict";
import { SvcError } from "../../lib/errors.ts";
import { terminateHashWorkers } from "../../body/body-digest.ts";
import { ObjectService } from "../../objects/object-service.ts";
import { type BucketUsage, UsageCounter } from "../../objects/usage/usage.ts";
import { FilesystemBackend } from "../../storage/fs/filesystem-backend.ts";
import { opsAdminApp, putZeros } from "../../../tests/helpers/ops-admin-app.ts";
import { aggregate, type StatsDeps, statsRoute } from "./stats-route.ts";

/** A real filesystem-backed object service and stats deps over its usage counters. */
async function withObjects(
  test: (objects: ObjectService, deps: StatsDeps, clock: { now: number }) => Promise<void>,
) {
  const dir = await Deno.makeTempDir({ prefix: "svc-stats-" });
  try {
    const objects = new ObjectService(await FilesystemBackend.open(dir), () => ({
      maxObjectSize: 1 << 30,
    }));
    const counter = new UsageCounter((bucket, options) => objects.listObjects(bucket, options));
    objects.observers.add(counter);
    const clock = { now: 1_000_000 };
    const deps: StatsDeps = {
      bucketNames: async () => (await objects.listBuckets()).map((b) => b.name),
      bucketUsage: (bucket) => counter.usage(bucket),
      now: () => clock.now,
    };
    await test(objects, deps, clock);
  } finally {
    terminateHashWorkers();
    await Deno.remove(dir, { recursive: true });
  }
}

function statsApp(deps: StatsDeps) {
  return opsAdminApp((app) => app.route("/_/stats", statsRoute(deps)));
}

Deno.test("/_/stats: totals and per-bucket counters; aggregate cached 10 s", async () => {
  await withObjects(async (objects, deps, clock) => {
    await objects.createBucket("alpha");
    await objects.createBucket("beta");
    await putZeros(objects, "alpha", "a1", 100);
    await putZeros(objects, "alpha", "a2", 50);
    await putZeros(objects, "beta", "b1", 7);
    const app = statsApp(deps);

    const first = await (await app.request("/_/stats")).json();
    assert.equal(first.total_objects, 3);
    assert.equal(first.total_original_size, 157);
    assert.equal(first.total_stored_size, 157);
    assert.equal(first.savings_percentage, 0);
    assert.deepEqual(Object.keys(first.buckets), ["alpha", "beta"]);
    assert.equal(first.buckets.alpha.object_count, 2);
    assert.equal(first.buckets.alpha.logical_bytes, 150);
    assert.equal(first.buckets.beta.never_scanned, false);

    // A write is seen at once by ?bucket= (uncached) but not by the aggregate for 10 s.
    await putZeros(objects, "beta", "b2", 3);
    const beta = await (await app.request("/_/stats?bucket=beta")).json();
    assert.equal(beta.total_objects, 2);
    assert.equal(beta.total_original_size, 10);
    assert.deepEqual(Object.keys(beta.buckets), ["beta"]);
    clock.now += 9_999;
    const cached = await (await app.request("/_/stats")).json();
    assert.equal(cached.total_objects, 3, "served from the cache");
    clock.now += 1;
    const fresh = await (await app.request("/_/stats")).json();
    assert.equal(fresh.total_objects, 4, "recomputed after 10 s");
    assert.equal(fresh.total_original_size, 160);
  });
});

Deno.test("/_/stats: unknown bucket is 404; a failing counter is 503, not a short total", async () => {
  await withObjects(async (objects, deps) => {
    await objects.createBucket("alpha");
    const app = statsApp(deps);
    const missing = await app.request("/_/stats?bucket=nope");
    assert.equal(missing.status, 404);
    const body = await missing.json();
    assert.equal(body.error, "not_found");
    assert.match(body.message, /"nope"/);

    const failing = statsApp({
      ...deps,
      bucketUsage: (bucket) =>
        bucket === "alpha"
          ? Promise.reject(new SvcError("ServiceUnavailable", "backend down"))
          : deps.bucketUsage(bucket),
    });
    const down = await failing.request("/_/stats");
    assert.equal(down.status, 503);
    assert.match((await down.json()).message, /"alpha".*backend down/);
    assert.equal((await failing.request("/_/stats?bucket=alpha")).status, 503);

    // A bucket deleted between the listing and its counter is left out.
    const vanishing = statsApp({
      ...deps,
      bucketNames: async () => [...await deps.bucketNames(), "gone"],
    });
    const stats = await (await vanishing.request("/_/stats")).json();
    assert.deepEqual(Object.keys(stats.buckets), ["alpha"]);
  });
});

Deno.test("/_/stats: concurrent requests share one computation", async () => {
  let listings = 0;
  let release!: () => void;
  const gate = new Promise<void>((resolve) => release = resolve);
  const usage: BucketUsage = {
    object_count: 1,
    logical_bytes: 10,
    stored_bytes: 10,
    savings_percentage: 0,
    last_scan_at: 1,
    never_scanned: false,
  };
  const app = statsApp({
    bucketNames: async () => {
      listings++;
      await gate;
      return ["one"];
    },
    bucketUsage: () => Promise.resolve(usage),
  });
  const answers = [app.request("/_/stats"), app.request("/_/stats"), app.request("/_/stats")];
  release();
  for (const answer of await Promise.all(answers)) {
    assert.equal((await answer.json()).total_objects, 1);
  }
  assert.equal(listings, 1);
});

Deno.test("stats aggregate: savings of the totals, 0 when empty", () => {
  const of = (logical: number, stored: number): BucketUsage => ({
    object_count: 1,
    logical_bytes: logical,
    stored_bytes: stored,
    savings_percentage: 0,
    last_scan_at: null,
    never_scanned: true,
  });
  const stats = aggregate({ a: of(1000, 100), b: of(1000, 900) });
  assert.equal(stats.total_original_size, 2000);
  assert.equal(stats.total_stored_size, 1000);
  assert.equal(stats.savings_percentage, 50);
  assert.equal(aggregate({ a: of(3, 1) }).savings_percentage, 66.67);
  assert.equal(aggregate({}).savings_percentage, 0);
});
