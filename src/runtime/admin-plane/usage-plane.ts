/**
 * Usage counters over the config database: persisted totals loaded first, then every change
 * written in batches; the cached aggregate behind `/_/stats`, the full scan an operator starts,
 * and the deltaspace savings scan.
 */
import type { AuditFn } from "../../observability/mod.ts";
import { usageAggregate } from "../../admin/mod.ts";
import { type ConfigDb, UsageStore } from "../../db/mod.ts";
import { FullUsageScan, scanDeltaspaceSavings, UsageFlusher } from "../../objects/mod.ts";
import type { Services } from "../services.ts";
import { usageScanSource } from "../usage-source.ts";

export async function openUsagePlane(services: Services, db: ConfigDb, audit: AuditFn) {
  const usage = services.usage;
  const usageStore = new UsageStore(db);
  usage.load(await usageStore.loadAll());
  const flusher = new UsageFlusher({
    store: usageStore,
    row: (bucket) => usage.row(bucket),
    onFlush: (outcome) => services.metrics.usage.flushes.inc({ outcome }),
  });
  // The counter lives as long as the process and the database opens after it: from now on its
  // changes go to the flusher (which reads the rows back from the counter).
  usage.persistTo(flusher);
  const bucketNames = async () => (await services.storage.router.listBuckets()).map((b) => b.name);
  const bucketUsage = (bucket: string) => usage.usage(bucket);
  const aggregate = usageAggregate({ bucketNames, bucketUsage });
  const fullScan = new FullUsageScan({
    bucketNames,
    rescan: (bucket, trigger) => usage.rescan(bucket, trigger),
    onFinish: (status, startedFrom) => {
      aggregate.invalidate();
      audit("usage_scan_finished", {
        user: status.started_by,
        ip: startedFrom,
        buckets: status.buckets_total,
        failed: status.buckets_failed,
        seconds: ((status.finished_at ?? 0) - (status.started_at ?? 0)) / 1000,
      }, status.buckets_failed > 0 ? "warn" : undefined);
    },
  });
  const usageMetrics = services.metrics.usage;
  const savings = async (buckets: string[]) => {
    const started = performance.now();
    let outcome: "ok" | "error" = "error";
    try {
      const report = await scanDeltaspaceSavings(usageScanSource(() => services.storage), buckets);
      outcome = "ok";
      return report;
    } finally {
      usageMetrics.scans.inc({ trigger: "savings", outcome });
      usageMetrics.scanDuration.observe((performance.now() - started) / 1000);
    }
  };
  return {
    counter: usage,
    bucketNames,
    bucketUsage,
    aggregate,
    fullScan,
    savings,
    /** The counters' last changes, so the next start needs no scan. */
    close: () => flusher.close(),
  };
}

export type UsagePlane = Awaited<ReturnType<typeof openUsagePlane>>;
