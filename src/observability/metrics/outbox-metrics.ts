/**
 * The event outbox and its dispatcher (src/events/event-metrics.ts narrows the status label to
 * the outbox's statuses). Labels are small fixed sets: a status of the outbox, a delivery result;
 * never a URL, bucket or key.
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
import {
  type CounterHandle,
  DURATION_BUCKETS,
  type HistogramHandle,
  type LabelledCounterHandle,
  type MetricRegistry,
} from "./metric-registry.ts";

export type DeliveryResult = "delivered" | "retry" | "failed";
export type RequestResult = "success" | "http_error" | "network_error" | "timeout";

/** `Status`: the outbox's row statuses (the events room narrows it). */
export interface OutboxMetrics<Status extends string = string> {
  appended: CounterHandle;
  committed: CounterHandle;
  dropped: CounterHandle;
  commitFailures: CounterHandle;
  commitLag: HistogramHandle;
  depth: { set(labels: { status: Status }, value: number): void };
  deliveries: LabelledCounterHandle<{ result: DeliveryResult }>;
  requests: LabelledCounterHandle<{ result: RequestResult }>;
  requestDuration: HistogramHandle;
}

const LAG_BUCKETS = [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 5];

export function outboxMetrics({ counter, gauge, histogram }: MetricRegistry): OutboxMetrics {
  return {
    appended: counter("svc_events_appended_total", "Events buffered by the outbox writer."),
    committed: counter("svc_events_committed_total", "Events committed to the outbox."),
    dropped: counter("svc_events_dropped_total", "Events lost: outbox buffer full or closed."),
    commitFailures: counter("svc_events_commit_failures_total", "Failed outbox batch commits."),
    commitLag: histogram(
      "svc_events_commit_lag_seconds",
      "From an event's append to its commit in the outbox.",
      LAG_BUCKETS,
    ),
    depth: gauge("svc_event_outbox_rows", "Outbox rows per status.", ["status"]),
    deliveries: counter("svc_event_deliveries_total", "Outbox row delivery outcomes.", ["result"]),
    requests: counter("svc_event_delivery_requests_total", "Requests to event endpoints.", [
      "result",
    ]),
    requestDuration: histogram(
      "svc_event_delivery_duration_seconds",
      "One request to an event endpoint, until its answer.",
      DURATION_BUCKETS,
    ),
  };
}
