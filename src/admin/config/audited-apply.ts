/**
 * One admin-API call of the config apply path, shared by the config routes and the declarative
 * IAM routes: the request comes from the admin API as the session's actor, a live change is
 * persisted, and a refused live change is audited (`config_change_refused`) with the error code
 * the caller will see. A dry run that fails is not audited: nothing was attempted.
 */
import type { Context } from "hono";
import { type ApplyOutcome, type ApplyRequest, ConfigError } from "../../config/mod.ts";
import type { AuditFn } from "../../observability/mod.ts";
import { actorFields, type AdminEnv } from "../admin-env.ts";
import { AdminError } from "../admin-error.ts";

export async function auditedApply<R extends ApplyRequest>(
  c: Context<AdminEnv>,
  deps: { config: { apply(request: R): Promise<ApplyOutcome> }; audit: AuditFn },
  request: Omit<R, "source" | "persist" | "actor">,
  what: Record<string, unknown>,
): Promise<ApplyOutcome> {
  const actor = actorFields(c.var) as { user: string; ip: string };
  try {
    return await deps.config.apply(
      { ...request, source: "admin_api", persist: !request.dryRun, actor } as R,
    );
  } catch (err) {
    if (!request.dryRun) {
      const code = err instanceof AdminError
        ? err.code
        : err instanceof ConfigError
        ? "invalid_config"
        : "internal";
      deps.audit("config_change_refused", { ...actor, ...what, error: code }, "warn");
    }
    throw err;
  }
}
