/**
 * The cached delta-efficiency report: one entry per bucket, kept until a rescan replaces it
 * (`POST /diagnostics/delta-efficiency/scan`); a bucket asked for that was never scanned is
 * scanned then. Concurrent requests for one bucket share its scan.
 */
import type { BucketEfficiency } from "./efficiency-report.ts";

export class EfficiencyReports {
  readonly #cache = new Map<string, BucketEfficiency>();
  readonly #running = new Map<string, Promise<BucketEfficiency>>();

  constructor(
    private readonly scan: (bucket: string) => Promise<BucketEfficiency>,
    private readonly onReport?: (report: BucketEfficiency) => void,
  ) {}

  /** The reports of `buckets` in order, scanning those not cached (all of them when `fresh`). */
  async get(buckets: readonly string[], fresh = false): Promise<BucketEfficiency[]> {
    const out: BucketEfficiency[] = [];
    for (const bucket of buckets) {
      const hit = fresh ? undefined : this.#cache.get(bucket);
      out.push(hit ?? await this.#scan(bucket, fresh));
    }
    return out;
  }

  #scan(bucket: string, fresh: boolean): Promise<BucketEfficiency> {
    let running = this.#running.get(bucket);
    // A fresh scan never joins one started before it: that one may predate the caller's writes.
    if (running !== undefined && !fresh) return running;
    running = (async () => {
      const report = await this.scan(bucket);
      this.#cache.set(bucket, report);
      this.onReport?.(report);
      return report;
    })().finally(() => {
      if (this.#running.get(bucket) === running) this.#running.delete(bucket);
    });
    this.#running.set(bucket, running);
    return running;
  }
}
