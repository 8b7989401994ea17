/**
 * Usage counters over the config database: persisted totals loaded first, then every change
 * written in batches; the cached aggregate behind `/_/stats`, the full scan an operator starts,
 * and the deltaspace savings scan. In a fleet (a coordination bucket), every answer adds the
 * writes the other instances made since this counter's last scan (fleet-usage.ts).
 */
import type { AuditFn } from "../../observability/mod.ts";
import { usageAggregate } from "../../admin/mod.ts";
import { type ConfigDb, UsageStore } from "../../db/mod.ts";
import {
  type BucketUsage,
  FullUsageScan,
  scanDeltaspaceSavings,
  type ScanTrigger,
  UsageFlusher,
} from "../../objects/mod.ts";
import type { CoordinationBucket } from "../../jobs/mod.ts";
import type { Services } from "../services.ts";
import { FleetUsage } from "./fleet-usage.ts";
import { usageScanSource } from "../usage-source.ts";

/**
 * This instance's id in the fleet's usage tallies: made once and kept in the config database
 * (node-local `meta`, never synced), so a restart continues its tally. A second instance
 * started from a copy of this state directory would share it: give each its own state.
 */
export async function fleetInstanceId(db: ConfigDb): Promise<string> {
  const key = "fleet_usage_instance";
  const found = await db.execute({ sql: "SELECT value FROM meta WHERE key = ?", args: [key] });
  if (found.rows.length > 0) return String(found.rows[0].value);
  const id = `${Deno.hostname()}-${crypto.randomUUID().slice(0, 8)}`;
  await db.execute({ sql: "INSERT INTO meta (key, value) VALUES (?, ?)", args: [key, id] });
  return id;
}

export async function openUsagePlane(
  services: Services,
  db: ConfigDb,
  audit: AuditFn,
  shared: CoordinationBucket | null = null,
) {
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
  const fleet = shared === null
    ? null
    : await FleetUsage.open(shared, { instance: await fleetInstanceId(db) });
  const unobserve = fleet === null ? () => {} : services.addWriteObserver(fleet);
  const fleetWide = async (bucket: string, own: BucketUsage) =>
    fleet === null ? own : await fleet.adjust(bucket, own);
  const bucketUsage = async (bucket: string) => await fleetWide(bucket, await usage.usage(bucket));
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
    counter: {
      peek: (bucket: string) => fleetWide(bucket, usage.peek(bucket)),
      scanning: (bucket: string) => usage.scanning(bucket),
      rescan: async (bucket: string, trigger: ScanTrigger) =>
        await fleetWide(bucket, await usage.rescan(bucket, trigger)),
    },
    bucketNames,
    bucketUsage,
    aggregate,
    fullScan,
    savings,
    /** The counters' last changes, so the next start needs no scan. */
    close: async () => {
      unobserve();
      await fleet?.close();
      await flusher.close();
    },
  };
}

export type UsagePlane = Awaited<ReturnType<typeof openUsagePlane>>;
