/**
 * The storage side of the service, built from one config snapshot: the named backends (each
 * observed), their health, the bucket router over them, the delta store over the router, the
 * multipart store, the object and multipart services, readiness and the sweeper. A config reload
 * that changes the backends (or moves the filesystem directory) builds a new stack before
 * swapping it in, so backends that cannot be opened leave the running stack untouched.
 */
import {
  backendFingerprint,
  backendPlanOf,
  type BackendSpec,
  type Config,
  effectiveMaxTotalMultipartBytes,
  stateDirOf,
} from "../config/mod.ts";
import {
  CompletedUploads,
  MultipartService,
  MultipartStore,
  ObjectService,
  uploadStores,
} from "../objects/mod.ts";
import { getLogger, type Metrics } from "../observability/mod.ts";
import { createReadiness, type Readiness, readinessSettings } from "./readiness.ts";
import {
  BackendHealth,
  bootProbe,
  BucketRouter,
  type ObservedBackend,
  type ProbeMode,
  S3Client,
  s3OptionsFromConfig,
  sseWriteHeaders,
} from "../storage/mod.ts";
import { privateDir, withTimeout } from "../lib/mod.ts";
import { openBackend } from "./open-backend.ts";
import { type DeltaStore, openDeltaStore } from "./delta-store.ts";
import { startSweeper } from "./multipart-sweeper.ts";
import { StartupError } from "./startup-checks.ts";

const log = getLogger("svc::runtime");

export interface StorageStack {
  /** Local state: multipart uploads, spool files. */
  stateDir: string;
  /** What the backends are; a config with another fingerprint needs a new stack. */
  fingerprint: string;
  backends: Map<string, ObservedBackend>;
  router: BucketRouter;
  health: BackendHealth;
  delta: DeltaStore;
  store: MultipartStore;
  objects: ObjectService;
  multipart: MultipartService;
  readiness: Readiness;
  stop(): void;
}

export interface OpenOptions {
  /** Boot probe mode; a reload probes as `warn` (it never refuses for reachability). */
  probe: ProbeMode;
  /** The time objects are stamped with (default `Date.now`; runtime/test-clock.ts). */
  now?: () => number;
}

/** Whether `next` needs a new stack (other backends, or another state directory). */
export function needsRebuild(stack: StorageStack, next: Config): boolean {
  return stack.fingerprint !== backendFingerprint(next) || stack.stateDir !== stateDirOf(next);
}

export async function openStorageStack(
  config: Config,
  current: () => Config,
  metrics: Pick<Metrics, "sweep" | "delta" | "cache" | "encryption">,
  options: OpenOptions,
): Promise<StorageStack> {
  const stateDir = stateDirOf(config);
  const spoolDir = `${stateDir}/.svc/spool`;
  // svc's state directory is its user's alone, one an older svc left 0755 included (whatever the
  // backend: on an S3 backend no filesystem backend opens it).
  await privateDir(`${stateDir}/.svc`);
  const plan = backendPlanOf(config);
  const backends = new Map<string, ObservedBackend>();
  for (const spec of plan.specs) {
    const backendSpool = `${stateDir}/.svc/backend-spool/${spec.name}`;
    const onDecryptFailure = (reason: string) => metrics.encryption.decryptFailures.inc({ reason });
    backends.set(
      spec.name,
      await openBackend(spec, config, backendSpool, onDecryptFailure, current),
    );
  }
  const entries = [...backends].map(([name, backend]) => ({ name, backend }));
  const health = new BackendHealth(entries, config.advanced.s3_connect_timeout_secs * 1000);
  const refusal = await bootProbe(health, options.probe);
  if (refusal) throw new StartupError(refusal);
  const router = new BucketRouter(
    entries.map((entry) => ({ ...entry, available: () => health.available(entry.name) })),
    plan.defaultName,
    () => {
      const { advanced, storage } = current();
      return {
        policies: storage.buckets,
        listTimeoutMs: advanced.backend_list_timeout_secs * 1000,
        listCooldownMs: advanced.backend_list_cooldown_secs * 1000,
        listFreshMs: advanced.backend_list_fresh_secs * 1000,
      };
    },
  );
  const store = await MultipartStore.open(`${stateDir}/.svc/multipart`);
  const completed = await CompletedUploads.open(`${stateDir}/.svc/multipart-completed`);
  // In a fleet (config sync on: instances share one S3 store, whose conditional writes were
  // checked at boot) uploads of S3 buckets live in the backend, for every instance to serve.
  const fleet = config.advanced.config_sync_bucket !== undefined;
  const uploads = uploadStores(
    router,
    store,
    completed,
    fleet ? s3Clients(plan.specs, config) : new Map(),
  );
  const delta = await openDeltaStore(uploads.guarded, spoolDir, current, metrics);
  const objects = new ObjectService(delta.backend, () => ({
    maxObjectSize: current().advanced.max_object_size,
    maxPassthroughObjectSize: current().advanced.max_passthrough_object_size,
  }), options.now);
  const multipart = new MultipartService(objects, uploads.store, () => ({
    maxUploads: current().advanced.max_multipart_uploads,
    idleTtlHours: current().advanced.multipart_idle_ttl_hours,
    maxTotalBytes: effectiveMaxTotalMultipartBytes(current().advanced),
    maxObjectBytes: current().advanced.max_passthrough_object_size,
  }));
  // Readiness follows the default backend: an outage of another backend shows as 503 on its
  // buckets, not as the whole instance leaving the load balancer.
  const readiness = createReadiness({
    backend: backends.get(plan.defaultName)!,
    settings: () => readinessSettings(current().advanced),
  });
  const stopSweeper = await startSweeper(multipart, metrics);
  const stopReprobe = health.startReprobe();
  return {
    stateDir,
    fingerprint: backendFingerprint(config),
    backends,
    router,
    health,
    delta,
    store,
    objects,
    multipart,
    readiness,
    stop() {
      delta.stopConversions().catch(() => {}); // ends after the conversion in progress
      stopSweeper();
      stopReprobe();
    },
  };
}

/** A raw client per S3 backend (backend-resident multipart records use it), with its SSE headers. */
function s3Clients(specs: BackendSpec[], config: Config) {
  const clients = new Map<string, { client: S3Client; writeHeaders: Record<string, string> }>();
  for (const spec of specs) {
    if (spec.type !== "s3") continue;
    const client = new S3Client(s3OptionsFromConfig(spec, config.advanced, "/nonexistent"));
    clients.set(spec.name, { client, writeHeaders: sseWriteHeaders(spec.encryption) });
  }
  return clients;
}

/**
 * Refuses a reload that drops a backend still in use: the default one, or one that holds any
 * bucket (asked with a bounded ListBuckets; an unanswered listing refuses too).
 */
export async function checkRemovedBackends(stack: StorageStack, next: Config): Promise<void> {
  const nextNames = new Set(backendPlanOf(next).specs.map((spec) => spec.name));
  for (const [name, backend] of stack.backends) {
    if (nextNames.has(name)) continue;
    if (name === stack.router.defaultName && nextNames.size > 0 && stack.backends.size > 1) {
      throw new StartupError(`Backend "${name}" is the default backend and cannot be removed`);
    }
    if (stack.backends.size === 1) continue; // replacing the single backend: nothing routes to it
    let buckets: string[];
    try {
      const timeoutMs = next.advanced.backend_list_timeout_secs * 1000;
      buckets = (await withTimeout(backend.listBuckets(), timeoutMs)).map((b) => b.name);
    } catch (err) {
      throw new StartupError(
        `Backend "${name}" cannot be removed: its buckets could not be listed (${
          err instanceof Error ? err.message : String(err)
        })`,
      );
    }
    if (buckets.length > 0) {
      throw new StartupError(
        `Backend "${name}" cannot be removed: it still holds bucket(s) ${
          buckets.slice(0, 5).map((b) => `"${b}"`).join(", ")
        }`,
      );
    }
    log.info(`Backend "${name}" removed`);
  }
}
