/** The admin API mounted at `/_/api/admin`: one route file per area, behind the session guard. */
import type { Hono } from "hono";
import {
  type AdminEnv,
  backendRoutes,
  backupRoutes,
  BrowseCredentials,
  configRoutes,
  createAdminApp,
  declarativeIamRoutes,
  DEFAULT_PUBLIC_ADMIN_PATHS,
  diagnosticsRoutes,
  extAuthRoutes,
  iamRoutes,
  iamSessionRoutes,
  jobsRoutes,
  LoginLimiter,
  logRoutes,
  oauthRoutes,
  objectIoRoutes,
  objectRoutes,
  OPENAPI_PATH,
  openapiRoutes,
  outboxRoutes,
  sessionBucketCheck,
  sessionGuard,
  sessionRoutes,
  type StorageView,
  syncNowRoute,
  usageRoutes,
} from "../../admin/mod.ts";
import { OidcClient } from "../../auth/mod.ts";
import { declarativeIamExport } from "../../iam/mod.ts";
import { VERSION } from "../../lib/mod.ts";
import type { AdminPlaneDeps } from "./admin-plane-deps.ts";
import { syncAroundIam, syncRecently } from "./fleet-consistency.ts";

export function adminApi(deps: AdminPlaneDeps): Hono<AdminEnv> {
  const { services, runtime, state, iam, audit, sessions, usage, diagnostics } = deps;
  const { db } = state;
  const config = runtime;
  const index = () => iam.index.current;
  const onChange = iam.changed;
  const limiter = new LoginLimiter();
  // In a fleet the panel's key pair also travels sealed under a key derived from the shared
  // hash, so every instance answers for it (admin/session/browse-credentials.ts).
  const browse = new BrowseCredentials({
    passwordHash: () => iam.sharedBucket === null ? null : state.password.hash,
    secureCookies: () => runtime.current().advanced.secure_cookies,
  });
  const oidc = new OidcClient({
    allowHttp: () => runtime.current().advanced.oidc_allow_http_issuers,
  });
  // The backend and bucket routes see the storage stack in use (a config change may replace it).
  const storage = (): StorageView => {
    const stack = services.storage;
    return {
      router: stack.router,
      backends: stack.backends,
      available: (name: string) => stack.health.available(name),
    };
  };
  const guard = sessionGuard({
    // The API's description is readable without a session (it holds no setting or secret).
    publicPaths: [...DEFAULT_PUBLIC_ADMIN_PATHS, OPENAPI_PATH],
    sessions,
    audit,
    trustProxyHeaders: deps.trustProxyHeaders,
    stillEntitled: deps.stillEntitled,
  });
  // In a fleet, revocations made elsewhere hold here within seconds, IAM requests start from the
  // latest synced state and a change is published before its answer (fleet-consistency.ts).
  const recent = syncRecently(iam.sync);
  const synced = syncAroundIam(iam.sync);
  return createAdminApp({
    trustProxyHeaders: deps.trustProxyHeaders,
    guard: (c, next) =>
      recent(c, async () => void await guard(c, async () => void await synced(c, next))),
    areas: [
      sessionRoutes({
        sessions,
        password: state.password,
        db,
        limiter,
        audit,
        onSessionEnd: (id, https) => {
          browse.delete(id);
          return browse.clearCookie(https);
        },
      }),
      iamSessionRoutes(
        { sessions, limiter, audit, config, store: iam.store, index, onChange },
        browse,
      ),
      objectRoutes({ s3: deps.s3, index, config, audit }),
      objectIoRoutes({ s3: deps.s3, index, config, audit }),
      configRoutes({ config, audit }),
      syncNowRoute({
        sync: iam.sync,
        offReason: () =>
          runtime.current().access.iam_mode === "declarative"
            ? "IAM is declarative here (each instance reconciles its own file)"
            : "set advanced.config_sync_bucket on every instance",
        audit,
      }),
      logRoutes({ logRing: services.logging.logRing, auditRing: services.logging.auditRing }),
      backendRoutes({ config, audit, storage }), // with the bucket routes
      iamRoutes({
        store: iam.store,
        config,
        audit,
        onChange,
        indexVersion: () => iam.index.version,
      }),
      jobsRoutes({
        jobs: deps.jobs,
        audit,
        checkBucket: sessionBucketCheck({ s3: deps.s3, index, config }),
      }),
      outboxRoutes({ store: deps.events.store, audit }),
      backupRoutes({ db, store: iam.store, config, audit, onChange, svcVersion: VERSION }),
      usageRoutes({
        counter: usage.counter,
        bucketExists: async (bucket) => (await services.storage.router.headBucket(bucket)) !== null,
        bucketNames: usage.bucketNames,
        aggregate: usage.aggregate,
        fullScan: usage.fullScan,
        savings: usage.savings,
        audit,
      }),
      diagnosticsRoutes({
        bucketExists: async (bucket) => (await services.storage.router.headBucket(bucket)) !== null,
        bucketNames: diagnostics.bucketNames,
        efficiency: diagnostics.efficiency,
        verify: diagnostics.verify,
        scrubber: () => diagnostics.scrubber,
        bytesPerSec: diagnostics.bytesPerSec,
        audit,
        closing: diagnostics.closing,
      }),
      extAuthRoutes({
        store: deps.extAuth,
        oidc,
        config,
        audit,
        onChange,
        indexVersion: () => iam.index.version,
      }),
      oauthRoutes({
        store: deps.extAuth,
        oidc,
        sessions,
        browse,
        config,
        audit,
        index,
        onChange,
        count: (outcome) => services.metrics.iam.oauthLogins.inc({ outcome }),
        passwordHash: () => state.password.hash,
      }),
      declarativeIamRoutes({
        config,
        audit,
        exportIam: async (includeSecrets) =>
          declarativeIamExport(await iam.reconciler.state(), includeSecrets),
      }),
      openapiRoutes({ version: VERSION }),
    ],
  });
}
