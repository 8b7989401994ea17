/**
 * `POST /_/api/admin/config/sync-now` (SPEC.md, Admin API → Configuration): pulls the synced config
 * database (IAM and session revocations, db/config-sync.ts) from the sync bucket at once instead
 * of at the next poll. Answers `{ok, outcome, bucket}` where `outcome` is `adopted` (the bucket
 * held a newer state, now in force), `unchanged`, or `published` (the bucket held none: this
 * instance's state went there). 409 `conflict` when config sync is off (no
 * `advanced.config_sync_bucket`, or declarative IAM), 502 `bad_gateway` when the pull failed.
 * Audited `config_sync_forced` with the outcome or the failure.
 */
import { Hono } from "hono";
import type { AuditFn } from "../../observability/mod.ts";
import { actorFields, type AdminEnv } from "../admin-env.ts";
import { AdminError } from "../admin-error.ts";

export interface SyncNowDeps {
  /** Config sync, or null when it is off. */
  sync(): { bucket: string; syncNow(): Promise<string> } | null;
  /** Why config sync is off (the 409's message). */
  offReason(): string;
  audit: AuditFn;
}

export function syncNowRoute(deps: SyncNowDeps): Hono<AdminEnv> {
  const app = new Hono<AdminEnv>();
  app.post("/config/sync-now", async (c) => {
    const actor = actorFields(c.var);
    const sync = deps.sync();
    if (sync === null) {
      throw new AdminError("conflict", `Config sync is not configured: ${deps.offReason()}`);
    }
    let outcome: string;
    try {
      outcome = await sync.syncNow();
    } catch (err) {
      const reason = err instanceof Error ? err.message : String(err);
      deps.audit(
        "config_sync_forced",
        { ...actor, bucket: sync.bucket, outcome: "failed", error: reason },
        "warn",
      );
      throw new AdminError(
        "bad_gateway",
        `The config sync bucket "${sync.bucket}" could not be synced: ${reason}`,
      );
    }
    deps.audit("config_sync_forced", { ...actor, bucket: sync.bucket, outcome });
    return c.json({ ok: true, outcome, bucket: sync.bucket });
  });
  return app;
}
