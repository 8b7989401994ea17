/**
 * The handles the outbox and the dispatcher feed (registered in src/observability/metrics.ts).
 * Labels are small fixed sets: a status of the outbox, a delivery result; never a URL, bucket or
 * key.
 *
 * - `svc_events_appended_total`: events buffered by the outbox writer;
 * - `svc_events_committed_total`: events committed to the outbox table;
 * - `svc_events_dropped_total`: events lost because the buffer was full or closed;
 * - `svc_events_commit_failures_total`: batch commits that failed (and were retried);
 * - `svc_events_commit_lag_seconds`: from append to commit (the crash window of an event);
 * - `svc_event_outbox_rows{status}`: rows per status, refreshed each dispatcher tick;
 * - `svc_event_deliveries_total{result}`: row outcomes: delivered, retry, failed;
 * - `svc_event_delivery_requests_total{result}`: endpoint requests: success, http_error,
 *   network_error, timeout;
 * - `svc_event_delivery_duration_seconds`: one endpoint request, until its answer.
 */
import type {
  CounterHandle,
  HistogramHandle,
  LabelledCounterHandle,
} from "../observability/metrics.ts";
import type { OutboxStatus } from "./outbox-store.ts";

export type DeliveryResult = "delivered" | "retry" | "failed";
export type RequestResult = "success" | "http_error" | "network_error" | "timeout";

export interface EventMetrics {
  appended: CounterHandle;
  committed: CounterHandle;
  dropped: CounterHandle;
  commitFailures: CounterHandle;
  commitLag: HistogramHandle;
  depth: { set(labels: { status: OutboxStatus }, value: number): void };
  deliveries: LabelledCounterHandle<{ result: DeliveryResult }>;
  requests: LabelledCounterHandle<{ result: RequestResult }>;
  requestDuration: HistogramHandle;
}
