/**
 * The handles the outbox and the dispatcher feed: the outbox family of the metrics registry
 * (src/observability/metrics/outbox-metrics.ts lists the series), its status label narrowed to
 * the outbox's own statuses.
 */
import type { OutboxMetrics } from "../observability/mod.ts";
import type { OutboxStatus } from "./outbox-store.ts";

export type { DeliveryResult, RequestResult } from "../observability/mod.ts";

export type EventMetrics = OutboxMetrics<OutboxStatus>;
