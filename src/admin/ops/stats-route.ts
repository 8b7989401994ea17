/**
 * `GET /_/stats[?bucket=<name>]`: storage statistics from the per-bucket usage counters
 * (objects/usage.ts), never from a listing per request. Mounted outside `/_/api/admin`, behind
 * the session guard. Answer:
 *
 *     {total_objects, total_original_size, total_stored_size, savings_percentage,
 *      buckets: {<name>: BucketUsage}}
 *
 * The all-buckets answer is cached for `cacheMs` (10 s) and concurrent requests share one
 * computation; `?bucket=` is computed fresh every time (one O(1) counter, after its first scan).
 * A bucket deleted between the listing and its counter is left out; any other failure of a
 * counter fails the answer (503) rather than show a total missing a bucket. Counters are
 * persisted, so only a bucket svc never counted is scanned (a few buckets at a time) by the first
 * request that needs it. The same cached answer serves `GET /_/api/admin/usage`
 * (usage-routes.ts), so the two never disagree; a scan or refresh invalidates it.
 */
import { Hono } from "hono";
import { SvcError } from "../../lib/mod.ts";
import type { BucketUsage } from "../../objects/mod.ts";
import type { AdminEnv } from "../admin-env.ts";
import { AdminError } from "../admin-error.ts";

export interface StatsDeps {
  /** The bucket names clients see (the router's listing). */
  bucketNames(): Promise<string[]>;
  /** A bucket's usage counter; throws SvcError NoSuchBucket for an unknown bucket. */
  bucketUsage(bucket: string): Promise<BucketUsage>;
  /** How long the all-buckets answer is reused; default 10 s. */
  cacheMs?: number;
  /** Clock, for tests. */
  now?: () => number;
}

export interface StorageStats {
  total_objects: number;
  total_original_size: number;
  total_stored_size: number;
  savings_percentage: number;
  buckets: Record<string, BucketUsage>;
}

const SCAN_CONCURRENCY = 4;

/** The aggregate of some buckets' usage, with the savings of the totals. */
export function aggregate(buckets: Record<string, BucketUsage>): StorageStats {
  let objects = 0, original = 0, stored = 0;
  for (const usage of Object.values(buckets)) {
    objects += usage.object_count;
    original += usage.logical_bytes;
    stored += usage.stored_bytes;
  }
  const savings = original > 0 ? 100 * (1 - stored / original) : 0;
  return {
    total_objects: objects,
    total_original_size: original,
    total_stored_size: stored,
    savings_percentage: Math.round(savings * 100) / 100,
    buckets,
  };
}

export function isNoSuchBucket(err: unknown): boolean {
  return err instanceof SvcError && err.code === "NoSuchBucket";
}

export function unavailable(bucket: string, err: unknown): AdminError {
  const reason = err instanceof Error ? err.message : String(err);
  return new AdminError(
    "unavailable",
    `The usage of bucket "${bucket}" could not be read: ${reason}`,
  );
}

/** The all-buckets usage answer shared by `/_/stats` and `GET /usage`: cached, computed once. */
export interface UsageAggregate {
  /** The cached answer (recomputed after `cacheMs`; concurrent callers share one computation). */
  get(): Promise<StorageStats>;
  /** Drops the cached answer (a scan or refresh just changed the counters). */
  invalidate(): void;
}

export function usageAggregate(deps: StatsDeps): UsageAggregate {
  const cacheMs = deps.cacheMs ?? 10_000;
  const now = deps.now ?? Date.now;
  let cached: { at: number; stats: StorageStats } | undefined;
  let running: Promise<StorageStats> | undefined;
  let generation = 0;

  const computeAll = async (): Promise<StorageStats> => {
    let listed: string[];
    try {
      listed = await deps.bucketNames();
    } catch (err) {
      const reason = err instanceof Error ? err.message : String(err);
      throw new AdminError("unavailable", `The buckets could not be listed: ${reason}`);
    }
    const names = [...new Set(listed)].sort();
    const buckets: Record<string, BucketUsage> = {};
    let next = 0;
    const worker = async () => {
      while (next < names.length) {
        const name = names[next++];
        try {
          buckets[name] = await deps.bucketUsage(name);
        } catch (err) {
          if (!isNoSuchBucket(err)) throw unavailable(name, err);
        }
      }
    };
    await Promise.all(Array.from({ length: Math.min(SCAN_CONCURRENCY, names.length) }, worker));
    const ordered: Record<string, BucketUsage> = {};
    for (const name of names) if (buckets[name]) ordered[name] = buckets[name];
    return aggregate(ordered);
  };

  return {
    get() {
      const at = now();
      if (cached && at - cached.at < cacheMs) return Promise.resolve(cached.stats);
      if (running === undefined) {
        const started = generation;
        running = computeAll()
          .then((stats) => {
            // An invalidation while computing: this answer may predate it, so it is not kept.
            if (started === generation) cached = { at, stats };
            return stats;
          })
          .finally(() => running = undefined);
      }
      return running;
    },
    invalidate() {
      generation++;
      cached = undefined;
    },
  };
}

export function statsRoute(
  deps: StatsDeps & { aggregate?: UsageAggregate },
): Hono<AdminEnv> {
  const all = deps.aggregate ?? usageAggregate(deps);
  const app = new Hono<AdminEnv>();
  app.get("/", async (c) => {
    const bucket = c.req.query("bucket");
    if (bucket === undefined) return c.json(await all.get());
    let usage: BucketUsage;
    try {
      usage = await deps.bucketUsage(bucket);
    } catch (err) {
      if (isNoSuchBucket(err)) {
        throw new AdminError("not_found", `Bucket "${bucket}" does not exist`);
      }
      throw unavailable(bucket, err);
    }
    return c.json(aggregate({ [bucket]: usage }));
  });
  return app;
}
