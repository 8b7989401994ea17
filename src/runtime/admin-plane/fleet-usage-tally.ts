/**
 * The writes one instance of a fleet made, per bucket, as the other instances need them to make
 * their usage counters fleet-wide (fleet-usage.ts).
 *
 * Each instance's usage counter (objects/usage) is a scan of the shared backend plus the writes
 * that instance observed since. Writes through the other instances reach it only at its next
 * scan. So every instance also keeps a running tally of its own writes per bucket (object count,
 * logical and stored bytes; negative after removals) under a stable instance id (a restart
 * resumes it), and publishes it with a short history of checkpoints `[at, count, logical,
 * stored]`. A reader whose counter of bucket `b` was established at `since` (its last scan, or
 * the bucket's creation) takes, for every instance, the tally now minus the tally at the last
 * checkpoint at or before `since`: exactly the writes made there after its scan, up to the
 * publish delay and the clock skew between instances. An instance that stopped leaves its last
 * tally, still counted until the reader's next scan of the bucket moves `since` past it.
 */
import type { ObjectInfo } from "../../storage/mod.ts";

/** `[at (Unix ms), object count, logical bytes, stored bytes]`: cumulative since `started_at`. */
export type Checkpoint = [number, number, number, number];

/** What an instance publishes (`.svc/usage/<instance>.json` in the coordination bucket). */
export interface TallyDocument {
  instance: string;
  started_at: number;
  updated_at: number;
  buckets: Record<string, Checkpoint[]>;
}

/** Checkpoints kept per bucket; older ones are thinned (a reader then over-counts a little). */
export const MAX_CHECKPOINTS = 48;

export interface Delta {
  count: number;
  logical: number;
  stored: number;
}

function thin(points: Checkpoint[]): Checkpoint[] {
  if (points.length <= MAX_CHECKPOINTS) return points;
  // Every other one of the older half goes; the recent half stays exact.
  const half = Math.floor(points.length / 2);
  return [...points.slice(0, half).filter((_, i) => i % 2 === 1), ...points.slice(half)];
}

/** This instance's writes per bucket, and the document it publishes. */
export class WriteTally {
  readonly instance: string;
  readonly startedAt: number;
  readonly #now: () => number;
  readonly #totals = new Map<string, Delta>();
  readonly #history = new Map<string, Checkpoint[]>();
  readonly #dirty = new Set<string>();
  readonly #onChange: () => void;

  /** `previous`: this instance's last published document (a restart goes on from it). */
  constructor(
    instance: string,
    options: { onChange?: () => void; now?: () => number; previous?: TallyDocument | null } = {},
  ) {
    this.instance = instance;
    this.#now = options.now ?? Date.now;
    this.#onChange = options.onChange ?? (() => {});
    const previous = options.previous;
    this.startedAt = previous?.started_at ?? this.#now();
    for (const [bucket, points] of Object.entries(previous?.buckets ?? {})) {
      const last = points[points.length - 1];
      if (last === undefined) continue;
      this.#history.set(bucket, [...points]);
      this.#totals.set(bucket, { count: last[1], logical: last[2], stored: last[3] });
    }
  }

  /** This instance's writes to `bucket` so far (published or not). */
  totals(bucket: string): Delta {
    return { ...(this.#totals.get(bucket) ?? { count: 0, logical: 0, stored: 0 }) };
  }

  #add(bucket: string, count: number, logical: number, stored: number): void {
    let totals = this.#totals.get(bucket);
    if (totals === undefined) {
      this.#totals.set(bucket, totals = { count: 0, logical: 0, stored: 0 });
    }
    totals.count += count;
    totals.logical += logical;
    totals.stored += stored;
    this.#dirty.add(bucket);
    this.#onChange();
  }

  /** A commit (with the object it replaced), as the usage counter counts it. */
  committed(bucket: string, info: ObjectInfo, replaced: ObjectInfo | null): void {
    let stored = info.storedSize;
    // A new baseline: its bytes are stored too (objects/usage/usage.ts counts them the same way).
    if (info.debug?.decision === "reference") {
      stored += info.debug.baselineBytes ?? info.meta.size;
    }
    this.#add(
      bucket,
      replaced === null ? 1 : 0,
      info.meta.size - (replaced?.meta.size ?? 0),
      stored - (replaced?.storedSize ?? 0),
    );
  }

  removed(bucket: string, info: ObjectInfo): void {
    this.#add(bucket, -1, -info.meta.size, -info.storedSize);
  }

  /** Whether writes happened since the last `document()`. */
  get dirty(): boolean {
    return this.#dirty.size > 0;
  }

  /** The document to publish now: a checkpoint added for every bucket written since the last. */
  document(): TallyDocument {
    const at = this.#now();
    for (const bucket of this.#dirty) {
      const { count, logical, stored } = this.#totals.get(bucket)!;
      const points = this.#history.get(bucket) ?? [];
      points.push([at, count, logical, stored]);
      this.#history.set(bucket, thin(points));
    }
    this.#dirty.clear();
    return {
      instance: this.instance,
      started_at: this.startedAt,
      updated_at: at,
      buckets: Object.fromEntries(this.#history),
    };
  }
}

/** Whether `value` is a document `WriteTally.document` could have made (else it is ignored). */
export function isTallyDocument(value: unknown): value is TallyDocument {
  const doc = value as TallyDocument;
  if (typeof doc?.instance !== "string" || typeof doc.updated_at !== "number") return false;
  if (typeof doc.buckets !== "object" || doc.buckets === null) return false;
  return Object.values(doc.buckets).every((points) =>
    Array.isArray(points) &&
    points.every((p) => Array.isArray(p) && p.length === 4 && p.every(Number.isFinite))
  );
}

/** The writes `docs` made to `bucket` after `since` (Unix ms). */
export function writesSince(docs: readonly TallyDocument[], bucket: string, since: number): Delta {
  const sum: Delta = { count: 0, logical: 0, stored: 0 };
  for (const doc of docs) {
    const points = doc.buckets[bucket];
    if (!points || points.length === 0) continue;
    const last = points[points.length - 1];
    let base: Checkpoint | undefined;
    for (const point of points) if (point[0] <= since) base = point;
    sum.count += last[1] - (base?.[1] ?? 0);
    sum.logical += last[2] - (base?.[2] ?? 0);
    sum.stored += last[3] - (base?.[3] ?? 0);
  }
  return sum;
}
