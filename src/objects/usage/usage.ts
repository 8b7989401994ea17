/**
 * Per-bucket usage counters (object count, logical and stored bytes), one per process, persisted
 * in the config database (src/db/usage-store.ts through usage-flusher.ts) so a restart starts
 * from the last totals instead of rescanning.
 *
 * A bucket's counter is established by a full listing scan (usage-scan.ts), or by svc creating
 * the bucket (empty, so nothing to scan). From then on the object service reports every commit
 * and removal (with the object it replaced) and the counter follows writes inline, O(1) each.
 * A bucket svc never counted is scanned the first time its usage is needed (a quota, the stats,
 * `/usage`) or when an operator asks (`POST /usage/scan`, `/usage/refresh`); until then its
 * writes are not observed, so they cost no extra metadata read.
 *
 * While a scan runs, a write to a key the scan has already passed is applied to the scan's totals
 * as a difference; a write to a key it has not reached yet is left to the scan, which will see
 * the new object. The counter in force keeps following every write meanwhile, and is replaced by
 * the scan's totals when the scan ends. A write racing the very page being read can be missed or
 * counted twice; the counter is approximate by design (SPEC: "per-instance and approximate"), and
 * another instance writing the same backend is seen only at the next scan or refresh.
 *
 * Stored bytes include the deltaspace baselines (usage-scan.ts). Inline, a write that creates a
 * baseline adds its size; a baseline svc removes with the last delta of its deltaspace is not
 * reported to observers, so its bytes stay counted until the next scan or until the bucket holds
 * no object at all (then both byte totals are exactly zero).
 */
import type { ListOptions, ListPage, ObjectInfo } from "../../storage/mod.ts";
import type { UsageRow } from "../../db/mod.ts";
import {
  addObject,
  scanBucket,
  type ScanSource,
  subtractObject,
  type Totals,
  zeroTotals,
} from "./usage-scan.ts";
import type { WriteObserver } from "./write-observer.ts";

/** The usage counter of one bucket, with the field names of the spec. */
export interface BucketUsage {
  object_count: number;
  logical_bytes: number;
  stored_bytes: number;
  /** 100 × (1 − stored / logical), 0 for an empty bucket; two decimals. */
  savings_percentage: number;
  /** When the totals were last established by a scan (ms since the epoch); null before. */
  last_scan_at: number | null;
  never_scanned: boolean;
}

/** Why a scan ran (a metric label). */
export type ScanTrigger = "seed" | "scan" | "refresh";

interface Scan {
  totals: Totals;
  /** The last key counted ("" before the first page). */
  through: string;
  done: Promise<void>;
}

interface BucketState {
  /** The counter in force; null while the first scan runs. */
  totals: Totals | null;
  lastScanAt: number | null;
  scan?: Scan;
}

export interface UsageCounterOptions {
  now?: () => number;
  /** Stored bytes of a deltaspace's baseline (usage-scan.ts); absent: baselines not counted. */
  baselineSize?: ScanSource["baselineSize"];
  /** Every finished scan, for metrics. */
  onScan?: (trigger: ScanTrigger, outcome: "ok" | "error", seconds: number) => void;
}

const encoder = new TextEncoder();

function compareBytes(a: string, b: string): number {
  const x = encoder.encode(a), y = encoder.encode(b);
  const n = Math.min(x.length, y.length);
  for (let i = 0; i < n; i++) if (x[i] !== y[i]) return x[i] - y[i];
  return x.length - y.length;
}

/** The usage of a bucket in its spec shape. */
export function usageOf(totals: Totals, lastScanAt: number | null): BucketUsage {
  const savings = totals.logical > 0 ? 100 * (1 - totals.stored / totals.logical) : 0;
  return {
    object_count: totals.count,
    logical_bytes: totals.logical,
    stored_bytes: totals.stored,
    savings_percentage: Math.round(savings * 100) / 100,
    last_scan_at: lastScanAt,
    never_scanned: lastScanAt === null,
  };
}

/** Where changed counters go to be persisted (usage-flusher.ts). */
export interface UsageSink {
  /** The bucket's counter changed. */
  changed(bucket: string): void;
  /** The bucket's counter was dropped (bucket deleted). */
  removed(bucket: string): void;
}

const NO_SINK: UsageSink = { changed() {}, removed() {} };

export class UsageCounter implements WriteObserver {
  readonly #buckets = new Map<string, BucketState>();
  readonly #source: ScanSource;
  readonly #options: UsageCounterOptions;
  readonly #now: () => number;
  #sink: UsageSink = NO_SINK;

  constructor(
    list: (bucket: string, options: ListOptions) => Promise<ListPage>,
    options: UsageCounterOptions = {},
  ) {
    this.#source = { list, baselineSize: options.baselineSize };
    this.#options = options;
    this.#now = options.now ?? Date.now;
  }

  /** Sends every later change to `sink` (the config database, once it is open). */
  persistTo(sink: UsageSink): void {
    this.#sink = sink;
  }

  /** Seeds counters from persisted rows (at start); buckets already counted here are kept. */
  load(rows: readonly UsageRow[]): void {
    for (const row of rows) {
      if (this.#buckets.has(row.bucket)) continue;
      this.#buckets.set(row.bucket, {
        totals: { count: row.objectCount, logical: row.logicalBytes, stored: row.storedBytes },
        lastScanAt: row.lastScanAt,
      });
    }
  }

  /** The row to persist for a bucket; null while it has no established counter. */
  row(bucket: string): UsageRow | null {
    const state = this.#buckets.get(bucket);
    if (state?.totals == null || state.lastScanAt === null) return null;
    const { count, logical, stored } = state.totals;
    return {
      bucket,
      objectCount: count,
      logicalBytes: logical,
      storedBytes: stored,
      lastScanAt: state.lastScanAt,
    };
  }

  /** The bucket's usage, scanning it first if it was never counted. Throws NoSuchBucket. */
  async usage(bucket: string): Promise<BucketUsage> {
    const state = this.#buckets.get(bucket);
    if (state?.totals) return usageOf(state.totals, state.lastScanAt);
    return await this.rescan(bucket, "seed");
  }

  /** The usage as known now, never scanning (zeros and never_scanned before a first scan). */
  peek(bucket: string): BucketUsage {
    const state = this.#buckets.get(bucket);
    return usageOf(state?.totals ?? zeroTotals(), state?.totals ? state.lastScanAt : null);
  }

  /** Whether a scan of the bucket is running. */
  scanning(bucket: string): boolean {
    return this.#buckets.get(bucket)?.scan !== undefined;
  }

  /**
   * Scans the bucket and replaces its counter with the result; a scan already running is joined.
   * Throws what the listing throws (NoSuchBucket: the counter is dropped).
   */
  async rescan(bucket: string, trigger: ScanTrigger = "refresh"): Promise<BucketUsage> {
    let state = this.#buckets.get(bucket);
    if (state === undefined) {
      state = { totals: null, lastScanAt: null };
      this.#buckets.set(bucket, state);
    }
    state.scan ??= this.#startScan(bucket, state, trigger);
    await state.scan.done;
    return usageOf(state.totals ?? zeroTotals(), state.lastScanAt);
  }

  /** svc created the bucket: it is empty, so its counter is exact without a scan. */
  created(bucket: string): void {
    this.#buckets.set(bucket, { totals: zeroTotals(), lastScanAt: this.#now() });
    this.#sink.changed(bucket);
  }

  /** Drops a bucket's counter (the bucket was deleted); the next usage() scans again. */
  forget(bucket: string): void {
    if (this.#buckets.delete(bucket)) this.#sink.removed(bucket);
  }

  tracks(bucket: string): boolean {
    return this.#buckets.has(bucket);
  }

  committed(bucket: string, info: ObjectInfo, replaced: ObjectInfo | null): void {
    this.#apply(bucket, info.key, (totals, live) => {
      if (replaced !== null) subtractObject(totals, replaced);
      addObject(totals, info);
      // A new baseline: its bytes are stored too. A running scan counts baselines itself.
      if (live && info.debug?.decision === "reference") {
        totals.stored += info.debug.baselineBytes ?? info.meta.size;
      }
    });
  }

  removed(bucket: string, info: ObjectInfo): void {
    this.#apply(bucket, info.key, (totals) => subtractObject(totals, info));
  }

  #apply(bucket: string, key: string, change: (totals: Totals, live: boolean) => void): void {
    const state = this.#buckets.get(bucket);
    if (state === undefined) return;
    if (state.totals) {
      change(state.totals, true);
      this.#sink.changed(bucket);
    }
    const scan = state.scan;
    if (scan && scan.through !== "" && compareBytes(key, scan.through) <= 0) {
      change(scan.totals, false);
    }
  }

  #startScan(bucket: string, state: BucketState, trigger: ScanTrigger): Scan {
    const scan: Scan = { totals: zeroTotals(), through: "", done: Promise.resolve() };
    const started = performance.now();
    const seconds = () => (performance.now() - started) / 1000;
    scan.done = scanBucket(this.#source, bucket, scan.totals, (last) => scan.through = last)
      .then(() => {
        if (this.#buckets.get(bucket) !== state) return; // forgotten meanwhile
        state.totals = scan.totals;
        state.lastScanAt = this.#now();
        this.#sink.changed(bucket);
        this.#options.onScan?.(trigger, "ok", seconds());
      }, (err) => {
        this.#options.onScan?.(trigger, "error", seconds());
        // A failed first scan leaves nothing half-counted: the next request scans again. A failed
        // rescan keeps the counter in force; a bucket gone is forgotten.
        const gone = (err as { code?: string })?.code === "NoSuchBucket";
        if (this.#buckets.get(bucket) === state && (state.totals === null || gone)) {
          this.forget(bucket);
        }
        throw err;
      })
      .finally(() => {
        if (state.scan === scan) delete state.scan;
      });
    return scan;
  }
}
