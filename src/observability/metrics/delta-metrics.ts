/**
 * Delta compression, its caches and its codec slots.
 *
 * The cache ratios are derived at scrape time from the cache handles: utilization = size/max (0
 * when max is 0), miss rate = misses/(hits+misses) (0 before the first lookup).
 * `svc_codec_semaphore_available` has no sample until a codec supplies `codecSlots` (a 0 would
 * read as "every slot busy"); the HELP and TYPE lines are always there.
 */
import { Counter, Gauge } from "prom-client";
import {
  CODEC_BUCKETS,
  type CounterHandle,
  type GaugeHandle,
  type HistogramHandle,
  type LabelledCounterHandle,
  type MetricRegistry,
  RATIO_BUCKETS,
  SourcedGauge,
} from "./metric-registry.ts";

export type DeltaDecision = "delta" | "passthrough" | "reference";
/** Why (a small fixed set of the delta store's, see DecisionReason in delta/delta-read.ts). */
export type DeltaDecisionReason = string;
type CacheGauge = "sizeBytes" | "entries" | "maxBytes";

export interface DeltaMetrics {
  compressionRatio: HistogramHandle;
  bytesSaved: CounterHandle;
  encodeDuration: HistogramHandle;
  decodeDuration: HistogramHandle;
  decisions: LabelledCounterHandle<{ decision: DeltaDecision; reason: DeltaDecisionReason }>;
  /** Archives stored as they came, waiting for their background conversion. */
  archiveBacklog: GaugeHandle;
  /** Background archive conversions by outcome (converted, kept, superseded, retry). */
  archiveConversions: LabelledCounterHandle<{ outcome: string }>;
  /** Archive streams (zip members) a rebuild copied from its baseline archive. */
  archiveStreamsCopied: CounterHandle;
}

/** The delta caches kept on disk (reference-cache.ts): baseline files and rebuilt objects. */
export type CacheName = "baseline" | "rebuilt";

/** The two cache ratios are derived from these at scrape time. */
export type CacheMetrics =
  & {
    hits: CounterHandle;
    misses: CounterHandle;
    /** Cached files found damaged when read (evicted; never served). */
    corruption: LabelledCounterHandle<{ cache: CacheName }>;
  }
  & Record<
    CacheGauge,
    GaugeHandle
  >;

export function deltaMetrics(
  { counter, gauge, histogram, registers }: MetricRegistry,
  codecSlots: (() => number) | undefined,
): { delta: DeltaMetrics; cache: CacheMetrics } {
  const delta = {
    compressionRatio: histogram("svc_delta_compression_ratio", "Delta/original.", RATIO_BUCKETS),
    bytesSaved: counter("svc_delta_bytes_saved_total", "Bytes saved by delta compression."),
    encodeDuration: histogram("svc_delta_encode_duration_seconds", "Encode time.", CODEC_BUCKETS),
    decodeDuration: histogram("svc_delta_decode_duration_seconds", "Decode time.", CODEC_BUCKETS),
    decisions: counter("svc_delta_decisions_total", "Storage decisions, with why.", [
      "decision",
      "reason",
    ]),
    archiveBacklog: gauge(
      "svc_archive_backlog",
      "Archives stored as they came, waiting for their background conversion.",
    ),
    archiveConversions: counter(
      "svc_archive_conversions_total",
      "Background archive conversions, by outcome.",
      ["outcome"],
    ),
    archiveStreamsCopied: counter(
      "svc_archive_streams_copied_total",
      "Archive members a rebuild copied from its baseline archive instead of re-running the model.",
    ),
  };

  const cache = {
    hits: counter("svc_cache_hits_total", "Cache hits."),
    misses: counter("svc_cache_misses_total", "Cache misses."),
    corruption: counter(
      "svc_cache_corruption_total",
      "Cached files found damaged when read (evicted, never served).",
      ["cache"],
    ),
    sizeBytes: gauge("svc_cache_size_bytes", "Bytes held by the cache."),
    entries: gauge("svc_cache_entries", "Entries held by the cache."),
    maxBytes: gauge("svc_cache_max_bytes", "Cache capacity in bytes."),
  };
  const valueOf = async (metric: Counter | Gauge) => (await metric.get()).values[0]?.value ?? 0;
  new Gauge({
    name: "svc_cache_utilization_ratio",
    help: "Cache size divided by capacity (0.0-1.0).",
    registers,
    async collect() {
      const [size, max] = [await valueOf(cache.sizeBytes), await valueOf(cache.maxBytes)];
      this.set(max > 0 ? Math.min(1, Math.max(0, size / max)) : 0);
    },
  });
  new Gauge({
    name: "svc_cache_miss_rate_ratio",
    help: "Cache misses divided by lookups since startup.",
    registers,
    async collect() {
      const [hits, misses] = [await valueOf(cache.hits), await valueOf(cache.misses)];
      this.set(hits + misses > 0 ? misses / (hits + misses) : 0);
    },
  });

  new SourcedGauge(
    "svc_codec_semaphore_available",
    "Free codec slots (0 = all slots busy).",
    registers,
    codecSlots,
  );
  return { delta, cache };
}
