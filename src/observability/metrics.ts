/**
 * The Prometheus metrics of `GET /_/metrics` (SPEC "Metrics"), on a registry of svc's own (never
 * prom-client's global one). Every metric of the table is registered from startup, so dashboards
 * find each name even before the component that feeds it exists; components get typed handles.
 * Each family lives in metrics/ with its decisions; this file composes them.
 *
 * Three families read components at scrape time (auth counters, codec slots, the IAM index):
 * those components are built after the registry (they feed it), so they are given as getters.
 */
import { adminRequestMetrics, type AdminRequestSample } from "./metrics/admin-request-metrics.ts";
import { type AuthCounts, authMetrics } from "./metrics/auth-metrics.ts";
import { type DiagnosticsMetrics, diagnosticsMetrics } from "./metrics/diagnostics-metrics.ts";
import { type CacheMetrics, type DeltaMetrics, deltaMetrics } from "./metrics/delta-metrics.ts";
import { httpMetrics, type RequestSample } from "./metrics/http-metrics.ts";
import { type IamIndexStats, type IamMetrics, iamMetrics } from "./metrics/iam-metrics.ts";
import {
  type JobMetrics,
  jobMetrics,
  type LifecycleMetrics,
  lifecycleMetrics,
  type ReplicationMetrics,
  replicationMetrics,
  writeGateMetrics,
  type WriteGateStats,
} from "./metrics/job-metrics.ts";
import { metricRegistry } from "./metrics/metric-registry.ts";
import { type OutboxMetrics, outboxMetrics } from "./metrics/outbox-metrics.ts";
import { processMetrics } from "./metrics/process-metrics.ts";
import {
  type EncryptionMetrics,
  encryptionMetrics,
  type MultipartMetrics,
  multipartMetrics,
  type SweepMetrics,
} from "./metrics/storage-metrics.ts";
import { type UsageMetrics, usageMetrics } from "./metrics/usage-metrics.ts";

// What the rooms above import from here: the handles and the sample shapes.
export type {
  CounterHandle,
  GaugeHandle,
  HistogramHandle,
  LabelledCounterHandle,
  LabelledHistogramHandle,
} from "./metrics/metric-registry.ts";
export type { RequestOperation, RequestSample } from "./metrics/http-metrics.ts";
export type { ConfigSyncOutcome, IamDecisionReason } from "./metrics/iam-metrics.ts";
export type { AuthCounts } from "./metrics/auth-metrics.ts";
export { operatorOperation } from "./metrics/http-metrics.ts";
export { requestBytesOf, responseBytesOf } from "./metrics/body-sizes.ts";

export interface MetricsOptions {
  version: string;
  /** `filesystem` or `s3`. */
  backendType: string;
  authStats: () => AuthCounts;
  /** Free codec slots right now; without it the codec gauge has no sample. */
  codecSlots?: () => number;
  /** The IAM index in effect; null (or absent) while there is none: the IAM gauges read 0. */
  iamIndex?: () => IamIndexStats | null;
  /** The write gate's buckets; null (or absent) while there is none. */
  writeGate?: () => WriteGateStats | null;
}

export interface Metrics {
  /** Counts one finished request; false when it was outside the bounded label sets. */
  observeRequest(sample: RequestSample): boolean;
  /** Counts one finished admin-plane request (`/_/api/…`, `/_/stats`) by area and status. */
  observeAdminRequest(sample: AdminRequestSample): void;
  /** The exposition for `GET /_/metrics` (text format 0.0.4). */
  render(): Promise<{ body: string; contentType: string }>;
  delta: DeltaMetrics;
  cache: CacheMetrics;
  multipart: MultipartMetrics;
  encryption: EncryptionMetrics;
  sweep: SweepMetrics;
  replication: ReplicationMetrics;
  iam: IamMetrics;
  jobs: JobMetrics;
  /** The event outbox and its dispatcher (src/events/event-metrics.ts lists them). */
  events: OutboxMetrics;
  lifecycle: LifecycleMetrics;
  usage: UsageMetrics;
  diagnostics: DiagnosticsMetrics;
}

export function createMetrics(options: MetricsOptions): Metrics {
  const registry = metricRegistry();
  const refreshProcess = processMetrics(registry, options);
  const observeRequest = httpMetrics(registry);
  const observeAdminRequest = adminRequestMetrics(registry);
  const { delta, cache } = deltaMetrics(registry, options.codecSlots);
  const { multipart, sweep } = multipartMetrics(registry);
  authMetrics(registry, options.authStats);
  const encryption = encryptionMetrics(registry);
  const replication = replicationMetrics(registry);
  const iam = iamMetrics(registry, options.iamIndex ?? (() => null));
  const jobs = jobMetrics(registry);
  writeGateMetrics(registry, options.writeGate ?? (() => null));
  const events = outboxMetrics(registry);
  const lifecycle = lifecycleMetrics(registry);
  const usage = usageMetrics(registry);
  const diagnostics = diagnosticsMetrics(registry);
  return {
    observeRequest,
    observeAdminRequest,
    async render() {
      await refreshProcess();
      const { registry: prom } = registry;
      return { body: await prom.metrics(), contentType: prom.contentType };
    },
    delta,
    cache,
    multipart,
    encryption,
    sweep,
    replication,
    iam,
    jobs,
    events,
    lifecycle,
    usage,
    diagnostics,
  };
}
