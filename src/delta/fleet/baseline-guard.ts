/**
 * One writer per baseline when several svc instances share one backend (docs/DELTA.md "Several
 * instances over one backend"). The deltaspace lock only orders the writes of one process; across
 * processes the backend's conditional writes and this protocol do:
 *
 * - Create: a baseline is committed with `If-None-Match: *`. The loser of a race gets
 *   PreconditionFailed, re-reads the winner's baseline and encodes against it (delta-write.ts).
 * - Use: a writer stores its marker (a group) or its delta (a parent folder, where the delta
 *   itself shows the baseline is in use) first, then commits the delta, then checks the baseline
 *   is still held: no fresh retirement claim for its folder, and the baseline present with the
 *   sha256 it encoded against. Otherwise the object is stored passthrough instead (its delta and
 *   marker are cleaned up like any replaced delta).
 * - Retire (the last delta gone): the remover checks nothing uses the baseline, claims the
 *   retirement with `If-None-Match: *` on `.dg/retiring/<folder hash>` (one remover at a time,
 *   and only the claimant deletes its claim), checks again, deletes the baseline, then its claim.
 *
 * Why no delta is left against a removed baseline: a writer's check that passed saw no claim and
 * then the baseline, so it ran before the claim (the baseline goes only after it); its marker was
 * stored before its check, so before the claim too, and the remover's second check, after its
 * claim, sees it and keeps the baseline. A claim older than RETIRE_STALE_MS is a remover's crash
 * leftover: writers ignore it and the next remover takes it over with `If-Match`.
 */

import { createHash } from "node:crypto";
import { SvcError } from "../../lib/mod.ts";
import type { ObjectInfo, ObjectMeta } from "../../storage/mod.ts";
import { baselineCacheKey, type DeltaContext } from "../delta-context.ts";
import { GROUP_PREFIX, referenceNameFor } from "../layout.ts";
import { storeFile } from "../delta-stored.ts";
import { getLogger } from "../../observability/mod.ts";
import { conditionalWritesHold } from "./conditional-probe.ts";

/** Where retirement claims live: under the reserved prefix, never listed, one per folder. */
export const RETIRING_PREFIX = `${GROUP_PREFIX}retiring/`;
/** A claim this old is a crashed remover's: a retirement takes milliseconds. */
export const RETIRE_STALE_MS = 10 * 60_000;

/** The retirement claim of the baseline folder `folder` (a group generation or parent folder). */
export function retiringNameFor(folder: string): string {
  return `${RETIRING_PREFIX}${createHash("sha256").update(folder).digest("hex").slice(0, 32)}`;
}

export function isPreconditionFailed(err: unknown): boolean {
  return err instanceof SvcError && err.code === "PreconditionFailed";
}

/**
 * Commits the local file `path` as the baseline `name`, only if no baseline exists there yet.
 * "lost" when another writer created it first.
 */
export async function createBaselineFile(
  ctx: DeltaContext,
  bucket: string,
  name: string,
  path: string,
  meta: ObjectMeta,
): Promise<ObjectInfo | "lost"> {
  await conditionalWritesHold(ctx, bucket); // logs once when the backend ignores the condition
  try {
    return await storeFile(ctx, bucket, name, path, meta, { ifNoneMatch: true });
  } catch (err) {
    if (isPreconditionFailed(err)) return "lost";
    throw err;
  }
}

const log = getLogger("svc::delta");

/** The sha256 of the baseline another instance created first in `folder` (undefined: gone). */
export async function winnerBaseline(
  ctx: DeltaContext,
  bucket: string,
  folder: string,
): Promise<string | undefined> {
  log.info("Another instance created the baseline first; encoding against it", { bucket, folder });
  return (await ctx.inner.headObject(bucket, referenceNameFor(folder)))?.meta.sha256;
}

/**
 * The baseline a delta was (to be) stored against is not held (above): the object is stored
 * passthrough, which removes such a delta and its marker again.
 */
export function baselineLost(
  key: string,
  deltaspace: string,
): { passthrough: "baseline_unusable" } {
  log.warn("Baseline was retired or replaced by another instance; storing the object passthrough", {
    key,
    deltaspace,
  });
  return { passthrough: "baseline_unusable" };
}

function isFresh(claim: ObjectInfo | null): boolean {
  return claim !== null && Date.now() - claim.meta.lastModified < RETIRE_STALE_MS;
}

/**
 * After a delta against the baseline of `folder` (sha256 `sha256`) was committed, and its marker
 * before it: whether that baseline is still there and no remover is retiring it. Claim first,
 * baseline second: the order the proof above needs.
 */
export async function baselineStillHeld(
  ctx: DeltaContext,
  bucket: string,
  folder: string,
  sha256: string,
): Promise<boolean> {
  if (isFresh(await ctx.inner.headObject(bucket, retiringNameFor(folder)))) return false;
  const baseline = await ctx.inner.headObject(bucket, referenceNameFor(folder));
  return baseline !== null && baseline.meta.sha256 === sha256;
}

/** Claims the retirement of `folder`'s baseline; false when another remover holds it. */
async function claimRetirement(
  ctx: DeltaContext,
  bucket: string,
  folder: string,
): Promise<boolean> {
  const name = retiringNameFor(folder);
  const body = new TextEncoder().encode(folder);
  const meta: ObjectMeta = {
    size: body.byteLength,
    etag: createHash("md5").update(body).digest("hex"),
    md5: createHash("md5").update(body).digest("hex"),
    sha256: createHash("sha256").update(body).digest("hex"),
    contentType: "text/plain; charset=utf-8",
    userMeta: {},
    headers: {},
    lastModified: Date.now(),
    storage: "passthrough",
  };
  const put = async (condition: { ifNoneMatch: true } | { ifMatch: string }) => {
    const staged = await ctx.inner.stageObject(bucket, name, new Blob([body]).stream());
    try {
      await staged.commit(meta, condition);
      return true;
    } catch (err) {
      await staged.abort();
      if (isPreconditionFailed(err)) return false;
      throw err;
    }
  };
  if (await put({ ifNoneMatch: true })) return true;
  const held = await ctx.inner.headObject(bucket, name);
  if (held === null) return await put({ ifNoneMatch: true });
  // A crashed remover's claim: taken over, exactly that version of it.
  if (!isFresh(held) && held.version !== undefined) return await put({ ifMatch: held.version });
  return false;
}

/**
 * Removes the baseline of `folder` when `inUse` says nothing uses it, before and after claiming
 * its retirement (see above). Returns whether it was removed. Call under the folder's lock.
 */
export async function retireBaseline(
  ctx: DeltaContext,
  bucket: string,
  folder: string,
  inUse: () => Promise<boolean>,
): Promise<boolean> {
  if (await inUse()) return false;
  if (!(await claimRetirement(ctx, bucket, folder))) return false;
  try {
    if (await inUse()) return false;
    ctx.referenceCache.evict(baselineCacheKey(ctx, bucket, folder));
    return await ctx.inner.deleteObject(bucket, referenceNameFor(folder));
  } finally {
    await ctx.inner.deleteObject(bucket, retiringNameFor(folder));
  }
}
