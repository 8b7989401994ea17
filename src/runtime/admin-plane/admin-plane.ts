/**
 * The admin plane of a running svc, built over the services, the S3 surface, the config database
 * and IAM (each opened before it, whole): sessions, the event outbox, usage persistence, the jobs
 * room, and the admin API with one route file per area. It also tells the listener when S3 must
 * answer 503 and adds the database to readiness (config-state.ts).
 */
import type { Hono } from "hono";
import type { AuditFn } from "../../observability/mod.ts";
import {
  type AdminEnv,
  AdminSessions,
  sessionEntitlement,
  terminatePasswordWorker,
} from "../../admin/mod.ts";
import { type ConfigDb, ExtAuthStore, SessionStore } from "../../db/mod.ts";
import { type EventOutbox, openEventOutbox } from "../../events/mod.ts";
import type { IamIndexHolder } from "../../iam/mod.ts";
import { SvcError } from "../../lib/mod.ts";
import { type JobsService, OutboxCursor } from "../../jobs/mod.ts";
import type { BucketUsage } from "../../objects/mod.ts";
import type { S3Handler } from "../../s3/mod.ts";
import type { ConfigRuntime } from "../config-runtime.ts";
import type { CheckReport } from "../readiness.ts";
import type { Services } from "../services.ts";
import type { AdminPlaneDeps } from "./admin-plane-deps.ts";
import { adminApi } from "./admin-routes.ts";
import type { ConfigState } from "./config-state.ts";
import type { IamPlane } from "./iam-plane.ts";
import { openJobs } from "./jobs-plane.ts";
import { operatorRoutes } from "./operator-routes.ts";
import { fleetInstanceId, openUsagePlane } from "./usage-plane.ts";
import { openDiagnosticsPlane } from "./diagnostics-plane.ts";

export interface AdminPlane {
  /** The jobs room (maintenance jobs, replication and lifecycle). */
  jobs: JobsService;
  /** Mounted at `/_/api/admin`. */
  api: Hono<AdminEnv>;
  /** Admin-plane routes outside that prefix: `/_/api/whoami`, `/_/stats` (mounted at `/_`). */
  operator: Hono<AdminEnv>;
  db: ConfigDb;
  /** The IAM index in effect (rebuilt after every IAM change). */
  iam: IamIndexHolder;
  /** The event outbox: writer (a write observer), dispatcher, store. */
  events: EventOutbox;
  /** Why S3 must answer 503 now, or null when it may serve. */
  s3Unavailable(): string | null;
  /** The config database's readiness check. */
  readiness(): Promise<CheckReport>;
  /** How quotas judge usage in a fleet (every instance's writes); null alone. */
  quotaUsage: ((bucket: string, local: BucketUsage) => Promise<BucketUsage>) | null;
  close(): Promise<void>;
}

export interface AdminPlaneParts {
  services: Services;
  runtime: ConfigRuntime;
  /** The S3 handler of the S3 surface. */
  s3: S3Handler;
  state: ConfigState;
  iam: IamPlane;
  audit: AuditFn;
  env: Record<string, string | undefined>;
}

/** The event outbox over the config database, recording every write of the object service. */
function openEvents(services: Services, db: ConfigDb): EventOutbox {
  const holder = services.config;
  return openEventOutbox({
    db,
    config: () => holder.current.advanced.event_delivery,
    metrics: services.metrics.events,
    observe: (observer) => services.addWriteObserver(observer),
    // While replication rules exist, rows its event consumer has not read yet are kept.
    pruneFloor: async () => {
      const replication = holder.current.storage.replication;
      if (!replication.enabled || (replication.rules ?? []).length === 0) return undefined;
      return await new OutboxCursor(db).read();
    },
    stillThere: async ({ bucket, key, etag }) => {
      try {
        return (await services.storage.objects.head(bucket, key)).meta.etag === etag;
      } catch (err) {
        if (err instanceof SvcError && (err.code === "NoSuchKey" || err.code === "NoSuchBucket")) {
          return false;
        }
        throw err;
      }
    },
  });
}

export async function openAdminPlane(parts: AdminPlaneParts): Promise<AdminPlane> {
  const { services, runtime, state, iam, audit } = parts;
  const holder = services.config;
  const { db } = state;
  const sessions = new AdminSessions({
    store: new SessionStore(db),
    passwordHash: () => state.password.hash,
    settings: () => ({
      ttlHours: holder.current.advanced.session_ttl_hours,
      secureCookies: holder.current.advanced.secure_cookies,
    }),
    // Logout and password change reach the other instances of a fleet with the synced state.
    onRevoked: () => iam.publish(),
  });
  const events = openEvents(services, db);
  const usage = await openUsagePlane(services, db, audit, iam.sharedBucket);
  const diagnostics = await openDiagnosticsPlane(services, audit, parts.env);
  // Before the listener opens: a re-queued job's write gate is engaged before any S3 write.
  const jobs = await openJobs({
    services,
    runtime,
    db,
    events,
    audit,
    sharedBucket: iam.sharedBucket,
    env: parts.env,
    fleetInstance: iam.sharedBucket === null ? undefined : await fleetInstanceId(db),
  });
  const deps: AdminPlaneDeps = {
    services,
    runtime,
    state,
    iam,
    audit,
    sessions,
    stillEntitled: sessionEntitlement(() => iam.index.current),
    extAuth: new ExtAuthStore(db),
    events,
    usage,
    diagnostics,
    jobs,
    trustProxyHeaders: () => holder.current.advanced.trust_proxy_headers,
    s3: parts.s3,
  };
  return {
    jobs,
    api: adminApi(deps),
    operator: operatorRoutes(deps),
    db,
    iam: iam.index,
    events,
    s3Unavailable: state.s3Unavailable,
    quotaUsage: usage.quotaUsage,
    readiness: state.readiness,
    async close() {
      // Interrupted jobs keep their status and cursor: the next start re-queues them.
      await jobs.stop();
      await diagnostics.close();
      terminatePasswordWorker();
      // Before the database closes: the dispatcher stops, buffered events are committed.
      await events.close();
      // The counters' last changes, so the next start needs no scan.
      await usage.close();
      await iam.close();
      await db.close();
    },
  };
}
