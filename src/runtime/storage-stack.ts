/**
 * The storage side of the service, built from one data directory: the observed filesystem
 * backend, the delta store over it, the multipart store, the object and multipart services,
 * readiness and the sweeper.
 * A config reload that moves the data directory builds a new stack before swapping it in, so a
 * directory that cannot be opened leaves the running one untouched.
 */
import type { Config } from "../config/schema.ts";
import { MultipartService } from "../objects/multipart-service.ts";
import { MultipartStore } from "../objects/multipart-store.ts";
import { ObjectService } from "../objects/object-service.ts";
import type { Metrics } from "../observability/metrics.ts";
import { createReadiness, type Readiness, readinessSettings } from "../observability/readiness.ts";
import { FilesystemBackend } from "../storage/filesystem-backend.ts";
import { ObservedBackend } from "../storage/observed-backend.ts";
import { type DeltaStore, openDeltaStore } from "./delta-store.ts";
import { startSweeper } from "./multipart-sweeper.ts";

export interface StorageStack {
  dataDir: string;
  backend: ObservedBackend;
  delta: DeltaStore;
  store: MultipartStore;
  objects: ObjectService;
  multipart: MultipartService;
  readiness: Readiness;
  stop(): void;
}

/** The filesystem backend's directory in a config. */
export function dataDirOf(config: Config): string {
  return config.storage.backend?.path ?? config.storage.filesystem ?? "./data";
}

export async function openStorageStack(
  dataDir: string,
  current: () => Config,
  metrics: Pick<Metrics, "sweep" | "delta" | "cache">,
): Promise<StorageStack> {
  // Every backend call is observed, so readiness can fall back on a recent success.
  const backend = new ObservedBackend(await FilesystemBackend.open(dataDir));
  const store = await MultipartStore.open(`${dataDir}/.svc/multipart`);
  const delta = await openDeltaStore(backend, `${dataDir}/.svc/spool`, current, metrics);
  const objects = new ObjectService(delta.backend, () => ({
    maxObjectSize: current().advanced.max_object_size,
  }));
  const multipart = new MultipartService(objects, store, () => ({
    maxUploads: current().advanced.max_multipart_uploads,
    idleTtlHours: current().advanced.multipart_idle_ttl_hours,
  }));
  const readiness = createReadiness({
    backend,
    settings: () => readinessSettings(current().advanced),
  });
  const stopSweeper = await startSweeper(multipart, metrics);
  return { dataDir, backend, delta, store, objects, multipart, readiness, stop: stopSweeper };
}
