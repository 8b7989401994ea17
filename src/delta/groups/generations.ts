/**
 * Baseline generations of a group deltaspace (re-baselining, docs/DELTA.md "Re-baselining").
 *
 * A group's first baseline is generation 0, `.dg/<id>/reference.bin` with markers in
 * `.dg/<id>/refs/` (the layout written before generations, so old data is generation 0 as it is).
 * When the versions of a group drift away from its baseline, a later version becomes generation
 * N >= 1: `.dg/<id>/g<N>/reference.bin` with its own markers `.dg/<id>/g<N>/refs/`. Each
 * generation folder is a deltaspace of its own for everything below (a delta's metadata names it:
 * `deltaspace: ".dg/<id>/g<N>/"`), so old deltas keep decoding from where they were made and a
 * generation's baseline goes when its last marker does, as a generation-0 baseline always did.
 *
 * - One lock for the whole group: every generation folder of `.dg/<id>/` is locked under the
 *   group root's key (deltaspaceLockKey), so a PUT choosing the current generation, a rebaseline
 *   and a cleanup removing an old generation's baseline never interleave.
 * - The current generation is the highest N whose folder holds anything (a LIST of `.dg/<id>/`
 *   with delimiter `/`: generation folders are common prefixes). A hint per group kept in memory
 *   (validated by a HEAD of its baseline, the HEAD every PUT made before generations) spares
 *   that LIST on later PUTs: a PUT costs one LIST only the first time a process sees a group, or
 *   after the hinted generation's baseline went away.
 * - A new generation is always max + 1 of a fresh LIST, so it never overwrites a baseline.
 * - Trigger (delta-write.ts): an encode against the current generation whose delta is over
 *   `rebaseline ratio` of the object (or that missed `max_delta_ratio`) counts a strike; from
 *   REBASELINE_STREAK strikes in a row on, the object that struck last becomes the new
 *   generation's baseline once that has paid for itself (countStrike: the generation's deltas
 *   took more beyond a fresh baseline's than the new baseline costs); any smaller delta resets
 *   the count. The
 *   count lives in memory (a restart costs at most a few more big deltas), and a single odd
 *   version never moves the baseline by itself.
 */

import type { ObjectInfo } from "../../storage/mod.ts";
import { baselineCacheKey, type DeltaContext } from "../delta-context.ts";
import { GROUP_PREFIX, referenceNameFor } from "../layout.ts";

/** Strikes in a row (deltas over the rebaseline ratio) that move a group to a new generation. */
export const REBASELINE_STREAK = 2;
/**
 * How many times its cost the excess of a generation's deltas must reach before a new baseline is
 * bought (countStrike). 1 would be the textbook rent-or-buy rule; 1.5 keeps a series whose deltas
 * jumped once and stopped growing from buying one for its last versions (typescript's six
 * releases reach 1.03 at the fifth, 1.42 at the sixth, docs/BENCHMARKS.md), and moves a drift of
 * 12% per version at its seventh version.
 */
export const REBASELINE_PAYBACK = 1.5;
/** Default share of the object size past which a delta counts a strike. */
export const DEFAULT_REBASELINE_RATIO = 0.2;
/** Env override of the ratio; `0` turns re-baselining off. */
export const REBASELINE_RATIO_ENV = "SVC_REBASELINE_RATIO";

/** How many groups' hints and strike counts are remembered before the tables start over. */
const MAX_TRACKED_GROUPS = 10_000;

const GENERATION = /^(\.dg\/[^/]+\/)(?:g([1-9][0-9]*)\/)?$/;

/** The folder of generation `n` of the group root `.dg/<id>/`. */
export function generationFolder(root: string, n: number): string {
  return n === 0 ? root : `${root}g${n}/`;
}

/** The group root (`.dg/<id>/`) of a generation folder; any other folder as it is. */
export function groupRootOf(folder: string): string {
  const match = GENERATION.exec(folder);
  return match ? match[1] : folder;
}

/** The generation number of a group folder (0 for the root and for non-group folders). */
export function generationOf(folder: string): number {
  const match = GENERATION.exec(folder);
  return match?.[2] ? Number(match[2]) : 0;
}

/** The lock of a baseline folder: one per group (all its generations), else the folder's own. */
export function deltaspaceLockKey(
  ctx: Pick<DeltaContext, "bucketIdentity">,
  bucket: string,
  folder: string,
): string {
  return baselineCacheKey(
    ctx,
    bucket,
    folder.startsWith(GROUP_PREFIX) ? groupRootOf(folder) : folder,
  );
}

/** The rebaseline ratio: SVC_REBASELINE_RATIO when a number in [0, 1], else the default. */
export function rebaselineRatio(): number {
  const raw = Deno.env.get(REBASELINE_RATIO_ENV);
  const value = raw === undefined || raw.trim() === "" ? NaN : Number(raw);
  return Number.isFinite(value) && value >= 0 && value <= 1 ? value : DEFAULT_REBASELINE_RATIO;
}

/** What the strike count remembers of a group's current generation. */
interface Streak {
  /** Strikes in a row. */
  count: number;
  /** The smallest delta of the generation so far (a share of its object): a fresh baseline's. */
  fresh: number;
  /** Bytes the generation's deltas took beyond `fresh`: what an up-to-date baseline saves. */
  excess: number;
}

interface GroupState {
  /** Current generation per group lock key (a hint: checked before use). */
  hints: Map<string, number>;
  /** The streak per group lock key. */
  strikes: Map<string, Streak>;
}

const states = new WeakMap<object, GroupState>();

function stateOf(ctx: DeltaContext): GroupState {
  let state = states.get(ctx);
  if (!state) {
    state = { hints: new Map(), strikes: new Map() };
    states.set(ctx, state);
  }
  return state;
}

function remember<T>(table: Map<string, T>, key: string, value: T) {
  if (table.size >= MAX_TRACKED_GROUPS && !table.has(key)) table.clear();
  table.set(key, value);
}

/** The generation folders present under `root` (their numbers; 0 always included). */
async function highestGeneration(ctx: DeltaContext, bucket: string, root: string) {
  let highest = 0;
  let startAfter: string | undefined;
  for (;;) {
    const page = await ctx.inner.listObjects(bucket, {
      prefix: root,
      delimiter: "/",
      startAfter,
      maxKeys: 1000,
    });
    for (const prefix of page.commonPrefixes) highest = Math.max(highest, generationOf(prefix));
    if (!page.isTruncated || page.nextStartAfter === undefined) return highest;
    startAfter = page.nextStartAfter;
  }
}

/**
 * The current generation of the group `root`: its folder and baseline (null: none yet, the next
 * object creates it there). Call under the group's lock.
 */
export async function currentGeneration(
  ctx: DeltaContext,
  bucket: string,
  root: string,
): Promise<{ folder: string; reference: ObjectInfo | null }> {
  const key = deltaspaceLockKey(ctx, bucket, root);
  const { hints } = stateOf(ctx);
  const hinted = hints.get(key);
  let hintedHead: ObjectInfo | null | undefined;
  if (hinted !== undefined) {
    // Error is not absence: a failed HEAD throws and aborts the PUT.
    hintedHead = await ctx.inner.headObject(
      bucket,
      referenceNameFor(generationFolder(root, hinted)),
    );
    if (hintedHead) return { folder: generationFolder(root, hinted), reference: hintedHead };
  }
  const n = await highestGeneration(ctx, bucket, root);
  remember(hints, key, n);
  const folder = generationFolder(root, n);
  const reference = n === hinted
    ? null
    : await ctx.inner.headObject(bucket, referenceNameFor(folder));
  return { folder, reference };
}

/**
 * The folder of a new generation of `root`: one past the highest present (a fresh LIST, so an
 * existing baseline is never overwritten). Call under the group's lock.
 */
export async function nextGenerationFolder(
  ctx: DeltaContext,
  bucket: string,
  root: string,
): Promise<string> {
  return generationFolder(root, (await highestGeneration(ctx, bucket, root)) + 1);
}

/** Records that generation `folder` now holds the group's current baseline. */
export function noteGeneration(ctx: DeltaContext, bucket: string, folder: string) {
  remember(stateOf(ctx).hints, deltaspaceLockKey(ctx, bucket, folder), generationOf(folder));
}

/**
 * The folder a live encode (no lock held) should try first: the group's hinted generation, the
 * root when unknown. The commit checks it under the lock (a mismatch re-encodes from the spool).
 */
export function hintedFolder(ctx: DeltaContext, bucket: string, folder: string): string {
  if (!folder.startsWith(GROUP_PREFIX)) return folder;
  const root = groupRootOf(folder);
  const hinted = stateOf(ctx).hints.get(deltaspaceLockKey(ctx, bucket, root));
  return generationFolder(root, hinted ?? 0);
}

/**
 * What an encode tells the cost-aware trigger: its delta (an encode cut off at the max ratio is
 * stored whole: its `deltaBytes` is the object's size), the object's size, and what a new baseline
 * of it would store (its size times the current baseline's stored/logical ratio).
 */
export interface StrikeCost {
  deltaBytes: number;
  size: number;
  baselineCost: number;
}

/**
 * Counts an encode against the current generation of a group: `grown` when its delta passed the
 * rebaseline ratio (or the max ratio). True when the object should become the new generation's
 * baseline (the count starts over): REBASELINE_STREAK strikes in a row, and, given `cost`, the
 * new baseline paid for (cost-aware re-baselining): the generation's deltas have already taken
 * REBASELINE_PAYBACK times more bytes beyond what deltas against a fresh baseline take (the
 * generation's smallest delta) than the new baseline costs. Like renting against buying, this
 * bounds what a wrong guess costs against the best choice made in hindsight: a short series with
 * one big jump (deltas that stay large) ends before its excess reaches a baseline, a drifting
 * series (deltas that keep growing) gets one after about sqrt(3 / drift) versions, near the
 * optimum of the model in DELTA.md. Call under the group's lock.
 */
export function countStrike(
  ctx: DeltaContext,
  bucket: string,
  folder: string,
  grown: boolean,
  cost?: StrikeCost,
): boolean {
  const key = deltaspaceLockKey(ctx, bucket, folder);
  const { strikes } = stateOf(ctx);
  const share = cost ? Math.min(1, cost.deltaBytes / Math.max(1, cost.size)) : 0;
  const streak = strikes.get(key) ?? { count: 0, fresh: share, excess: 0 };
  const fresh = Math.min(streak.fresh, share);
  const excess = streak.excess + (cost ? Math.max(0, cost.deltaBytes - fresh * cost.size) : 0);
  const count = grown ? streak.count + 1 : 0;
  if (count >= REBASELINE_STREAK && (!cost || excess >= REBASELINE_PAYBACK * cost.baselineCost)) {
    strikes.delete(key); // the new generation starts afresh
    return true;
  }
  remember(strikes, key, { count, fresh, excess });
  return false;
}

/** Whether an encode's delta counts as grown: over the rebaseline ratio, or cut off (max ratio). */
export function deltaGrown(
  encoded: { aborted: true } | { aborted: false; deltaBytes: number },
  size: number,
  ratio = rebaselineRatio(),
): boolean {
  if (ratio <= 0 || size <= 0) return false;
  return encoded.aborted || encoded.deltaBytes > size * ratio;
}
