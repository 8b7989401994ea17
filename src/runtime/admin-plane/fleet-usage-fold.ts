/**
 * Folding the usage tallies of stopped instances (fleet-usage.ts): a document not published for
 * FOLD_AFTER_MS is merged into one shared document, `.svc/usage/~folded.json`, then removed, so
 * the documents a usage answer reads stay as many as the instances alive, not as many as ever ran.
 *
 * Nothing is lost for any reader, whatever its last scan: the folded document is itself a tally
 * whose checkpoint series of a bucket is the sum of the folded ones (at every time any of them has
 * a point, their values then added), so the writes it reports after any `since` are the sum of
 * what theirs reported (up to thinning, which over-counts a little for very old scans, as for any
 * tally). Each instance's counter has its own last scan, unknown to the others: removing a stale
 * document outright would lose its writes for an instance whose scan is older than them.
 *
 * Steps, safe with several instances folding at once: the folded document is replaced with
 * `If-Match` on the version read (created with `If-None-Match: *`), listing each folded instance
 * with the `updated_at` it had (`folded`); only then is the stale document deleted (`If-Match` on
 * the version merged). A reader reads the folded document after the others and skips a document
 * it lists, so a document is counted once whether the reader saw it before or after the fold.
 * A stale document is never published again: an instance whose own tally is older than
 * ABANDON_AFTER_MS starts a new one under a new id (fleet-usage.ts), and a live one republishes
 * at least every HEARTBEAT_MS.
 */
import { getLogger } from "../../observability/mod.ts";
import { BackendError } from "../../storage/mod.ts";
import { type CoordinationBucket, isAbsent, readDocument } from "../../jobs/mod.ts";
import {
  type Checkpoint,
  isTallyDocument,
  MAX_CHECKPOINTS,
  type TallyDocument,
} from "./fleet-usage-tally.ts";

const log = getLogger("svc::fleet-usage");

const DAY_MS = 24 * 60 * 60 * 1000;
/** A document not published for this long is a stopped instance's: folded. */
export const FOLD_AFTER_MS = 7 * DAY_MS;
/** An instance whose own tally is this old starts a new one (never republishes a foldable one). */
export const ABANDON_AFTER_MS = 6 * DAY_MS;
/** A live instance republishes its tally at least this often, written to or not. */
export const HEARTBEAT_MS = DAY_MS;
/** The instance name of the folded document. */
export const FOLDED_INSTANCE = "~folded";

/** The folded document: a tally, plus which instances' documents it holds (at their updated_at). */
export interface FoldedDocument extends TallyDocument {
  folded: Record<string, number>;
}

/** `points` thinned like a tally's (every other one of the older half) until few enough. */
function thinned(points: Checkpoint[]): Checkpoint[] {
  let out = points;
  while (out.length > MAX_CHECKPOINTS) {
    const half = Math.floor(out.length / 2);
    out = [...out.slice(0, half).filter((_, i) => i % 2 === 1), ...out.slice(half)];
  }
  return out;
}

/** The value of a checkpoint series at `at`: its last point at or before, zero before any. */
function valueAt(points: readonly Checkpoint[], at: number): [number, number, number] {
  let value: [number, number, number] = [0, 0, 0];
  for (const point of points) if (point[0] <= at) value = [point[1], point[2], point[3]];
  return value;
}

/** The sum of two checkpoint series (see the header). */
export function mergeSeries(a: readonly Checkpoint[], b: readonly Checkpoint[]): Checkpoint[] {
  const byTime = (x: Checkpoint, y: Checkpoint) => x[0] - y[0];
  const left = [...a].sort(byTime);
  const right = [...b].sort(byTime);
  const times = [...new Set([...left, ...right].map((point) => point[0]))].sort((x, y) => x - y);
  return thinned(times.map((at) => {
    const [c1, l1, s1] = valueAt(left, at);
    const [c2, l2, s2] = valueAt(right, at);
    return [at, c1 + c2, l1 + l2, s1 + s2];
  }));
}

/** `folded` with `doc` merged in, listed at its updated_at; entries not in `keep` dropped. */
export function foldInto(
  folded: FoldedDocument | null,
  doc: TallyDocument,
  keep: (instance: string) => boolean,
): FoldedDocument {
  const buckets: Record<string, Checkpoint[]> = { ...folded?.buckets };
  for (const [bucket, points] of Object.entries(doc.buckets)) {
    buckets[bucket] = mergeSeries(buckets[bucket] ?? [], points);
  }
  const listed = Object.entries(folded?.folded ?? {}).filter(([instance]) => keep(instance));
  return {
    instance: FOLDED_INSTANCE,
    started_at: Math.min(folded?.started_at ?? doc.started_at, doc.started_at),
    updated_at: Math.max(folded?.updated_at ?? 0, doc.updated_at),
    buckets,
    folded: { ...Object.fromEntries(listed), [doc.instance]: doc.updated_at },
  };
}

function isFoldedDocument(value: unknown): value is FoldedDocument {
  const doc = value as FoldedDocument;
  return isTallyDocument(value) && doc.instance === FOLDED_INSTANCE &&
    typeof doc.folded === "object" && doc.folded !== null;
}

/** Whether `doc` is held by the folded document (then it is not counted again). */
export function isFolded(folded: FoldedDocument | null, doc: TallyDocument): boolean {
  const at = folded?.folded[doc.instance];
  return at !== undefined && at >= doc.updated_at;
}

const isRefused = (err: unknown) =>
  err instanceof BackendError && (err.status === 412 || err.status === 409);

/** A document and its version (ETag), or null when absent (`doc` undefined: not JSON). */
async function readVersioned(
  shared: CoordinationBucket,
  key: string,
): Promise<{ doc: unknown; etag: string } | null> {
  const read = await readDocument(shared.client, shared.bucket, key);
  return read && { doc: read.value, etag: read.etag };
}

/** The folded document (read last by a reader: see the header), or null. */
export async function readFolded(
  shared: CoordinationBucket,
  key: string,
): Promise<FoldedDocument | null> {
  const read = await readVersioned(shared, key);
  return read && isFoldedDocument(read.doc) ? read.doc : null;
}

/**
 * Folds each of `keys` (documents of other instances, by key) that is stale at `now`; `listed`
 * is every document key seen. Returns how many were folded. Stops at the first conflict (another
 * instance folding): the next round goes on.
 */
export async function foldStale(
  shared: CoordinationBucket,
  foldedKey: string,
  keys: readonly string[],
  keyOf: (instance: string) => string,
  now: number,
): Promise<number> {
  const listed = new Set(keys);
  let count = 0;
  for (const key of keys) {
    const read = await readVersioned(shared, key).catch(() => null);
    if (!read || !isTallyDocument(read.doc) || now - read.doc.updated_at < FOLD_AFTER_MS) continue;
    const doc = read.doc;
    const current = await readVersioned(shared, foldedKey);
    const folded = current && isFoldedDocument(current.doc) ? current.doc : null;
    if (!isFolded(folded, doc)) {
      const next = foldInto(folded, doc, (instance) => listed.has(keyOf(instance)));
      const condition: Record<string, string> = current
        ? { "if-match": current.etag }
        : { "if-none-match": "*" };
      try {
        await shared.client.send({
          method: "PUT",
          bucket: shared.bucket,
          key: foldedKey,
          headers: { "content-type": "application/json", ...condition },
          body: JSON.stringify(next),
          idempotent: false,
        });
      } catch (err) {
        if (isRefused(err)) return count;
        throw err;
      }
    }
    try {
      await shared.client.send({
        method: "DELETE",
        bucket: shared.bucket,
        key,
        headers: { "if-match": read.etag },
        idempotent: true,
      });
    } catch (err) {
      // Removed by another instance, or changed (never republished: left for the next round).
      if (!isAbsent(err) && !isRefused(err)) throw err;
    }
    count++;
    log.info("a stopped instance's usage tally was folded", {
      instance: doc.instance,
      updated_at: doc.updated_at,
    });
  }
  return count;
}
