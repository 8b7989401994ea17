/**
 * Puts the delta store over a backend from the config: codec probes (a missing xdelta3 means
 * eligible objects go passthrough, with one warning, never a failed PUT), the codec pool, the
 * reference and metadata caches, the local spool directory, and the metrics the store feeds.
 *
 * The reference cache keeps its baseline files in `baselines/` beside the spool directory (same
 * filesystem, so a download is renamed into place), not inside it: the spool must be empty between
 * requests, cached baselines are meant to stay. Verified rebuilt delta objects live in `rebuilt/`
 * (`rebuilt_cache_size_mb`) for the same reason. All three are emptied at start: nothing in them is
 * needed after a crash, and a half-written file must never be served. They are 0700: their files
 * (0600) hold object bytes. Every cached file is verified when read (reference-cache.ts); damage
 * found counts in `svc_cache_corruption_total{cache}`.
 */
import { dirname, join } from "node:path";
import { privateDir } from "../lib/mod.ts";
import type { Config } from "../config/mod.ts";
import {
  type ArchiveBacklog,
  type BacklogHooks,
  CodecPool,
  DeltaBackend,
  type DeltaObserver,
  type DeltaSettings,
  MetadataCache,
  probeXdelta3,
  probeZstd,
  ReferenceCache,
  Xdelta3Codec,
  ZstdCodec,
} from "../delta/mod.ts";
import { getLogger, type Metrics } from "../observability/mod.ts";
import type { Backend } from "../storage/mod.ts";

const log = getLogger("svc::delta");

export interface DeltaStore {
  backend: DeltaBackend;
  /**
   * Starts the background archive conversions (until then archives convert during their PUT),
   * with what they tell (usage counters: the object service, and so the event outbox, never sees
   * a conversion) and ask (the maintenance gate).
   */
  startConversions(hooks: Pick<BacklogHooks, "converted" | "admit">): Promise<void>;
  /** Stops them after the one in progress (the stack stops). */
  stopConversions(): Promise<void>;
  pool: CodecPool;
  referenceCache: ReferenceCache;
  /** Copies the cache gauges into the metrics (at scrape time). */
  refreshGauges(): void;
}

/** The settings the delta store reads once per operation, from the current snapshot. */
export function deltaSettingsOf(config: Config): DeltaSettings {
  const { advanced, storage } = config;
  return {
    maxDeltaRatio: advanced.max_delta_ratio,
    maxObjectSize: advanced.max_object_size,
    codecTimeoutMs: advanced.codec_timeout_secs * 1000,
    codecSlotWaitMs: advanced.codec_slot_wait_secs * 1000,
    bucketCompression: (bucket) => storage.buckets[bucket]?.compression ?? true,
    bucketMaxDeltaRatio: (bucket) => storage.buckets[bucket]?.max_delta_ratio,
    bucketDeltaspace: (bucket) => storage.buckets[bucket]?.deltaspace,
    bucketDeltaCodec: (bucket) => storage.buckets[bucket]?.delta_codec,
    bucketArchiveDeltas: (bucket) => storage.buckets[bucket]?.archive_deltas,
  };
}

function observerFor(metrics: Pick<Metrics, "delta" | "cache">): DeltaObserver {
  return {
    decision(kind, originalBytes, storedBytes, reason) {
      metrics.delta.decisions.inc({ decision: kind, reason });
      if (kind === "passthrough" || originalBytes === 0) return;
      // A new baseline stores the object in full: its ratio is 1 and nothing is saved.
      const stored = kind === "reference" ? originalBytes : storedBytes;
      metrics.delta.compressionRatio.observe(stored / originalBytes);
      if (originalBytes > stored) metrics.delta.bytesSaved.inc(originalBytes - stored);
    },
    encoded: (seconds) => metrics.delta.encodeDuration.observe(seconds),
    decoded: (seconds) => metrics.delta.decodeDuration.observe(seconds),
    streamsCopied: (count) => metrics.delta.archiveStreamsCopied.inc(count),
    referenceCache: (hit) => (hit ? metrics.cache.hits : metrics.cache.misses).inc(),
  };
}

/**
 * Empties (or creates) a local scratch directory, private to svc: leftovers of a crash are never
 * needed. The chmod is for the umask, which mkdir's mode goes through.
 */
async function freshDir(path: string): Promise<void> {
  await Deno.remove(path, { recursive: true }).catch((err) => {
    if (!(err instanceof Deno.errors.NotFound)) throw err;
  });
  await privateDir(path);
}

export async function openDeltaStore(
  inner: Backend & { identityOf?(bucket: string): string },
  spoolDir: string,
  current: () => Config,
  metrics: Pick<Metrics, "delta" | "cache">,
): Promise<DeltaStore> {
  await freshDir(spoolDir);
  const baselineDir = join(dirname(spoolDir), "baselines");
  await freshDir(baselineDir);
  const rebuiltDir = join(dirname(spoolDir), "rebuilt");
  await freshDir(rebuiltDir);
  const probe = await probeXdelta3();
  if (!probe.available) {
    log.warn(
      `Delta compression is off: ${probe.reason}. Eligible objects are stored passthrough; ` +
        "install xdelta3 (Debian/Ubuntu: apt-get install xdelta3) and restart to enable it",
    );
  } else {
    log.info(`Delta codec xdelta3 ${probe.version}`, { accepts_a: probe.acceptsA });
  }
  // zstd (`--patch-from`, zstd >= 1.4.5) is the second delta codec (`delta_codec`): without it
  // every delta is xdelta3 and zstd deltas already stored answer 500 until it is back.
  const zstd = await probeZstd();
  if (probe.available) {
    if (zstd.available) log.info(`Delta codec zstd ${zstd.version}`);
    else log.warn("No zstd >= 1.4.5 with --patch-from: every delta is written with xdelta3");
  }
  const initial = current().advanced;
  const pool = new CodecPool(initial.codec_concurrency);
  const referenceCache = new ReferenceCache({
    dir: baselineDir,
    maxBytes: initial.cache_size_mb * 1024 * 1024,
    onCorruption: () => metrics.cache.corruption.inc({ cache: "baseline" }),
  });
  const rebuiltCache = new ReferenceCache({
    dir: rebuiltDir,
    maxBytes: initial.rebuilt_cache_size_mb * 1024 * 1024,
    label: "rebuilt object",
    onCorruption: () => metrics.cache.corruption.inc({ cache: "rebuilt" }),
  });
  const backend = new DeltaBackend({
    inner,
    bucketIdentity: inner.identityOf ? (bucket) => inner.identityOf!(bucket) : undefined,
    codec: new Xdelta3Codec({ tempDir: spoolDir, acceptsA: probe.acceptsA }),
    zstd: zstd.available ? new ZstdCodec({ tempDir: spoolDir }) : undefined,
    pool,
    spoolDir,
    referenceCache,
    rebuiltCache,
    metadataCache: new MetadataCache({ megabytes: initial.metadata_cache_mb }),
    observer: observerFor(metrics),
    codecUnavailable: probe.available ? undefined : probe.reason,
    settings: () => {
      const config = current();
      // codec_concurrency applies live: held slots stay valid and drain.
      if (pool.concurrency !== config.advanced.codec_concurrency) {
        pool.concurrency = config.advanced.codec_concurrency;
      }
      return deltaSettingsOf(config);
    },
  });
  let backlog: ArchiveBacklog | undefined;
  return {
    backend,
    async startConversions(hooks) {
      // Not emptied at start: it is the list of conversions still to do (delta/background/).
      backlog = await backend.startBacklog(join(dirname(spoolDir), "archive-backlog"), {
        outcome: (outcome) => metrics.delta.archiveConversions.inc({ outcome }),
        ...hooks,
      });
    },
    async stopConversions() {
      await backlog?.stop();
    },
    pool,
    referenceCache,
    refreshGauges() {
      metrics.delta.archiveBacklog.set(backlog?.size ?? 0);
      const stats = referenceCache.stats();
      metrics.cache.sizeBytes.set(stats.sizeBytes);
      metrics.cache.entries.set(stats.entries);
      metrics.cache.maxBytes.set(stats.maxBytes);
    },
  };
}
