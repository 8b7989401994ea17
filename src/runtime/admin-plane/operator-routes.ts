/**
 * Admin-plane routes outside `/_/api/admin` (mounted at `/_`): `/_/api/whoami`, and `/_/stats`,
 * which reads every bucket's counter and so needs an admin session.
 */
import { Hono } from "hono";
import {
  adminContext,
  type AdminEnv,
  AdminError,
  renderAdminError,
  requireSession,
  statsRoute,
  whoamiHandler,
} from "../../admin/mod.ts";
import { VERSION } from "../../lib/mod.ts";
import type { AdminPlaneDeps } from "./admin-plane-deps.ts";
import { syncRecently } from "./fleet-consistency.ts";

export function operatorRoutes(deps: AdminPlaneDeps): Hono<AdminEnv> {
  const { services, iam, sessions, audit, stillEntitled, usage } = deps;
  const holder = services.config;
  const iamMode = () => {
    if (holder.current.access.authentication?.trim().toLowerCase() === "none") return "open";
    return iam.index.current.userCount > 0 ? "iam" : "bootstrap";
  };
  const operator = new Hono<AdminEnv>();
  operator.onError(renderAdminError);
  operator.use("*", adminContext(deps.trustProxyHeaders));
  // In a fleet, a logout made through another instance holds here within seconds too.
  const recent = syncRecently(iam.sync);
  operator.use("/api/whoami", recent);
  operator.use("/stats", recent);
  operator.get(
    "/api/whoami",
    whoamiHandler({
      sessions,
      version: VERSION,
      mode: iamMode,
      externalProviders: async () =>
        (await deps.extAuth.listProviders()).filter((p) => p.enabled).map((p) => ({
          name: p.name,
          display_name: p.display_name,
        })),
    }),
  );
  operator.use("/stats", requireSession({ sessions, audit, stillEntitled }), async (c, next) => {
    if (!c.var.principal.admin) {
      throw new AdminError("forbidden", "Storage stats need an admin session");
    }
    await next();
  });
  operator.route(
    "/stats",
    statsRoute({
      bucketNames: usage.bucketNames,
      bucketUsage: usage.bucketUsage,
      aggregate: usage.aggregate,
    }),
  );
  return operator;
}
