/**
 * The usage area of the admin API (SPEC "Diagnostics, usage, logs"), admin sessions only:
 *
 * - `GET /usage`: every bucket's counter and the totals, the very answer of `GET /_/stats`
 *   (shared, cached 10 s; a bucket svc never counted is scanned once by the first request that
 *   needs it), plus `scan`: the status of the last `POST /usage/scan`.
 * - `GET /usage/bucket/:bucket`: one counter row, O(1): the counter in memory and one HEAD of the
 *   bucket (404 for an unknown bucket); never a listing, so a never-counted bucket answers zeros
 *   with `never_scanned: true`. `scanning` tells whether a scan of it is running.
 * - `POST /usage/scan`: rescans every bucket in the background and answers 202 at once with the
 *   run's status (`started: false` when a run was already going: it is joined, not doubled).
 *   Audited `usage_scan_started`, and `usage_scan_finished` when it ends.
 * - `POST /usage/refresh?bucket=<name>`: rescans one bucket (uncapped) and answers the refreshed
 *   row when done. Audited `usage_refreshed` with the counts before and after.
 * - `GET /deltaspace/savings[?bucket=&limit=]`: delta savings per deltaspace
 *   (objects/deltaspace-savings.ts), computed by a scan and cached 30 s per `bucket` value;
 *   concurrent requests share one scan. `limit` (default 1000, at most 10000) cuts the list, not
 *   the totals.
 *
 * In a fleet (several instances over one backend with a coordination bucket), every counter
 * answered here and by `/_/stats` includes the writes made through the other instances since
 * this instance's last scan of the bucket (runtime/admin-plane/fleet-usage.ts).
 */
import { Hono } from "hono";
import type { Context } from "hono";
import type {
  BucketUsage,
  DeltaspaceSavings,
  FullUsageScan,
  SavingsReport,
  ScanTrigger,
} from "../../objects/mod.ts";
import type { AuditFn } from "../../observability/mod.ts";
import { actorFields, type AdminEnv } from "../admin-env.ts";
import { AdminError } from "../admin-error.ts";
import { isNoSuchBucket, unavailable, type UsageAggregate } from "./stats-route.ts";

export interface UsageRoutesDeps {
  counter: {
    /** The counter as known now, never scanning (in a fleet: with the other instances' writes). */
    peek(bucket: string): BucketUsage | Promise<BucketUsage>;
    scanning(bucket: string): boolean;
    rescan(bucket: string, trigger: ScanTrigger): Promise<BucketUsage>;
  };
  /** Whether the bucket exists (one HEAD). */
  bucketExists(bucket: string): Promise<boolean>;
  bucketNames(): Promise<string[]>;
  /** The all-buckets answer shared with `/_/stats`. */
  aggregate: UsageAggregate;
  fullScan: FullUsageScan;
  /** Scans the buckets for their deltaspace savings. */
  savings(buckets: string[]): Promise<SavingsReport>;
  audit: AuditFn;
  /** How long a savings report is reused; default 30 s. */
  savingsCacheMs?: number;
  now?: () => number;
}

const DEFAULT_LIMIT = 1000;
const MAX_LIMIT = 10_000;

function requireAdmin(c: Context<AdminEnv>): void {
  if (!c.var.principal?.admin) {
    throw new AdminError("forbidden", "Usage routes need an admin session");
  }
}

function limitOf(raw: string | undefined): number {
  if (raw === undefined || raw === "") return DEFAULT_LIMIT;
  if (!/^\d+$/.test(raw) || Number(raw) < 1) {
    throw new AdminError("bad_request", `limit must be a positive integer, got "${raw}"`);
  }
  return Math.min(Number(raw), MAX_LIMIT);
}

function bucketParam(c: Context<AdminEnv>): string {
  const bucket = c.req.query("bucket");
  if (bucket === undefined || bucket === "") {
    throw new AdminError("bad_request", "The bucket query parameter is required");
  }
  return bucket;
}

function notFound(bucket: string): AdminError {
  return new AdminError("not_found", `Bucket "${bucket}" does not exist`);
}

export function usageRoutes(deps: UsageRoutesDeps): Hono<AdminEnv> {
  const now = deps.now ?? Date.now;
  const savingsCacheMs = deps.savingsCacheMs ?? 30_000;
  const savingsCache = new Map<string, { at: number; report: SavingsReport }>();
  const savingsRunning = new Map<string, Promise<SavingsReport>>();

  const exists = async (bucket: string): Promise<boolean> => {
    try {
      return await deps.bucketExists(bucket);
    } catch (err) {
      throw unavailable(bucket, err);
    }
  };

  const savingsFor = (bucket: string | undefined): Promise<SavingsReport> => {
    const key = bucket ?? "";
    const at = now();
    const hit = savingsCache.get(key);
    if (hit && at - hit.at < savingsCacheMs) return Promise.resolve(hit.report);
    let running = savingsRunning.get(key);
    if (running === undefined) {
      running = (async () => {
        if (bucket !== undefined && !(await exists(bucket))) throw notFound(bucket);
        const names = bucket !== undefined ? [bucket] : [...new Set(await deps.bucketNames())];
        const report = await deps.savings(names.sort());
        savingsCache.set(key, { at, report });
        return report;
      })().finally(() => savingsRunning.delete(key));
      savingsRunning.set(key, running);
    }
    return running;
  };

  const app = new Hono<AdminEnv>();
  app.use("/usage/*", async (c, next) => {
    requireAdmin(c);
    await next();
  });
  app.use("/usage", async (c, next) => {
    requireAdmin(c);
    await next();
  });
  app.use("/deltaspace/*", async (c, next) => {
    requireAdmin(c);
    await next();
  });

  app.get("/usage", async (c) => {
    const stats = await deps.aggregate.get();
    return c.json({ ...stats, scan: deps.fullScan.status() });
  });

  app.get("/usage/bucket/:bucket", async (c) => {
    const bucket = c.req.param("bucket");
    if (!(await exists(bucket))) throw notFound(bucket);
    return c.json({
      bucket,
      ...(await deps.counter.peek(bucket)),
      scanning: deps.counter.scanning(bucket),
    });
  });

  app.post("/usage/scan", async (c) => {
    const actor = actorFields(c.var);
    let outcome;
    try {
      outcome = await deps.fullScan.start({ user: String(actor.user), ip: String(actor.ip) });
    } catch (err) {
      const reason = err instanceof Error ? err.message : String(err);
      throw new AdminError("unavailable", `The buckets could not be listed: ${reason}`);
    }
    if (outcome.started) {
      deps.audit("usage_scan_started", { ...actor, buckets: outcome.status.buckets_total });
    }
    return c.json({ started: outcome.started, scan: outcome.status }, 202);
  });

  app.post("/usage/refresh", async (c) => {
    const bucket = bucketParam(c);
    const before = await deps.counter.peek(bucket);
    let after: BucketUsage;
    try {
      after = await deps.counter.rescan(bucket, "refresh");
    } catch (err) {
      if (isNoSuchBucket(err)) throw notFound(bucket);
      throw unavailable(bucket, err);
    }
    deps.aggregate.invalidate();
    deps.audit("usage_refreshed", {
      ...actorFields(c.var),
      bucket,
      objects_before: before.object_count,
      objects_after: after.object_count,
      logical_bytes_before: before.logical_bytes,
      logical_bytes_after: after.logical_bytes,
    });
    return c.json({ bucket, ...after, scanning: false });
  });

  app.get("/deltaspace/savings", async (c) => {
    const bucket = c.req.query("bucket") || undefined;
    const limit = limitOf(c.req.query("limit"));
    let report: SavingsReport;
    try {
      report = await savingsFor(bucket);
    } catch (err) {
      if (err instanceof AdminError) throw err;
      if (isNoSuchBucket(err) && bucket !== undefined) throw notFound(bucket);
      const reason = err instanceof Error ? err.message : String(err);
      throw new AdminError(
        "unavailable",
        `The deltaspace savings could not be computed: ${reason}`,
      );
    }
    const deltaspaces: DeltaspaceSavings[] = report.deltaspaces.slice(0, limit);
    return c.json({
      ...report,
      deltaspaces,
      total_deltaspaces: report.deltaspaces.length,
      truncated: report.deltaspaces.length > limit,
    });
  });

  return app;
}
