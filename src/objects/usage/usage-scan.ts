/**
 * The listing scan behind the usage counters: one pass over a bucket's logical listing (the delta
 * store's view: one entry per client key, with the logical size and the bytes of its own stored
 * form), then one HEAD per deltaspace that holds delta-stored objects, for the baseline they
 * share (`<deltaspace>reference.bin`, hidden from listings; a group's is `.dg/<id>/reference.bin`). Baselines are stored bytes like any
 * other: without them a deltaspace holding one 100 MB artifact would show a tiny delta and
 * 99.99 % savings.
 *
 * The scan reports its progress (the last key counted) so the counter can tell which concurrent
 * writes it has already passed (see usage.ts).
 */
import type { ListOptions, ListPage, ObjectInfo } from "../../storage/mod.ts";
import { baselineFolderOf } from "../../delta/mod.ts";

export interface Totals {
  count: number;
  logical: number;
  stored: number;
}

export interface ScanSource {
  /** The bucket's logical listing (the object service's). */
  list(bucket: string, options: ListOptions): Promise<ListPage>;
  /** Stored bytes of a deltaspace's baseline; null when it has none. Absent: not counted. */
  baselineSize?(bucket: string, deltaspace: string): Promise<number | null>;
}

export const SCAN_PAGE = 1000;

export function zeroTotals(): Totals {
  return { count: 0, logical: 0, stored: 0 };
}

/** Whether an object's bytes are a delta against its deltaspace's baseline. */
export function sharesBaseline(info: ObjectInfo): boolean {
  return info.meta.storage === "delta" || info.meta.storage === "reference";
}

export function addObject(totals: Totals, info: ObjectInfo): void {
  totals.count++;
  totals.logical += info.meta.size;
  totals.stored += info.storedSize;
}

export function subtractObject(totals: Totals, info: ObjectInfo): void {
  totals.count = Math.max(0, totals.count - 1);
  totals.logical = Math.max(0, totals.logical - info.meta.size);
  totals.stored = Math.max(0, totals.stored - info.storedSize);
  // No objects, no baselines (each goes with the last delta of its deltaspace): exact again.
  if (totals.count === 0) totals.logical = totals.stored = 0;
}

/**
 * Counts a bucket into `totals`. `progress(key)` is called after each page with the last key
 * counted. Throws what the listing throws (NoSuchBucket, backend errors).
 */
export async function scanBucket(
  source: ScanSource,
  bucket: string,
  totals: Totals,
  progress: (lastKey: string) => void,
  signal?: AbortSignal,
): Promise<void> {
  const deltaspaces = new Set<string>();
  let startAfter: string | undefined;
  for (;;) {
    signal?.throwIfAborted();
    const page = await source.list(bucket, { prefix: "", startAfter, maxKeys: SCAN_PAGE });
    for (const object of page.objects) {
      addObject(totals, object);
      // Where its baseline is: a group's `.dg/<id>/`, or the parent folder (the delta's meta).
      if (sharesBaseline(object)) deltaspaces.add(baselineFolderOf(object.key, object.meta));
    }
    const last = page.objects[page.objects.length - 1]?.key;
    if (last !== undefined) progress(last);
    if (!page.isTruncated || page.nextStartAfter === undefined) break;
    startAfter = page.nextStartAfter;
  }
  if (source.baselineSize === undefined) return;
  for (const deltaspace of deltaspaces) {
    signal?.throwIfAborted();
    totals.stored += (await source.baselineSize(bucket, deltaspace)) ?? 0;
  }
}
