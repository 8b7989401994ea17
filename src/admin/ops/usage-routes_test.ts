import assert from "node:assert/strict";
import { Hono } from "hono";
import { terminateHashWorkers } from "../../body/body-digest.ts";
import {
  type SavingsReport,
  scanDeltaspaceSavings,
} from "../../objects/usage/deltaspace-savings.ts";
import { ObjectService } from "../../objects/object-service.ts";
import { FullUsageScan } from "../../objects/usage/usage-full-scan.ts";
import { UsageCounter } from "../../objects/usage/usage.ts";
import { FilesystemBackend } from "../../storage/fs/filesystem-backend.ts";
import { opsAdminApp, putZeros } from "../../../tests/helpers/ops-admin-app.ts";
import type { AdminEnv } from "../admin-env.ts";
import { renderAdminError } from "../admin-error.ts";
import { usageAggregate } from "./stats-route.ts";
import { usageRoutes, type UsageRoutesDeps } from "./usage-routes.ts";

interface Harness {
  app: Hono<AdminEnv>;
  objects: ObjectService;
  counter: UsageCounter;
  deps: UsageRoutesDeps;
  clock: { now: number };
  listCalls: () => number;
  savingsScans: () => number;
  audited: { event: string; fields: Record<string, unknown> }[];
}

/** The usage routes over a real filesystem-backed object service and a real counter. */
async function withRoutes(test: (h: Harness) => Promise<void>) {
  const dir = await Deno.makeTempDir({ prefix: "svc-usage-routes-" });
  try {
    const objects = new ObjectService(await FilesystemBackend.open(dir), () => ({
      maxObjectSize: 1 << 30,
    }));
    let listCalls = 0, savingsScans = 0;
    const list = (bucket: string, options: Parameters<ObjectService["listObjects"]>[1]) => {
      listCalls++;
      return objects.listObjects(bucket, options);
    };
    const counter = new UsageCounter(list);
    objects.observers.add(counter);
    const clock = { now: 1_000_000 };
    const bucketNames = async () => (await objects.listBuckets()).map((b) => b.name);
    const aggregate = usageAggregate({
      bucketNames,
      bucketUsage: (bucket) => counter.usage(bucket),
      now: () => clock.now,
    });
    const audited: Harness["audited"] = [];
    const deps: UsageRoutesDeps = {
      counter,
      bucketExists: async (bucket) => {
        try {
          await objects.headBucket(bucket);
          return true;
        } catch {
          return false;
        }
      },
      bucketNames,
      aggregate,
      fullScan: new FullUsageScan({
        bucketNames,
        rescan: (bucket, trigger) => counter.rescan(bucket, trigger),
      }),
      savings: (buckets): Promise<SavingsReport> => {
        savingsScans++;
        return scanDeltaspaceSavings({ list }, buckets);
      },
      audit: (event, fields) => audited.push({ event, fields }),
      now: () => clock.now,
    };
    const app = opsAdminApp((a) => a.route("/", usageRoutes(deps)));
    await test({
      app,
      objects,
      counter,
      deps,
      clock,
      listCalls: () => listCalls,
      savingsScans: () => savingsScans,
      audited,
    });
  } finally {
    terminateHashWorkers();
    await Deno.remove(dir, { recursive: true });
  }
}

Deno.test("usage routes: the bucket row never lists; refresh counts and is audited", async () => {
  await withRoutes(async ({ app, objects, listCalls, audited }) => {
    await objects.createBucket("alpha");
    await putZeros(objects, "alpha", "a", 10);
    const never = await (await app.request("/usage/bucket/alpha")).json();
    assert.equal(never.never_scanned, true);
    assert.equal(never.object_count, 0);
    assert.equal(never.scanning, false);
    assert.equal(listCalls(), 0, "a bucket row is O(1), never a listing");

    const refreshed = await app.request("/usage/refresh?bucket=alpha", { method: "POST" });
    assert.equal(refreshed.status, 200);
    const body = await refreshed.json();
    assert.equal(body.bucket, "alpha");
    assert.equal(body.object_count, 1);
    assert.equal(body.never_scanned, false);
    assert.equal(audited.at(-1)?.event, "usage_refreshed");
    assert.equal(audited.at(-1)?.fields.ip, "203.0.113.7");

    // From now on the counter follows writes: still no listing for the row.
    const calls = listCalls();
    await putZeros(objects, "alpha", "b", 5);
    const row = await (await app.request("/usage/bucket/alpha")).json();
    assert.equal(row.logical_bytes, 15);
    assert.equal(listCalls(), calls);

    const missing = await app.request("/usage/bucket/nope");
    assert.equal(missing.status, 404);
    assert.equal((await missing.json()).error, "not_found");
  });
});

Deno.test("usage routes: a second scan request joins the running one", async () => {
  await withRoutes(async ({ app, objects, deps, audited }) => {
    for (const bucket of ["one", "two", "three"]) {
      await objects.createBucket(bucket);
      await putZeros(objects, bucket, "k", 3);
    }
    const first = await app.request("/usage/scan", { method: "POST" });
    assert.equal(first.status, 202);
    const started = await first.json();
    assert.equal(started.started, true);
    assert.equal(started.scan.buckets_total, 3);
    const second = await (await app.request("/usage/scan", { method: "POST" })).json();
    assert.equal(second.started, false, "joined, not doubled");
    await deps.fullScan.done;
    const usage = await (await app.request("/usage")).json();
    assert.equal(usage.scan.running, false);
    assert.equal(usage.scan.buckets_done, 3);
    assert.equal(usage.total_objects, 3);
    assert.equal(usage.buckets.two.never_scanned, false);
    assert.equal(audited.filter((a) => a.event === "usage_scan_started").length, 1);
  });
});

Deno.test("usage routes: deltaspace savings cached 30 s per bucket; limit checked", async () => {
  await withRoutes(async ({ app, objects, clock, savingsScans }) => {
    await objects.createBucket("alpha");
    const first = await (await app.request("/deltaspace/savings")).json();
    assert.deepEqual(first.deltaspaces, []);
    assert.equal(first.truncated, false);
    await Promise.all([app.request("/deltaspace/savings"), app.request("/deltaspace/savings")]);
    assert.equal(savingsScans(), 1, "cached");
    await (await app.request("/deltaspace/savings?bucket=alpha")).json();
    assert.equal(savingsScans(), 2, "each bucket filter has its own entry");
    clock.now += 30_000;
    await (await app.request("/deltaspace/savings")).json();
    assert.equal(savingsScans(), 3, "expired after 30 s");
    assert.equal((await app.request("/deltaspace/savings?limit=0")).status, 400);
    assert.equal((await app.request("/deltaspace/savings?bucket=nope")).status, 404);
  });
});

Deno.test("usage routes: a browse (non-admin) session is refused", async () => {
  await withRoutes(async ({ deps }) => {
    const app = new Hono<AdminEnv>();
    app.onError(renderAdminError);
    app.use("*", async (c, next) => {
      c.set("clientIp", "198.51.100.1");
      c.set("requestId", "r");
      c.set("principal", { user: "reader", admin: false, sessionId: "s" });
      await next();
    });
    app.route("/", usageRoutes(deps));
    for (
      const [method, path] of [
        ["GET", "/usage"],
        ["GET", "/usage/bucket/alpha"],
        ["POST", "/usage/scan"],
        ["POST", "/usage/refresh?bucket=alpha"],
        ["GET", "/deltaspace/savings"],
      ]
    ) {
      const response = await app.request(path, { method });
      assert.equal(response.status, 403, `${method} ${path}`);
      assert.equal((await response.json()).error, "forbidden");
    }
  });
});
