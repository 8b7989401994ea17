/**
 * Delta savings per deltaspace (`GET /deltaspace/savings`): one listing scan of each bucket asked
 * for, grouping the objects stored as deltas by their deltaspace (the folder of the baseline their
 * metadata names: a group's `.dg/<id>/`, or the key's prefix up to its last `/`), with the baseline
 * each deltaspace shares. `prefix` reports a group by its group key (what `x-svc-deltaspace` shows). Only deltaspaces holding at least one delta are
 * reported: a prefix of passthrough objects saves nothing, and listing every prefix of a store
 * would make the answer grow with the key count. Memory grows with the number of such
 * deltaspaces, never with object sizes.
 *
 * Per deltaspace: `object_count` (objects stored as deltas), `logical_bytes` (their sizes as
 * clients read them), `stored_bytes` (the deltas plus the baseline), `baseline_bytes`,
 * `saved_bytes` (logical − stored; negative when a deltaspace costs more than it saves, e.g. one
 * object and its baseline) and `savings_percentage`.
 */
import { baselineFolderOf } from "../../delta/mod.ts";
import type { ScanSource } from "./usage-scan.ts";
import { SCAN_PAGE, sharesBaseline } from "./usage-scan.ts";

export interface DeltaspaceSavings {
  bucket: string;
  prefix: string;
  object_count: number;
  logical_bytes: number;
  stored_bytes: number;
  baseline_bytes: number;
  saved_bytes: number;
  savings_percentage: number;
}

export interface SavingsReport {
  /** When the scan finished (ms since the epoch). */
  computed_at: number;
  /** The deltaspaces with the most bytes saved first. */
  deltaspaces: DeltaspaceSavings[];
  totals: {
    object_count: number;
    logical_bytes: number;
    stored_bytes: number;
    saved_bytes: number;
    savings_percentage: number;
  };
}

function percentage(logical: number, stored: number): number {
  return logical > 0 ? Math.round(10000 * (1 - stored / logical)) / 100 : 0;
}

interface Group {
  label: string;
  count: number;
  logical: number;
  deltas: number;
}

/** Scans `buckets` one after another and reports their deltaspaces. */
export async function scanDeltaspaceSavings(
  source: ScanSource,
  buckets: readonly string[],
  options: { now?: () => number; signal?: AbortSignal } = {},
): Promise<SavingsReport> {
  const found: DeltaspaceSavings[] = [];
  for (const bucket of buckets) {
    const groups = new Map<string, Group>();
    let startAfter: string | undefined;
    for (;;) {
      options.signal?.throwIfAborted();
      const page = await source.list(bucket, { prefix: "", startAfter, maxKeys: SCAN_PAGE });
      for (const object of page.objects) {
        if (!sharesBaseline(object)) continue;
        const folder = baselineFolderOf(object.key, object.meta);
        let group = groups.get(folder);
        if (group === undefined) {
          const label = (object.meta as { deltaGroup?: string }).deltaGroup ?? folder;
          groups.set(folder, group = { label, count: 0, logical: 0, deltas: 0 });
        }
        group.count++;
        group.logical += object.meta.size;
        group.deltas += object.storedSize;
      }
      if (!page.isTruncated || page.nextStartAfter === undefined) break;
      startAfter = page.nextStartAfter;
    }
    for (const [folder, group] of groups) {
      const baseline = (await source.baselineSize?.(bucket, folder)) ?? 0;
      const stored = group.deltas + baseline;
      found.push({
        bucket,
        prefix: group.label,
        object_count: group.count,
        logical_bytes: group.logical,
        stored_bytes: stored,
        baseline_bytes: baseline,
        saved_bytes: group.logical - stored,
        savings_percentage: percentage(group.logical, stored),
      });
    }
  }
  let count = 0, logical = 0, stored = 0;
  for (const entry of found) {
    count += entry.object_count;
    logical += entry.logical_bytes;
    stored += entry.stored_bytes;
  }
  found.sort((a, b) =>
    b.saved_bytes - a.saved_bytes || a.bucket.localeCompare(b.bucket) ||
    (a.prefix < b.prefix ? -1 : a.prefix > b.prefix ? 1 : 0)
  );
  return {
    computed_at: (options.now ?? Date.now)(),
    deltaspaces: found,
    totals: {
      object_count: count,
      logical_bytes: logical,
      stored_bytes: stored,
      saved_bytes: logical - stored,
      savings_percentage: percentage(logical, stored),
    },
  };
}
