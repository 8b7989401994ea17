/**
 * SigV4 authentication counters, read from the authenticator at scrape time: every label value is
 * always present (zero while SigV4 is disabled or before the first request).
 */
import { Counter } from "prom-client";
import type { MetricRegistry } from "./metric-registry.ts";

/**
 * What the authenticator counts (auth/authenticator.ts AuthStats has this shape): attempts by
 * result, failures by reason; each key is a label value.
 */
export interface AuthCounts {
  attempts: Readonly<Record<"success" | "failure", number>>;
  failures: Readonly<Record<string, number>>;
}

export function authMetrics({ registers }: MetricRegistry, authStats: () => AuthCounts): void {
  const scraped = <L extends string>(name: string, help: string, label: L, read: () => object) =>
    new Counter<L>({
      name,
      help,
      labelNames: [label],
      registers,
      collect() {
        this.reset();
        for (const [value, n] of Object.entries(read())) this.inc({ [label]: value } as never, n);
      },
    });
  scraped(
    "svc_auth_attempts_total",
    "SigV4 authentication attempts.",
    "result",
    () => authStats().attempts,
  );
  scraped(
    "svc_auth_failures_total",
    "SigV4 authentication failures.",
    "reason",
    () => authStats().failures,
  );
}
