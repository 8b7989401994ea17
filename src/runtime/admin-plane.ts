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
import { Hono } from "hono";
import type { AuditFn } from "../admin/admin-deps.ts";
import { adminContext, createAdminApp } from "../admin/admin-app.ts";
import type { AdminEnv } from "../admin/admin-env.ts";
import { renderAdminError } from "../admin/admin-error.ts";
import { BootstrapPassword } from "../admin/bootstrap-password.ts";
import { terminatePasswordWorker } from "../admin/password-hasher.ts";
import { configRoutes } from "../admin/config-routes.ts";
import { LoginLimiter } from "../admin/login-limiter.ts";
import { requireSession, sessionGuard } from "../admin/session-guard.ts";
import { backendRoutes } from "../admin/backend-routes.ts";
import { iamRoutes } from "../admin/iam-routes.ts";
import { IamStore } from "../db/iam-store.ts";
import { IamReconciler } from "../db/iam-reconciler.ts";
import { declarativeIamRoutes } from "../admin/declarative-iam-routes.ts";
import { declarativeIamExport } from "../iam/declarative-export.ts";
import { reconcileAtBoot } from "./config-iam-boot.ts";
import { IamCredentials, IamIndexHolder } from "../iam/index.ts";
import { iamS3Access } from "../iam/s3-access.ts";
import { logRoutes } from "../admin/log-routes.ts";
import { statsRoute } from "../admin/stats-route.ts";
import type { StorageView } from "../admin/storage-admin.ts";
import { usageCounterOf } from "../objects/usage.ts";
import { sessionRoutes, whoamiHandler } from "../admin/session-routes.ts";
import { AdminSessions } from "../admin/sessions.ts";
import { type ConfigDb, openConfigDb } from "../db/config-db.ts";
import { SessionStore } from "../db/session-store.ts";
import { getLogger } from "../observability/log.ts";
import type { CheckReport } from "../observability/readiness.ts";
import { VERSION } from "../version.ts";
import { stateDirOf } from "./backends.ts";
import type { ConfigRuntime } from "./config-runtime.ts";
import type { Services } from "./services.ts";

const log = getLogger("svc::admin");

export interface AdminPlane {
  /** Mounted at `/_/api/admin`. */
  api: Hono<AdminEnv>;
  /** Admin-plane routes outside that prefix: `/_/api/whoami`, `/_/stats` (mounted at `/_`). */
  operator: Hono<AdminEnv>;
  db: ConfigDb;
  /** The IAM index in effect (rebuilt after every IAM change). */
  iam: IamIndexHolder;
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
  const iam = new IamIndexHolder(iamStore);
  await iam.rebuild();
  // Declarative IAM: the file is authoritative from the first request on, and every later
  // config apply reconciles through the runtime's one apply path.
  const reconciler = new IamReconciler(db, { onChange: () => iam.rebuild() });
  await reconcileAtBoot(reconciler, holder.current.access, audit);
  runtime.attachIamReconciler(reconciler);
  services.attachIam({ credentials: new IamCredentials(iam), access: iamS3Access(iam) });
  const sessions = new AdminSessions({
    store: new SessionStore(db),
    passwordHash: () => password.hash,
    settings: () => ({
      ttlHours: holder.current.advanced.session_ttl_hours,
      secureCookies: holder.current.advanced.secure_cookies,
    }),
  });
  const limiter = new LoginLimiter();
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

  const api = createAdminApp({
    trustProxyHeaders,
    guard: sessionGuard({ sessions, audit, trustProxyHeaders }),
    areas: [
      sessionRoutes({ sessions, password, db, limiter, audit }),
      configRoutes({ config: runtime, audit }),
      logRoutes({ logRing: services.logging.logRing, auditRing: services.logging.auditRing }),
      backendRoutes(storageDeps), // with the bucket routes
      iamRoutes({
        store: iamStore,
        config: runtime,
        audit,
        onChange: () => iam.rebuild(),
        indexVersion: () => iam.version,
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
  operator.get("/api/whoami", whoamiHandler({ sessions, version: VERSION }));
  // Storage stats read every bucket's counter: an admin view, so it needs a session.
  operator.use("/stats", requireSession({ sessions, audit }));
  operator.route(
    "/stats",
    statsRoute({
      bucketNames: async () => (await services.storage.router.listBuckets()).map((b) => b.name),
      bucketUsage: (bucket) => usageCounterOf(services.storage.objects).usage(bucket),
    }),
  );

  return {
    api,
    operator,
    db,
    iam,
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
      terminatePasswordWorker();
      await db.close();
    },
  };
}
