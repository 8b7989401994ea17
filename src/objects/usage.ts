/**
 * Per-bucket usage counters (object count, logical and stored bytes), kept per process.
 *
 * A bucket's counter is seeded lazily: the first time its usage is asked for, the bucket is
 * listed once through the object service. From then on the object service reports every commit
 * and removal (with the object it replaced), so the counter follows writes inline without
 * another scan. Buckets nobody asked about cost nothing: the object service reads the replaced
 * object's metadata only for tracked buckets.
 *
 * While the seeding scan runs, a write to a key the scan has already passed is applied as a
 * difference; a write to a key it has not reached yet is left to the scan, which will see the
 * new object. A write racing the very page being read can be missed or counted twice; the
 * counter is approximate by design (the quota built on it is soft), and another instance
 * writing the same backend is not seen at all until a restart.
 */
import type { ListOptions, ListPage, ObjectInfo } from "../storage/backend.ts";
import type { ObjectService } from "./object-service.ts";
import type { WriteObserver } from "./write-observer.ts";

/** The usage counter of one bucket, with the field names of the spec. */
export interface BucketUsage {
  object_count: number;
  logical_bytes: number;
  stored_bytes: number;
  /** 100 × (1 − stored / logical), 0 for an empty bucket. */
  savings_percentage: number;
  /** When the seeding scan finished (ms since the epoch); null before it. */
  last_scan_at: number | null;
  never_scanned: boolean;
}

interface Totals {
  count: number;
  logical: number;
  stored: number;
}

interface BucketState {
  totals: Totals;
  /** While the seeding scan runs: the last key it has counted ("" before the first page). */
  scannedThrough?: string;
  scan?: Promise<void>;
  lastScanAt: number | null;
}

const SCAN_PAGE = 1000;
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

export class UsageCounter implements WriteObserver {
  readonly #buckets = new Map<string, BucketState>();
  readonly #list: (bucket: string, options: ListOptions) => Promise<ListPage>;
  readonly #now: () => number;

  constructor(
    list: (bucket: string, options: ListOptions) => Promise<ListPage>,
    now: () => number = Date.now,
  ) {
    this.#list = list;
    this.#now = now;
  }

  /** The bucket's usage, scanning it first if it was never counted. Throws NoSuchBucket. */
  async usage(bucket: string): Promise<BucketUsage> {
    let state = this.#buckets.get(bucket);
    if (state === undefined) {
      state = { totals: { count: 0, logical: 0, stored: 0 }, scannedThrough: "", lastScanAt: null };
      this.#buckets.set(bucket, state);
      state.scan = this.#seed(bucket, state);
    }
    if (state.scan) await state.scan;
    return usageOf(state.totals, state.lastScanAt);
  }

  /** The usage as known now, without scanning (zeros and never_scanned before a scan). */
  peek(bucket: string): BucketUsage {
    const state = this.#buckets.get(bucket);
    if (state === undefined || state.scan) {
      return usageOf({ count: 0, logical: 0, stored: 0 }, state?.lastScanAt ?? null);
    }
    return usageOf(state.totals, state.lastScanAt);
  }

  /** Drops a bucket's counter (the bucket was deleted); the next usage() scans again. */
  forget(bucket: string): void {
    this.#buckets.delete(bucket);
  }

  tracks(bucket: string): boolean {
    return this.#buckets.has(bucket);
  }

  committed(bucket: string, info: ObjectInfo, replaced: ObjectInfo | null): void {
    const totals = this.#totalsFor(bucket, info.key);
    if (totals === undefined) return;
    if (replaced !== null) subtract(totals, replaced);
    totals.count++;
    totals.logical += info.meta.size;
    totals.stored += info.storedSize;
  }

  removed(bucket: string, info: ObjectInfo): void {
    const totals = this.#totalsFor(bucket, info.key);
    if (totals !== undefined) subtract(totals, info);
  }

  /** The totals a change to `key` applies to, or undefined when the scan will count it. */
  #totalsFor(bucket: string, key: string): Totals | undefined {
    const state = this.#buckets.get(bucket);
    if (state === undefined) return undefined;
    const through = state.scannedThrough;
    if (through !== undefined && (through === "" || compareBytes(key, through) > 0)) {
      return undefined;
    }
    return state.totals;
  }

  async #seed(bucket: string, state: BucketState): Promise<void> {
    try {
      let startAfter: string | undefined;
      for (;;) {
        const page = await this.#list(bucket, { prefix: "", startAfter, maxKeys: SCAN_PAGE });
        for (const object of page.objects) {
          state.totals.count++;
          state.totals.logical += object.meta.size;
          state.totals.stored += object.storedSize;
        }
        const last = page.objects[page.objects.length - 1]?.key;
        if (last !== undefined) state.scannedThrough = last;
        if (!page.isTruncated || page.nextStartAfter === undefined) break;
        startAfter = page.nextStartAfter;
      }
      state.lastScanAt = this.#now();
    } catch (err) {
      // A failed scan leaves nothing half-counted: the next request scans again.
      if (this.#buckets.get(bucket) === state) this.#buckets.delete(bucket);
      throw err;
    } finally {
      delete state.scannedThrough;
      delete state.scan;
    }
  }
}

function subtract(totals: Totals, info: ObjectInfo): void {
  totals.count = Math.max(0, totals.count - 1);
  totals.logical = Math.max(0, totals.logical - info.meta.size);
  totals.stored = Math.max(0, totals.stored - info.storedSize);
}

const counters = new WeakMap<ObjectService, UsageCounter>();

/**
 * The usage counter of an object service, created and attached on first use. A storage stack
 * rebuilt on reload has a new object service and so starts with fresh counters.
 */
export function usageCounterOf(objects: ObjectService): UsageCounter {
  let counter = counters.get(objects);
  if (counter === undefined) {
    counter = new UsageCounter((bucket, options) => objects.listObjects(bucket, options));
    objects.observers.add(counter);
    counters.set(objects, counter);
  }
  return counter;
}
