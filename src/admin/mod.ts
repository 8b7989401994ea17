// The admin room's surface: everything another room may use of it. Generated from what
// the other rooms import (scripts/imports/make-mods.ts); the import check keeps every
// entry into the room going through this file.

export { adminContext, createAdminApp } from "./admin-app.ts";
export type { AdminEnv, AdminPrincipal } from "./admin-env.ts";
export { AdminError, renderAdminError } from "./admin-error.ts";
export { backupRoutes } from "./config/backup-routes.ts";
export { configRoutes } from "./config/config-routes.ts";
export { syncNowRoute } from "./config/sync-now-route.ts";
export { diagnosticsRoutes } from "./diagnostics/diagnostics-routes.ts";
export { declarativeIamRoutes } from "./iam/declarative-iam-routes.ts";
export { extAuthRoutes } from "./iam/ext-auth-routes.ts";
export { iamRoutes } from "./iam/iam-routes.ts";
export { OPENAPI_PATH, openapiRoutes } from "./openapi/openapi-routes.ts";
export { jobsRoutes } from "./ops/jobs-routes.ts";
export { logRoutes } from "./ops/log-routes.ts";
export { outboxRoutes } from "./ops/outbox-routes.ts";
export { statsRoute, usageAggregate } from "./ops/stats-route.ts";
export { usageRoutes } from "./ops/usage-routes.ts";
export { BootstrapPassword } from "./session/bootstrap-password.ts";
export { BrowseCredentials } from "./session/browse-credentials.ts";
export { iamSessionRoutes, sessionEntitlement } from "./session/iam-session-routes.ts";
export { LoginLimiter } from "./session/login-limiter.ts";
export { oauthRoutes } from "./session/oauth-routes.ts";
export { terminatePasswordWorker } from "./session/password-hasher.ts";
export {
  DEFAULT_PUBLIC_ADMIN_PATHS,
  requireSession,
  sessionGuard,
} from "./session/session-guard.ts";
export { sessionRoutes, whoamiHandler } from "./session/session-routes.ts";
export { AdminSessions } from "./session/sessions.ts";
export { backendRoutes } from "./storage/backend-routes.ts";
export { objectIoRoutes } from "./storage/object-io-routes.ts";
export { objectRoutes, sessionBucketCheck } from "./storage/object-routes.ts";
export type { StorageView } from "./storage/storage-admin.ts";
