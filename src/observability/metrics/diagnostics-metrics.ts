/**
 * Diagnostics (src/objects/diagnostics/): the integrity scan's objects by result and findings by
 * kind, whether a scan runs, and each bucket's savings ratio from the last delta-efficiency
 * report (1 − stored/logical; negative when the store costs more than the data).
 */
import type { GaugeHandle, LabelledCounterHandle, MetricRegistry } from "./metric-registry.ts";

export interface DiagnosticsMetrics {
  scrubObjects: LabelledCounterHandle<{ result: string }>;
  scrubFindings: LabelledCounterHandle<{ kind: string }>;
  scrubRunning: GaugeHandle;
  savingsRatio: { set(labels: { bucket: string }, value: number): void };
}

export function diagnosticsMetrics({ counter, gauge }: MetricRegistry): DiagnosticsMetrics {
  const running = gauge("svc_scrub_running", "1 while an integrity scan (scrub) runs, else 0.");
  running.set(0);
  return {
    scrubObjects: counter(
      "svc_scrub_objects_total",
      "Objects the integrity scan checked, by result (ok, corrupt, missing_baseline, …).",
      ["result"],
    ),
    scrubFindings: counter(
      "svc_scrub_findings_total",
      "Problems the integrity scan found, by kind.",
      ["kind"],
    ),
    scrubRunning: running,
    savingsRatio: gauge(
      "svc_delta_efficiency_savings_ratio",
      "Savings of each bucket in its last delta-efficiency report: 1 - stored/logical bytes.",
      ["bucket"],
    ),
  };
}
