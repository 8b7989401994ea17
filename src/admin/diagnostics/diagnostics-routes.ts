/**
 * The diagnostics area of the admin API (SPEC "Diagnostics, usage, logs"), admin sessions only;
 * docs/DELTA.md "Diagnostics" explains the numbers.
 *
 * - `GET /diagnostics/delta-efficiency[?bucket=&limit=]`: the cached delta-efficiency report
 *   (per bucket and per deltaspace; a bucket never scanned is scanned first). `limit` (default
 *   100, at most 1000) cuts each bucket's deltaspace list.
 * - `POST /diagnostics/delta-efficiency/scan` `{bucket?}`: rescans and answers the new report.
 *   Audited `delta_efficiency_scanned`.
 * - `POST /diagnostics/delta-efficiency/verify` `{bucket?, limit?, sample?}`: rebuilds up to
 *   `limit` deltas (default 20, at most 1000; `sample: true` picks them at random) and checks
 *   each sha256. Audited `delta_efficiency_verified` (at warn when any failed).
 * - `GET /diagnostics/scan` and `/diagnostics/scan/status[?bucket=]`: the integrity scan's status.
 * - `POST /diagnostics/scan/start` `{bucket?, bytes_per_sec?}`: 202, starts a scan (or reports the
 *   one going, `started: false`). Audited `scrub_started`.
 * - `POST /diagnostics/scan/stop`: ends the running scan. Audited `scrub_stopped`.
 * - `GET /diagnostics/scan/stream[?bucket=&interval_ms=]`: Server-Sent Events, `progress` events
 *   carrying the status while it changes (every `interval_ms`, default 1000, at least 200).
 */
import { Hono } from "hono";
import type { Context } from "hono";
import {
  type BucketEfficiency,
  GRADE_SCALE,
  type Scrubber,
  totalsOf,
  type VerifyReport,
  type VerifyRequest,
} from "../../objects/mod.ts";
import type { AuditFn } from "../../observability/mod.ts";
import { actorFields, type AdminEnv } from "../admin-env.ts";
import { AdminError } from "../admin-error.ts";
import { validBody } from "../valid-body.ts";
import { efficiencyScanBody, scanStartBody, verifyBody } from "./diagnostics-bodies.ts";
import { scrubEventStream, scrubStatus } from "./scrub-status.ts";

export interface DiagnosticsRoutesDeps {
  /** Whether the bucket exists (one HEAD). */
  bucketExists(bucket: string): Promise<boolean>;
  bucketNames(): Promise<string[]>;
  efficiency(buckets: string[], fresh: boolean): Promise<BucketEfficiency[]>;
  verify(request: VerifyRequest): Promise<VerifyReport>;
  scrubber: () => Scrubber;
  /** The default read rate of the scan and the verify (bytes per second). */
  bytesPerSec: () => number;
  audit: AuditFn;
  /** Fires when svc begins to stop: open streams end so the shutdown need not wait for them. */
  closing?: AbortSignal;
}

function requireAdmin(c: Context<AdminEnv>): void {
  if (!c.var.principal?.admin) {
    throw new AdminError("forbidden", "Diagnostics routes need an admin session");
  }
}

function intOf(raw: unknown, name: string, fallback: number, max: number, min = 1): number {
  if (raw === undefined || raw === null || raw === "") return fallback;
  const n = typeof raw === "number" ? raw : /^\d+$/.test(String(raw)) ? Number(raw) : NaN;
  if (!Number.isInteger(n) || n < min) {
    throw new AdminError(
      "bad_request",
      `${name} must be an integer of at least ${min}, got "${raw}"`,
    );
  }
  return Math.min(n, max);
}

function bucketOf(raw: unknown): string | undefined {
  if (raw === undefined || raw === null || raw === "") return undefined;
  if (typeof raw !== "string") throw new AdminError("bad_request", "bucket must be a string");
  return raw;
}

export function diagnosticsRoutes(deps: DiagnosticsRoutesDeps): Hono<AdminEnv> {
  const app = new Hono<AdminEnv>();
  app.use("/diagnostics/*", async (c, next) => {
    requireAdmin(c);
    await next();
  });

  /** The buckets a request names: the one given (404 when it does not exist), else all. */
  const bucketsFor = async (bucket: string | undefined): Promise<string[]> => {
    try {
      if (bucket === undefined) return [...new Set(await deps.bucketNames())].sort();
      if (await deps.bucketExists(bucket)) return [bucket];
    } catch (err) {
      const reason = err instanceof Error ? err.message : String(err);
      throw new AdminError("unavailable", `The buckets could not be listed: ${reason}`);
    }
    throw new AdminError("not_found", `Bucket "${bucket}" does not exist`);
  };

  const report = async (bucket: string | undefined, fresh: boolean, limit: number) => {
    const names = await bucketsFor(bucket);
    let buckets: BucketEfficiency[];
    try {
      buckets = await deps.efficiency(names, fresh);
    } catch (err) {
      const reason = err instanceof Error ? err.message : String(err);
      throw new AdminError("unavailable", `The delta-efficiency report failed: ${reason}`);
    }
    return {
      computed_at: buckets.length > 0 ? Math.min(...buckets.map((b) => b.computed_at)) : null,
      grade_scale: GRADE_SCALE,
      totals: totalsOf(buckets),
      buckets: buckets.map((b) => ({ ...b, deltaspaces: b.deltaspaces.slice(0, limit) })),
    };
  };

  app.get("/diagnostics/delta-efficiency", async (c) => {
    const limit = intOf(c.req.query("limit"), "limit", 100, 1000);
    return c.json(await report(bucketOf(c.req.query("bucket")), false, limit));
  });

  app.post("/diagnostics/delta-efficiency/scan", async (c) => {
    const body = await validBody(c, efficiencyScanBody);
    const bucket = bucketOf(body.bucket);
    const limit = intOf(body.limit, "limit", 100, 1000);
    const answer = await report(bucket, true, limit);
    deps.audit("delta_efficiency_scanned", {
      ...actorFields(c.var),
      bucket: bucket ?? null,
      buckets: answer.buckets.length,
      objects: answer.totals.objects,
      savings_percentage: answer.totals.savings_percentage,
    });
    return c.json(answer);
  });

  app.post("/diagnostics/delta-efficiency/verify", async (c) => {
    const body = await validBody(c, verifyBody);
    const bucket = bucketOf(body.bucket);
    const limit = intOf(body.limit, "limit", 20, 1000);
    const buckets = await bucketsFor(bucket);
    let result: VerifyReport;
    try {
      result = await deps.verify({
        buckets,
        limit,
        sample: body.sample === true,
        bytesPerSec: deps.bytesPerSec(),
      });
    } catch (err) {
      const reason = err instanceof Error ? err.message : String(err);
      throw new AdminError("unavailable", `The deltas could not be verified: ${reason}`);
    }
    deps.audit("delta_efficiency_verified", {
      ...actorFields(c.var),
      bucket: bucket ?? null,
      checked: result.checked,
      failed: result.failed,
    }, result.failed > 0 ? "warn" : undefined);
    return c.json(result);
  });

  const status = (c: Context<AdminEnv>) => {
    const scrubber = deps.scrubber();
    const bucket = bucketOf(c.req.query("bucket"));
    return c.json(scrubStatus(scrubber.state(), scrubber.running, bucket));
  };
  app.get("/diagnostics/scan", status);
  app.get("/diagnostics/scan/status", status);

  app.post("/diagnostics/scan/start", async (c) => {
    const body = await validBody(c, scanStartBody);
    const bucket = bucketOf(body.bucket);
    const bytesPerSec = body.bytes_per_sec === undefined
      ? undefined
      : intOf(body.bytes_per_sec, "bytes_per_sec", 0, Number.MAX_SAFE_INTEGER, 0);
    if (bucket !== undefined) await bucketsFor(bucket);
    const actor = actorFields(c.var);
    const scrubber = deps.scrubber();
    let outcome;
    try {
      outcome = await scrubber.start({ bucket, by: String(actor.user), bytesPerSec });
    } catch (err) {
      const reason = err instanceof Error ? err.message : String(err);
      throw new AdminError("unavailable", `The integrity scan could not start: ${reason}`);
    }
    if (outcome.started) {
      deps.audit("scrub_started", {
        ...actor,
        bucket: bucket ?? null,
        buckets: outcome.state.buckets.length,
        bytes_per_sec: outcome.state.bytes_per_sec,
        run_id: outcome.state.run_id,
      });
    }
    return c.json(
      { started: outcome.started, scan: scrubStatus(outcome.state, scrubber.running) },
      202,
    );
  });

  app.post("/diagnostics/scan/stop", async (c) => {
    const scrubber = deps.scrubber();
    const outcome = await scrubber.stop();
    if (outcome.stopped) {
      deps.audit("scrub_stopped", { ...actorFields(c.var), run_id: outcome.state?.run_id });
    }
    return c.json({ stopped: outcome.stopped, scan: scrubStatus(outcome.state, false) });
  });

  app.get("/diagnostics/scan/stream", (c) => {
    const bucket = bucketOf(c.req.query("bucket"));
    const interval = intOf(c.req.query("interval_ms"), "interval_ms", 1000, 60_000, 200);
    const scrubber = deps.scrubber();
    const body = scrubEventStream(
      () => scrubStatus(scrubber.state(), scrubber.running, bucket, 20),
      interval,
      deps.closing ? AbortSignal.any([c.req.raw.signal, deps.closing]) : c.req.raw.signal,
    );
    return new Response(body, {
      headers: {
        "content-type": "text/event-stream; charset=utf-8",
        "cache-control": "no-cache, no-store",
        "x-accel-buffering": "no",
      },
    });
  });

  return app;
}
