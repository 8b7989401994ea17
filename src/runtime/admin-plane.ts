/**
 * The admin plane of a running svc, built once over the services container: the encrypted config
 * database (opened under the state directory with a key derived from the bootstrap password
 * hash), sessions, and the admin API with one route file per area. It also tells the listener
 * when S3 must answer 503 (the database was set aside at boot after a bootstrap-hash mismatch,
 * until an operator recovers it) and adds the database to readiness.
 *
 * The database stays where it was opened for the life of the process: moving the data directory
 * by a config change moves objects, not the admin state (it takes effect at the next start).
 */
import { OidcClient } from "../auth/oidc.ts";
import { ExtAuthStore } from "../db/ext-auth-store.ts";
import { extAuthRoutes } from "../admin/iam/ext-auth-routes.ts";
import { oauthRoutes } from "../admin/session/oauth-routes.ts";
import { Hono } from "hono";
import type { AuditFn } from "../observability/audit-ring.ts";
import { adminContext, createAdminApp } from "../admin/admin-app.ts";
import type { AdminEnv } from "../admin/admin-env.ts";
import { AdminError, renderAdminError } from "../admin/admin-error.ts";
import { BootstrapPassword } from "../admin/session/bootstrap-password.ts";
import { terminatePasswordWorker } from "../admin/session/password-hasher.ts";
import { configRoutes } from "../admin/config/config-routes.ts";
import { LoginLimiter } from "../admin/session/login-limiter.ts";
import { requireSession, sessionGuard } from "../admin/session/session-guard.ts";
import { backendRoutes } from "../admin/storage/backend-routes.ts";
import { iamRoutes } from "../admin/iam/iam-routes.ts";
import { objectRoutes } from "../admin/storage/object-routes.ts";
import { objectIoRoutes } from "../admin/storage/object-io-routes.ts";
import {
  BrowseCredentials,
  iamSessionRoutes,
  sessionEntitlement,
} from "../admin/session/iam-session-routes.ts";
import { backupRoutes } from "../admin/config/backup-routes.ts";
import { IamStore } from "../db/iam-store.ts";
import { IamReconciler } from "../db/iam-reconciler.ts";
import { declarativeIamRoutes } from "../admin/iam/declarative-iam-routes.ts";
import { declarativeIamExport } from "../iam/declarative-export.ts";
import { reconcileAtBoot } from "./config-iam-boot.ts";
import { IamCredentials, IamIndexHolder } from "../iam/index.ts";
import { iamS3Access } from "../s3/iam-access.ts";
import { jobsRoutes } from "../admin/ops/jobs-routes.ts";
import { JobsStore } from "../jobs/jobs-store.ts";
import { JobsService } from "../jobs/jobs-service.ts";
import type { MaintenanceSettings } from "../jobs/maintenance/maintenance-deps.ts";
import { routeBucketVia } from "../jobs/maintenance/route-flip.ts";
import { RuleStore } from "../jobs/rules/rule-store.ts";
import { DbLeases } from "../jobs/rules/leases.ts";
import {
  type CoordinationBucket,
  coordinationBucket,
  coordinationLeases,
} from "../jobs/rules/coordination.ts";
import type { ConfigSync } from "../db/config-sync.ts";
import { startConfigSync } from "./config-sync-start.ts";
import { RuleJobs } from "../jobs/rules/rule-jobs.ts";
import type { RuleEnv } from "../jobs/rules/rule-env.ts";
import { OutboxConsumer } from "../jobs/replication/outbox-consumer.ts";
import { OutboxCursor } from "../jobs/replication/outbox-cursor.ts";
import { RulesRoom } from "../jobs/rules/rules-room.ts";
import { replicationDriver } from "../jobs/replication/replication-driver.ts";
import { lifecycleDriver } from "../jobs/lifecycle/lifecycle-driver.ts";
import { logRoutes } from "../admin/ops/log-routes.ts";
import { outboxRoutes } from "../admin/ops/outbox-routes.ts";
import { type EventOutbox, openEventOutbox } from "../events/event-outbox.ts";
import { statsRoute, usageAggregate } from "../admin/ops/stats-route.ts";
import { usageRoutes } from "../admin/ops/usage-routes.ts";
import { UsageStore } from "../db/usage-store.ts";
import { scanDeltaspaceSavings } from "../objects/usage/deltaspace-savings.ts";
import { FullUsageScan } from "../objects/usage/usage-full-scan.ts";
import { UsageFlusher } from "../objects/usage/usage-flusher.ts";
import type { StorageView } from "../admin/storage/storage-admin.ts";
import { sessionRoutes, whoamiHandler } from "../admin/session/session-routes.ts";
import { AdminSessions } from "../admin/session/sessions.ts";
import { type ConfigDb, openConfigDb } from "../db/config-db.ts";
import { SessionStore } from "../db/session-store.ts";
import { getLogger } from "../observability/log.ts";
import type { CheckReport } from "./readiness.ts";
import { VERSION } from "../lib/version.ts";
import { stateDirOf } from "../config/backend-plan.ts";
import { usageScanSource } from "./usage-source.ts";
import type { ConfigRuntime } from "./config-runtime.ts";
import type { Services } from "./services.ts";

const log = getLogger("svc::admin");

export interface AdminPlane {
  /** The jobs room (maintenance jobs now; replication and lifecycle later). */
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
  close(): Promise<void>;
}

export interface AdminPlaneOptions {
  env: Record<string, string | undefined>;
  /** bcrypt cost of hashes svc makes (first run, password change); default 12. */
  bcryptCost?: number;
}

/**
 * Maintenance job pacing from the environment: `SVC_MAINTENANCE_BATCH_SIZE` keys per listing page
 * (default 1000), `SVC_MAINTENANCE_PACE_MS` pause after each object (default 0: as fast as the
 * backends go; set it to bound the load a re-encrypt or migration puts on a busy backend).
 */
export function maintenanceSettings(env: Record<string, string | undefined>): MaintenanceSettings {
  const int = (name: string, fallback: number, min: number) => {
    const raw = env[name];
    const value = Number(raw);
    return raw !== undefined && /^\d+$/.test(raw) && value >= min ? value : fallback;
  };
  return {
    batchSize: Math.min(int("SVC_MAINTENANCE_BATCH_SIZE", 1000, 1), 1000),
    paceMs: int("SVC_MAINTENANCE_PACE_MS", 0, 0),
    attempts: 3,
  };
}

/**
 * Replication and lifecycle: both schedulers over the config database, their runs reaching the
 * storage stack in use. Leases are node-local (the config database) under an id of this process.
 */
function openRulesRoom(
  services: Services,
  runtime: ConfigRuntime,
  db: ConfigDb,
  events: EventOutbox,
  audit: AuditFn,
  sharedBucket: CoordinationBucket | null,
): RulesRoom {
  const store = new RuleStore(db);
  const instance = `${Deno.hostname()}:${Deno.pid}:${crypto.randomUUID().slice(0, 8)}`;
  const leases = new DbLeases(store, instance);
  // Replication leases live in the coordination bucket when one is set (checked now: svc
  // refuses to start when it cannot hold them); lifecycle leases stay node-local.
  const shared = coordinationLeases(sharedBucket, instance);
  const env: RuleEnv = {
    config: () => services.config.current,
    objects: () => services.storage.objects,
    backendKind: async (bucket) => (await services.storage.router.route(bucket)).backend.kind,
    gatedBy: (bucket) => services.maintenanceGate.holder(bucket),
    recordEvent: (event) => events.writer.record(event),
    metrics: services.metrics,
    clock: services.clock,
  };
  const options = {
    store,
    config: () => services.config.current,
    clock: services.clock,
    leases: () => leases,
    audit,
  };
  const replicationOptions = { ...options, leases: () => shared ?? leases };
  const replication = new RuleJobs(replicationDriver(env), replicationOptions);
  const consumer = new OutboxConsumer({
    env,
    outbox: events.store,
    cursor: new OutboxCursor(db),
    rules: () => replication.driver.rules(services.config.current),
    active: (name) => replication.active(name),
    addFailures: (name, failures) => replication.addFailures(name, failures),
    maxFailures: () => replication.settings().maxFailures,
  });
  return new RulesRoom({
    store,
    config: runtime,
    audit,
    kinds: [replication, new RuleJobs(lifecycleDriver(env), options)],
    companions: [consumer],
  });
}

/** The state directory of the admin plane: `<data>/.svc`. */
export function adminStateDir(services: Services): string {
  return `${stateDirOf(services.config.current)}/.svc`;
}

export async function openAdminPlane(
  services: Services,
  runtime: ConfigRuntime,
  options: AdminPlaneOptions,
): Promise<AdminPlane> {
  const holder = services.config;
  const stateDir = adminStateDir(services);
  const password = await BootstrapPassword.resolve({
    env: options.env,
    configHash: holder.current.advanced.bootstrap_password_hash,
    stateDir,
    bcryptCost: options.bcryptCost,
  });
  const db = await openConfigDb({ dir: stateDir, passwordHash: password.hash });
  if (db.state.status === "mismatch") {
    log.error(
      "the config database does not open with the bootstrap password hash in force; it was " +
        "moved aside and S3 answers 503 until an operator logs in and calls POST " +
        "/_/api/admin/recover-db (or svc restarts with the hash that opens it)",
      { aside: db.state.asidePath, hash_source: password.sourceLabel },
    );
  }
  const audit: AuditFn = (event, fields, level) =>
    void services.logging.auditRing.record(event, fields, level);
  // IAM: the index is built before S3 hears of it, so the first request already sees every user.
  const iamStore = new IamStore(db);
  const iamMetrics = services.metrics.iam;
  const iam = new IamIndexHolder(iamStore, (seconds) => {
    iamMetrics.rebuilds.inc();
    iamMetrics.rebuildDuration.observe(seconds);
  });
  await iam.rebuild();
  // Every IAM change rebuilds the index and, with a coordination bucket, is published to the
  // other instances (db/config-sync.ts).
  let sync: ConfigSync | null = null;
  const iamChanged = () => {
    const rebuilt = iam.rebuild();
    void sync?.changed();
    return rebuilt;
  };
  iamMetrics.attach(() => ({ users: iam.current.userCount, version: iam.version }));
  // Declarative IAM: the file is authoritative from the first request on, and every later
  // config apply reconciles through the runtime's one apply path.
  const reconciler = new IamReconciler(db, { onChange: iamChanged });
  await reconcileAtBoot(reconciler, holder.current.access, audit);
  // Checked now: svc refuses to start when the bucket cannot coordinate (conditional writes).
  const sharedBucket = await coordinationBucket(holder.current);
  sync = await startConfigSync(sharedBucket, holder.current, {
    db,
    stateDir,
    onAdopted: () => iam.rebuild(),
    audit,
    count: (outcome) => iamMetrics.syncs.inc({ outcome }),
  });
  runtime.attachIamReconciler(reconciler);
  services.attachIam({
    credentials: new IamCredentials(iam),
    access: iamS3Access(iam, (decision) =>
      iamMetrics.decisions.inc({
        decision: decision.allowed ? "allow" : "deny",
        reason: decision.reason === "bootstrap" ? "allow" : decision.reason,
      })),
  });
  const sessions = new AdminSessions({
    store: new SessionStore(db),
    passwordHash: () => password.hash,
    settings: () => ({
      ttlHours: holder.current.advanced.session_ttl_hours,
      secureCookies: holder.current.advanced.secure_cookies,
    }),
  });
  const limiter = new LoginLimiter();
  const events = openEventOutbox({
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
  });
  // Usage counters: persisted totals first, then every change written in batches.
  const usage = services.usage;
  const usageStore = new UsageStore(db);
  usage.load(await usageStore.loadAll());
  const usageFlusher = new UsageFlusher({
    store: usageStore,
    row: (bucket) => usage.row(bucket),
    onFlush: (outcome) => services.metrics.usage.flushes.inc({ outcome }),
  });
  usage.persistTo(usageFlusher);
  const bucketNames = async () => (await services.storage.router.listBuckets()).map((b) => b.name);
  const stats = usageAggregate({ bucketNames, bucketUsage: (bucket) => usage.usage(bucket) });
  const fullScan = new FullUsageScan({
    bucketNames,
    rescan: (bucket, trigger) => usage.rescan(bucket, trigger),
    onFinish: (status, startedFrom) => {
      stats.invalidate();
      audit("usage_scan_finished", {
        user: status.started_by,
        ip: startedFrom,
        buckets: status.buckets_total,
        failed: status.buckets_failed,
        seconds: ((status.finished_at ?? 0) - (status.started_at ?? 0)) / 1000,
      }, status.buckets_failed > 0 ? "warn" : undefined);
    },
  });
  const usageMetrics = services.metrics.usage;
  const deltaspaceSavings = async (buckets: string[]) => {
    const started = performance.now();
    let outcome: "ok" | "error" = "error";
    try {
      const report = await scanDeltaspaceSavings(usageScanSource(() => services.storage), buckets);
      outcome = "ok";
      return report;
    } finally {
      usageMetrics.scans.inc({ trigger: "savings", outcome });
      usageMetrics.scanDuration.observe((performance.now() - started) / 1000);
    }
  };

  // The backend and bucket routes see the storage stack in use (a config change may replace it).
  const storageDeps = {
    config: runtime,
    audit,
    storage: (): StorageView => {
      const stack = services.storage;
      return {
        router: stack.router,
        backends: stack.backends,
        available: (name: string) => stack.health.available(name),
      };
    },
  };
  const trustProxyHeaders = () => holder.current.advanced.trust_proxy_headers;
  const browse = new BrowseCredentials();
  const extAuth = new ExtAuthStore(db);
  const oidc = new OidcClient();
  const stillEntitled = sessionEntitlement(() => iam.current);
  const iamMode = () => {
    if (holder.current.access.authentication?.trim().toLowerCase() === "none") return "open";
    return iam.current.userCount > 0 ? "iam" : "bootstrap";
  };
  const jobMetrics = services.metrics.jobs;
  const pacing = maintenanceSettings(options.env);
  const rules = openRulesRoom(services, runtime, db, events, audit, sharedBucket);
  const jobs = new JobsService({
    deps: {
      store: new JobsStore(db),
      clock: services.clock,
      gate: services.maintenanceGate,
      route: (bucket) => services.storage.router.route(bucket),
      routedTo: (bucket) => holder.current.storage.buckets[bucket]?.backend,
      backend: (name) => services.storage.backends.get(name),
      routeBucket: (bucket, backend) => routeBucketVia(runtime, bucket, backend),
      settings: () => pacing,
      audit,
      metrics: {
        objects: (type, outcome, n = 1) => jobMetrics.objects.inc({ type, outcome }, n),
        bytes: (type, n) => jobMetrics.bytes.inc({ type }, n),
      },
    },
    gauge: jobMetrics.count,
    rules,
  });
  // Before the listener opens: a re-queued job's write gate is engaged before any S3 write.
  await jobs.start();

  const api = createAdminApp({
    trustProxyHeaders,
    guard: sessionGuard({ sessions, audit, trustProxyHeaders, stillEntitled }),
    areas: [
      sessionRoutes({
        sessions,
        password,
        db,
        limiter,
        audit,
        onSessionEnd: (id) => browse.delete(id),
      }),
      iamSessionRoutes({
        sessions,
        limiter,
        audit,
        config: runtime,
        store: iamStore,
        index: () => iam.current,
        onChange: iamChanged,
      }, browse),
      objectRoutes({ s3: services.s3, index: () => iam.current, config: runtime, audit }),
      objectIoRoutes({ s3: services.s3, index: () => iam.current, config: runtime, audit }),
      configRoutes({ config: runtime, audit }),
      logRoutes({ logRing: services.logging.logRing, auditRing: services.logging.auditRing }),
      backendRoutes(storageDeps), // with the bucket routes
      iamRoutes({
        store: iamStore,
        config: runtime,
        audit,
        onChange: iamChanged,
        indexVersion: () => iam.version,
      }),
      jobsRoutes({ jobs, audit }),
      outboxRoutes({ store: events.store, audit }),
      backupRoutes({
        db,
        store: iamStore,
        config: runtime,
        audit,
        onChange: iamChanged,
        svcVersion: VERSION,
      }),
      usageRoutes({
        counter: usage,
        bucketExists: async (bucket) => (await services.storage.router.headBucket(bucket)) !== null,
        bucketNames,
        aggregate: stats,
        fullScan,
        savings: deltaspaceSavings,
        audit,
      }),
      extAuthRoutes({
        store: extAuth,
        oidc,
        config: runtime,
        audit,
        onChange: iamChanged,
        indexVersion: () => iam.version,
      }),
      oauthRoutes({
        store: extAuth,
        oidc,
        sessions,
        browse,
        config: runtime,
        audit,
        index: () => iam.current,
        onChange: iamChanged,
        count: (outcome) => iamMetrics.oauthLogins.inc({ outcome }),
      }),
      declarativeIamRoutes({
        config: runtime,
        audit,
        exportIam: async (includeSecrets) =>
          declarativeIamExport(await reconciler.state(), includeSecrets),
      }),
    ],
  });

  const operator = new Hono<AdminEnv>();
  operator.onError(renderAdminError);
  operator.use("*", adminContext(trustProxyHeaders));
  operator.get(
    "/api/whoami",
    whoamiHandler({
      sessions,
      version: VERSION,
      mode: iamMode,
      externalProviders: async () =>
        (await extAuth.listProviders()).filter((p) => p.enabled).map((p) => ({
          name: p.name,
          display_name: p.display_name,
        })),
    }),
  );
  // Storage stats read every bucket's counter: an admin view, so it needs a session.
  operator.use("/stats", requireSession({ sessions, audit, stillEntitled }), async (c, next) => {
    if (!c.var.principal.admin) {
      throw new AdminError("forbidden", "Storage stats need an admin session");
    }
    await next();
  });
  operator.route(
    "/stats",
    statsRoute({ bucketNames, bucketUsage: (bucket) => usage.usage(bucket), aggregate: stats }),
  );

  return {
    jobs,
    api,
    operator,
    db,
    iam,
    events,
    s3Unavailable: () =>
      db.state.status === "mismatch"
        ? "The config database is being recovered after a bootstrap password hash change; " +
          "an operator must call POST /_/api/admin/recover-db"
        : null,
    async readiness(): Promise<CheckReport> {
      if (db.state.status === "mismatch") {
        return { status: "error", error: "config database awaiting recovery" };
      }
      try {
        await db.ping();
        return { status: "ok", schema_version: await db.schemaVersion() };
      } catch (err) {
        return { status: "error", error: (err as Error).message };
      }
    },
    async close() {
      // Interrupted jobs keep their status and cursor: the next start re-queues them.
      await jobs.stop();
      terminatePasswordWorker();
      // Before the database closes: the dispatcher stops, buffered events are committed.
      await events.close();
      // The counters' last changes, so the next start needs no scan.
      await usageFlusher.close();
      await sync?.stop();
      await db.close();
    },
  };
}
