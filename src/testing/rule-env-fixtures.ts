/**
 * A RuleEnv over one object service outside a running svc (unit tests and benchmarks): a
 * filesystem backend, no write gate unless the caller says, events dropped unless it collects
 * them, metrics in a registry of their own.
 */
import { buildConfig } from "../config/load.ts";
import type { Config } from "../config/schema/schema.ts";
import { createMetrics, type Metrics } from "../observability/metrics.ts";
import type { ObjectService } from "../objects/object-service.ts";
import type { Clock } from "../jobs/clock.ts";
import type { RuleEnv } from "../jobs/rules/rule-env.ts";

/** Metrics of a process with no S3 traffic (the auth counters stay zero). */
export function detachedMetrics(): Metrics {
  return createMetrics({
    version: "test",
    backendType: "filesystem",
    authStats: () => ({
      attempts: { success: 0, failure: 0 },
      failures: { missing_header: 0, invalid_presigned: 0, invalid_signature: 0 },
    }),
  });
}

export function detachedRuleEnv(
  objects: ObjectService,
  clock: Clock,
  options: Partial<Pick<RuleEnv, "gatedBy" | "recordEvent">> & { config?: Config } = {},
): RuleEnv {
  const config = options.config ??
    buildConfig({ access: { authentication: "none" } }, { env: {} }).config;
  return {
    config: () => config,
    objects: () => objects,
    backendKind: () => Promise.resolve("filesystem"),
    gatedBy: options.gatedBy ?? (() => undefined),
    recordEvent: options.recordEvent ?? (() => {}),
    metrics: detachedMetrics(),
    clock,
  };
}
