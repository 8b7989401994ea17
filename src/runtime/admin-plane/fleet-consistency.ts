/**
 * Read-your-writes for a console behind a round-robin balancer (config sync on): IAM edits made
 * through one instance must be what the next request, on any other instance, starts from. Else a
 * user created through instance A is missing from B's list, and an edit through B (made on B's
 * older state) loses the config sync race against A's and is dropped (db/config-sync.ts).
 *
 * So around every request to the IAM areas of the admin API (users, groups, external login,
 * login-as, migrate, backup), after the session guard: first one sync step (a HEAD of the synced
 * object; a pull only when another instance changed it), then, for a change, the wait until this
 * instance published it. A failed sync is logged and the request goes on with the state here.
 */
import type { MiddlewareHandler } from "hono";
import type { AdminEnv } from "../../admin/mod.ts";
import { getLogger } from "../../observability/mod.ts";

const log = getLogger("svc::config-sync");

/** Admin API paths (under the prefix) whose answers read or change the synced IAM. */
const IAM_AREAS = /^\/(users|groups|ext-auth|login-as|migrate|backup)(\/|$)/;

export interface SyncedState {
  syncNow(): Promise<unknown>;
  /** Resolves once every queued publish or poll has run. */
  settled(): Promise<void>;
}

export function syncAroundIam(
  sync: () => SyncedState | null,
  prefix = "/_/api/admin",
): MiddlewareHandler<AdminEnv> {
  return async (c, next) => {
    const state = sync();
    const path = c.req.path.startsWith(prefix) ? c.req.path.slice(prefix.length) : c.req.path;
    if (state === null || !IAM_AREAS.test(path)) return await next();
    await state.syncNow().catch((err) =>
      log.warn("config sync before an IAM request failed; answering from this instance's state", {
        path,
        error: (err as Error).message,
      })
    );
    await next();
    if (c.req.method !== "GET" && c.req.method !== "HEAD") await state.settled();
  };
}
