/**
 * The jobs area of the admin API (SPEC "Admin API", Jobs): the unified rows, runs and failures,
 * the per-kind actions (an action outside the kind's matrix answers 405 listing the supported
 * ones), `POST /jobs/reencrypt`, `POST /buckets/:bucket/migrate` and the bucket gate view
 * `GET /jobs/bucket/:bucket`, which is the only jobs route a browse (non-admin) session may read,
 * and then only for a bucket its user may see (the answer for another is the browse routes' one).
 */
import { Hono } from "hono";
import {
  JOB_ACTIONS,
  type JobAction,
  type JobsService,
  KIND_ACTIONS,
  MAX_REENCRYPT_BUCKETS,
} from "../../jobs/mod.ts";
import type { AuditFn } from "../../observability/mod.ts";
import { actorFields, type AdminEnv } from "../admin-env.ts";
import { AdminError, jsonBody } from "../admin-error.ts";
import type { Context } from "hono";

export interface JobsRoutesDeps {
  jobs: JobsService;
  audit: AuditFn;
  /**
   * Throws (the AdminError the browse routes answer for that bucket: 403 forbidden, 404
   * not_found) unless the session may see `bucket`. Asked only for non-admin (browse) sessions.
   */
  checkBucket: (c: Context<AdminEnv>, bucket: string) => Promise<void>;
}

const DEFAULT_LIMIT = 50;
const MAX_LIMIT = 1000;

function requireAdmin(c: Context<AdminEnv>): { user: string; ip: string } {
  if (!c.var.principal?.admin) {
    throw new AdminError("forbidden", "This jobs route needs an admin session");
  }
  return actorFields(c.var) as { user: string; ip: string };
}

function limitOf(c: Context<AdminEnv>): number {
  const raw = c.req.query("limit");
  if (raw === undefined || raw === "") return DEFAULT_LIMIT;
  if (!/^\d+$/.test(raw) || Number(raw) < 1) {
    throw new AdminError("bad_request", `limit must be a positive integer, got "${raw}"`);
  }
  return Math.min(Number(raw), MAX_LIMIT);
}

export function jobsRoutes(deps: JobsRoutesDeps): Hono<AdminEnv> {
  const { jobs } = deps;
  const app = new Hono<AdminEnv>();

  // Before `/jobs/:id/...`: a bucket named `runs` must not read as a job id.
  app.get("/jobs/bucket/:bucket", async (c) => {
    const bucket = c.req.param("bucket");
    // A browse session sees the jobs of the buckets its user may see, no others.
    if (!c.var.principal?.admin) await deps.checkBucket(c, bucket);
    return c.json(await jobs.bucketStatus(bucket));
  });

  app.get("/jobs", async (c) => {
    requireAdmin(c);
    return c.json({ jobs: await jobs.list() });
  });

  app.post("/jobs/reencrypt", async (c) => {
    const actor = requireAdmin(c);
    const body = await jsonBody(c);
    const buckets = body.buckets;
    if (!Array.isArray(buckets) || buckets.some((b) => typeof b !== "string")) {
      throw new AdminError("bad_request", "buckets must be a list of bucket names");
    }
    if (buckets.length === 0) throw new AdminError("bad_request", "buckets must not be empty");
    if (buckets.length > MAX_REENCRYPT_BUCKETS) {
      throw new AdminError(
        "bad_request",
        `buckets names ${buckets.length} buckets; at most ${MAX_REENCRYPT_BUCKETS} per request`,
      );
    }
    const outcome = await jobs.reencrypt(buckets as string[], actor);
    if (outcome.started.length === 0) {
      throw new AdminError("bad_request", "No re-encrypt job was started", outcome);
    }
    return c.json(outcome, 202);
  });

  app.get("/jobs/:id", async (c) => {
    requireAdmin(c);
    const job = await jobs.job(c.req.param("id"));
    return c.json(await jobs.row(job));
  });

  app.get("/jobs/:id/runs", async (c) => {
    requireAdmin(c);
    const limit = limitOf(c);
    const job = await jobs.job(c.req.param("id"));
    return c.json({ runs: await jobs.runs(job, limit) });
  });

  app.get("/jobs/:id/failures", async (c) => {
    requireAdmin(c);
    const limit = limitOf(c);
    const job = await jobs.job(c.req.param("id"));
    return c.json({ failures: await jobs.failures(job, limit) });
  });

  app.post("/jobs/:id/:action", async (c) => {
    const actor = requireAdmin(c);
    const action = c.req.param("action") as JobAction;
    if (!JOB_ACTIONS.includes(action)) {
      throw new AdminError("not_found", `No job action "${action}"`);
    }
    const job = await jobs.job(c.req.param("id"));
    const supported = KIND_ACTIONS[job.kind];
    if (!supported.includes(action)) {
      throw new AdminError(
        "method_not_allowed",
        `Action "${action}" is not supported by ${job.kind} jobs (supported: ${
          supported.join(", ")
        })`,
        { supported },
      );
    }
    const outcome = await jobs.action(job, action, actor);
    return c.json(outcome.body, outcome.status as 200 | 202);
  });

  app.post("/buckets/:bucket/migrate", async (c) => {
    const actor = requireAdmin(c);
    const body = await jsonBody(c);
    const { target_backend: target, delete_source: deleteSource } = body;
    if (typeof target !== "string" || target === "") {
      throw new AdminError("bad_request", "target_backend must be a string naming a backend");
    }
    if (deleteSource !== undefined && typeof deleteSource !== "boolean") {
      throw new AdminError("bad_request", "delete_source must be true or false");
    }
    const started = await jobs.migrate(c.req.param("bucket"), target, deleteSource ?? false, actor);
    return c.json(started, 202);
  });

  return app;
}
