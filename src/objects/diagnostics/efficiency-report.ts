/**
 * The delta-efficiency report (`GET /diagnostics/delta-efficiency`): one listing pass over each
 * bucket's stored names below the delta layer (no object is read), summed per bucket and per
 * deltaspace. Per row: logical objects and bytes (what clients read), stored bytes (deltas,
 * passthrough copies, baselines and group markers), savings, a grade, counts by storage kind and
 * why objects went passthrough (their `storageReason` metadata; `unknown` when older code wrote
 * them, `compression_off` in a bucket with compression off).
 *
 * A passthrough object belongs to its parent folder's row; a delta to its deltaspace (its
 * `deltaspace` metadata, else its folder); a baseline and a group's markers to theirs. Memory
 * grows with the number of deltaspaces of a bucket (one small row each), never with object sizes;
 * each bucket's answer keeps its `deltaspaceLimit` largest rows.
 *
 * Grade scale, by savings percentage (1 − stored/logical): A ≥ 75 %, B ≥ 50 %, C ≥ 25 %,
 * D ≥ 5 %, E ≥ 0 % (stored as-is, nothing gained), F < 0 % (the store costs more than the data,
 * e.g. one object plus its baseline), "-" for no bytes at all.
 */
import { deltaspaceOf } from "../../delta/mod.ts";
import type { ListOptions, ListPage } from "../../storage/mod.ts";
import { GROUP_PREFIX, groupKeyOf, passthroughReason, roleOf } from "./stored-names.ts";

export interface StoredLister {
  /** One page of the bucket's stored names (the backend below the delta layer). */
  listStored(bucket: string, options: ListOptions): Promise<ListPage>;
  /** Whether the bucket has compression on (else every name is a plain object). */
  compressed(bucket: string): boolean;
}

export interface EfficiencyRow {
  objects: number;
  logical_bytes: number;
  stored_bytes: number;
  saved_bytes: number;
  savings_percentage: number;
  grade: string;
  /** Logical objects by storage kind (`delta`, `passthrough`, …). */
  kinds: Record<string, number>;
  /** Passthrough objects by reason. */
  passthrough_reasons: Record<string, number>;
  baseline_bytes: number;
  marker_count: number;
  marker_bytes: number;
}

export interface DeltaspaceEfficiency extends EfficiencyRow {
  deltaspace: string;
  /** The group key a version-group baseline records, when it does. */
  group_key?: string;
  baselines: number;
}

export interface BucketEfficiency extends EfficiencyRow {
  bucket: string;
  computed_at: number;
  compression: boolean;
  baselines: number;
  deltaspaces_total: number;
  deltaspaces_truncated: boolean;
  deltaspaces: DeltaspaceEfficiency[];
}

export const GRADE_SCALE = [
  { grade: "A", min_savings_percentage: 75 },
  { grade: "B", min_savings_percentage: 50 },
  { grade: "C", min_savings_percentage: 25 },
  { grade: "D", min_savings_percentage: 5 },
  { grade: "E", min_savings_percentage: 0 },
  { grade: "F", min_savings_percentage: null },
] as const;

export function gradeOf(logical: number, stored: number): string {
  if (logical === 0 && stored === 0) return "-";
  const pct = savingsPercentage(logical, stored);
  for (const step of GRADE_SCALE) {
    if (step.min_savings_percentage !== null && pct >= step.min_savings_percentage) {
      return step.grade;
    }
  }
  return "F";
}

export function savingsPercentage(logical: number, stored: number): number {
  if (logical === 0) return stored === 0 ? 0 : -100;
  return Math.round(10000 * (1 - stored / logical)) / 100;
}

function emptyRow(): EfficiencyRow {
  return {
    objects: 0,
    logical_bytes: 0,
    stored_bytes: 0,
    saved_bytes: 0,
    savings_percentage: 0,
    grade: "-",
    kinds: {},
    passthrough_reasons: {},
    baseline_bytes: 0,
    marker_count: 0,
    marker_bytes: 0,
  };
}

function finish<T extends EfficiencyRow>(row: T): T {
  row.saved_bytes = row.logical_bytes - row.stored_bytes;
  row.savings_percentage = savingsPercentage(row.logical_bytes, row.stored_bytes);
  row.grade = gradeOf(row.logical_bytes, row.stored_bytes);
  return row;
}

const bump = (counts: Record<string, number>, name: string) =>
  counts[name] = (counts[name] ?? 0) + 1;

const PAGE = 1000;

/** Scans one bucket's stored names. Throws what the listing throws (NoSuchBucket, …). */
export async function scanBucketEfficiency(
  source: StoredLister,
  bucket: string,
  options: { deltaspaceLimit?: number; now?: () => number; signal?: AbortSignal } = {},
): Promise<BucketEfficiency> {
  const compressed = source.compressed(bucket);
  const total: BucketEfficiency = {
    ...emptyRow(),
    bucket,
    computed_at: 0,
    compression: compressed,
    baselines: 0,
    deltaspaces_total: 0,
    deltaspaces_truncated: false,
    deltaspaces: [],
  };
  const spaces = new Map<string, DeltaspaceEfficiency>();
  const space = (deltaspace: string) => {
    let row = spaces.get(deltaspace);
    if (row === undefined) {
      spaces.set(deltaspace, row = { ...emptyRow(), deltaspace, baselines: 0 });
    }
    return row;
  };
  let startAfter: string | undefined;
  for (;;) {
    options.signal?.throwIfAborted();
    const page = await source.listStored(bucket, { prefix: "", startAfter, maxKeys: PAGE });
    for (const info of page.objects) {
      const role = roleOf(info, compressed);
      if (role === null) continue;
      const rows: EfficiencyRow[] = [total];
      switch (role.role) {
        case "baseline": {
          const row = space(role.deltaspace);
          row.group_key ??= groupKeyOf(info);
          for (const r of [total, row]) {
            r.baselines++;
            r.baseline_bytes += info.storedSize;
            r.stored_bytes += info.storedSize;
          }
          continue;
        }
        case "marker":
          rows.push(space(role.deltaspace));
          for (const r of rows) {
            r.marker_count++;
            r.marker_bytes += info.storedSize;
            r.stored_bytes += info.storedSize;
          }
          continue;
        case "delta": {
          const row = space(role.deltaspace);
          // A group's deltas name its key too: shown even when the baseline is missing.
          if (role.deltaspace.startsWith(GROUP_PREFIX)) row.group_key ??= groupKeyOf(info);
          rows.push(row);
          break;
        }
        case "passthrough":
          rows.push(space(deltaspaceOf(role.key)));
          break;
      }
      // In a bucket with compression off every name is stored as sent, whatever its metadata says.
      const kind = role.role === "delta"
        ? "delta"
        : compressed
        ? info.meta.storage ?? "passthrough"
        : "passthrough";
      const reason = kind === "passthrough" ? passthroughReason(info, compressed) : undefined;
      for (const r of rows) {
        r.objects++;
        r.logical_bytes += info.meta.size;
        r.stored_bytes += info.storedSize;
        bump(r.kinds, kind);
        if (reason !== undefined) bump(r.passthrough_reasons, reason);
      }
    }
    if (!page.isTruncated || page.nextStartAfter === undefined) break;
    startAfter = page.nextStartAfter;
  }
  const limit = options.deltaspaceLimit ?? 1000;
  const all = [...spaces.values()].map(finish).sort((a, b) =>
    b.logical_bytes - a.logical_bytes || b.stored_bytes - a.stored_bytes ||
    (a.deltaspace < b.deltaspace ? -1 : 1)
  );
  total.deltaspaces_total = all.length;
  total.deltaspaces_truncated = all.length > limit;
  total.deltaspaces = all.slice(0, limit);
  total.computed_at = (options.now ?? Date.now)();
  return finish(total);
}

/** Sums bucket rows into one (its deltaspace lists are not repeated). */
export function totalsOf(buckets: readonly BucketEfficiency[]): EfficiencyRow {
  const row = emptyRow();
  for (const b of buckets) {
    row.objects += b.objects;
    row.logical_bytes += b.logical_bytes;
    row.stored_bytes += b.stored_bytes;
    row.baseline_bytes += b.baseline_bytes;
    row.marker_count += b.marker_count;
    row.marker_bytes += b.marker_bytes;
    for (const [k, n] of Object.entries(b.kinds)) row.kinds[k] = (row.kinds[k] ?? 0) + n;
    for (const [k, n] of Object.entries(b.passthrough_reasons)) {
      row.passthrough_reasons[k] = (row.passthrough_reasons[k] ?? 0) + n;
    }
  }
  return finish(row);
}
