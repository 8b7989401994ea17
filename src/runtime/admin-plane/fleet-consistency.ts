/**
 * Read-your-writes for a console behind a round-robin balancer (config sync on). Two middlewares
 * around the session guard of the admin API:
 *
 * - `syncRecently` (before the guard): at most one sync step (a HEAD of the synced object; a pull
 *   only when another instance changed it) per `freshMs` (2 s), waited for at most `boundMs`
 *   (2 s), so a logout or password change made through another instance ends the session here
 *   within seconds instead of at the next `config_sync_poll_secs` poll. Bounded, so neither a slow
 *   coordination bucket nor a flood of anonymous requests turns into one S3 call per request.
 * - `syncAroundIam` (after the guard): IAM edits made through one instance must be what the next
 *   request, on any other instance, starts from. Else a user created through instance A is
 *   missing from B's list, and an edit through B (made on B's older state) loses the config sync
 *   race against A's and is dropped (db/config-sync.ts). So a session's request to the IAM areas
 *   (users, groups, external login, migrate, backup) first runs a sync step (always), and a
 *   change waits until this instance published it before it answers.
 *
 * A failed or slow sync is logged and the request goes on with this instance's state.
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

/** `work`, waited for at most `boundMs`; a failure or the time running out is logged. */
async function bounded(work: Promise<unknown>, boundMs: number, path: string): Promise<void> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<"late">((resolve) => timer = setTimeout(() => resolve("late"), boundMs));
  try {
    const outcome = await Promise.race([work.then(() => "done" as const), late]);
    if (outcome === "late") {
      log.warn("config sync is slow; answering from this instance's state", { path });
    }
  } catch (err) {
    log.warn("config sync failed; answering from this instance's state", {
      path,
      error: (err as Error).message,
    });
  } finally {
    clearTimeout(timer);
  }
}

function relative(path: string, prefix: string): string {
  return path.startsWith(prefix) ? path.slice(prefix.length) : path;
}

export function syncRecently(
  sync: () => SyncedState | null,
  options: { freshMs?: number; boundMs?: number; now?: () => number } = {},
): MiddlewareHandler<AdminEnv> {
  const freshMs = options.freshMs ?? 2000, boundMs = options.boundMs ?? 2000;
  const now = options.now ?? Date.now;
  let last = -Infinity;
  let running: Promise<unknown> | null = null;
  return async (c, next) => {
    const state = sync();
    if (state !== null && (running !== null || now() - last >= freshMs)) {
      if (running === null) {
        last = now();
        running = state.syncNow().finally(() => running = null);
      }
      await bounded(running, boundMs, c.req.path);
    }
    await next();
  };
}

export function syncAroundIam(
  sync: () => SyncedState | null,
  options: { prefix?: string; boundMs?: number } = {},
): MiddlewareHandler<AdminEnv> {
  const prefix = options.prefix ?? "/_/api/admin", boundMs = options.boundMs ?? 5000;
  return async (c, next) => {
    const state = sync();
    const path = relative(c.req.path, prefix);
    // Sessions only: an anonymous request (`/login-as`) must not cost an S3 call each; the
    // bounded `syncRecently` step before the guard covers it.
    if (state === null || !IAM_AREAS.test(path) || !c.var.principal) return await next();
    await bounded(state.syncNow(), boundMs, path);
    await next();
    if (c.req.method !== "GET" && c.req.method !== "HEAD") {
      await bounded(state.settled(), boundMs, path);
    }
  };
}
