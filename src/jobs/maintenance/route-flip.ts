/**
 * The routing flip of a migration: `storage.buckets.<bucket>.backend` set in the operator's
 * document (the bucket's other settings kept) and applied through the one config path, persisted
 * to the config file, so the bucket stays on its new backend after a restart or a SIGHUP.
 */
import { type ConfigPort, storageOf } from "../../config/mod.ts";

export async function routeBucketVia(
  config: ConfigPort,
  bucket: string,
  backend: string,
): Promise<void> {
  const document = config.document();
  const storage = storageOf(document);
  const buckets = (storage.buckets ?? {}) as Record<string, Record<string, unknown>>;
  storage.buckets = { ...buckets, [bucket]: { ...buckets[bucket], backend } };
  await config.apply({
    document,
    source: "admin_api",
    dryRun: false,
    persist: true,
    actor: { user: "$jobs", ip: "local" },
  });
}
