/**
 * Usage counters (src/objects/usage/usage.ts): scans by trigger (`seed`, `scan`, `refresh`,
 * `savings`) and outcome, scan durations, and the batched counter writes by outcome.
 */
import type { HistogramHandle, LabelledCounterHandle, MetricRegistry } from "./metric-registry.ts";

export interface UsageMetrics {
  scans: LabelledCounterHandle<{ trigger: string; outcome: "ok" | "error" }>;
  scanDuration: HistogramHandle;
  flushes: LabelledCounterHandle<{ outcome: "ok" | "error" }>;
}

export function usageMetrics({ counter, histogram }: MetricRegistry): UsageMetrics {
  return {
    scans: counter("svc_usage_scans_total", "Usage counter scans, by trigger and outcome.", [
      "trigger",
      "outcome",
    ]),
    scanDuration: histogram(
      "svc_usage_scan_seconds",
      "Time to scan one bucket for its usage counter or deltaspace savings.",
      [0.01, 0.1, 0.5, 1, 5, 15, 60, 300, 1800],
    ),
    flushes: counter("svc_usage_flushes_total", "Batched usage counter writes, by outcome.", [
      "outcome",
    ]),
  };
}
