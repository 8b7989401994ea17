/**
 * Starts config sync (db/config-sync.ts) when the coordination bucket is set. In declarative IAM
 * mode it stays off: each instance's YAML is authoritative and reconciled on its own, so
 * publishing or adopting another instance's state would fight the file.
 */
import { type AuditFn, getLogger } from "../../observability/mod.ts";
import { type ConfigDb, ConfigSync, type ConfigSyncDeps } from "../../db/mod.ts";
import type { CoordinationBucket } from "../../jobs/mod.ts";
import type { Config } from "../../config/mod.ts";

const log = getLogger("svc::config-sync");

export async function startConfigSync(
  shared: CoordinationBucket | null,
  config: Config,
  deps: {
    db: ConfigDb;
    stateDir: string;
    onAdopted: () => Promise<unknown>;
    audit: AuditFn;
    count: ConfigSyncDeps["count"];
    bootstrapKeyId?: ConfigSyncDeps["bootstrapKeyId"];
  },
): Promise<ConfigSync | null> {
  if (shared === null) return null;
  if (config.access.iam_mode === "declarative") {
    log.info("config sync of IAM is off in declarative mode: each instance reconciles its YAML", {
      bucket: shared.bucket,
    });
    return null;
  }
  const sync = new ConfigSync({
    ...deps,
    client: shared.client,
    bucket: shared.bucket,
    pollMs: config.advanced.config_sync_poll_secs * 1000,
    workDir: deps.stateDir,
  });
  await sync.start();
  return sync;
}
