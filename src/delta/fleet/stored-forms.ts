/**
 * After a write committed one stored name of a key in a compressed bucket (`x` passthrough or
 * `x.delta`), the other name is garbage when it is older: reads already pick the newer of the two
 * (stored-order.ts). Several svc instances may write the key at once, with no lock between them,
 * so the older one is removed only under a condition (docs/DELTA.md "Several instances over one
 * backend"):
 *
 * - both names are HEADed after the commit, and whichever is older by stored-order.ts goes, never
 *   the newer, whoever wrote either (every instance decides the same from the same two HEADs);
 * - it goes with `If-Match` on the version seen (and a delta's marker and maybe its baseline
 *   after it, delta-cleanup.ts): a newer write that replaced that name meanwhile fails the
 *   condition, and both names are looked at again.
 *
 * So a write is only ever removed by one that is newer, and an overwrite can no longer lose both
 * names (instance A deleting B's fresh `x` while B deletes A's fresh `x.delta`).
 */

import { getLogger } from "../../observability/mod.ts";
import type { ObjectInfo } from "../../storage/mod.ts";
import { baselineFolderOf, type DeltaContext, type DeltaMeta } from "../delta-context.ts";
import { deleteDelta } from "../delta-cleanup.ts";
import { storedNameFor } from "../layout.ts";
import { isNewerStored } from "./stored-order.ts";
import { baselineStillHeld, isPreconditionFailed } from "./baseline-guard.ts";

const log = getLogger("svc::delta");

/** Tries before leaving both names to the read rule (each failed one saw a newer write). */
const ATTEMPTS = 4;

/** Removes the stored object `older` of `key` (its passthrough name or its delta), if unchanged. */
async function removeOlder(
  ctx: DeltaContext,
  bucket: string,
  key: string,
  older: ObjectInfo,
): Promise<void> {
  if (older.key !== key) {
    await deleteDelta(ctx, bucket, key, older);
    return;
  }
  const condition = older.version !== undefined ? { ifMatch: older.version } : undefined;
  await ctx.inner.deleteObject(bucket, key, condition);
}

/**
 * Whether the delta `delta` of `key` can be rebuilt: its baseline still held (baseline-guard.ts).
 * A delta another instance just committed may not be: its writer then stores the object
 * passthrough, and until it has, the key's passthrough copy is what reads serve.
 */
async function baselineHolds(
  ctx: DeltaContext,
  bucket: string,
  key: string,
  delta: ObjectInfo,
): Promise<boolean> {
  const sha256 = (delta.meta as DeltaMeta).referenceSha256;
  if (sha256 === undefined) return true;
  return await baselineStillHeld(ctx, bucket, baselineFolderOf(key, delta.meta), sha256);
}

/**
 * After `committed` (the stored name just written: `key` or `key.delta`) was committed: removes
 * whichever of the key's two stored names is older, when both exist. The passthrough copy goes
 * for a newer delta only when that delta can be rebuilt: checked unless it is the caller's own,
 * already checked, commit (`verified`, its version). Call outside any deltaspace lock (a
 * delta's cleanup takes its folder's).
 */
export async function settleForms(
  ctx: DeltaContext,
  bucket: string,
  key: string,
  committed: string,
  verified?: string,
): Promise<void> {
  const other = committed === key ? storedNameFor(key, "delta") : key;
  for (let attempt = 1;; attempt++) {
    // Nothing under the other name: the usual case, one HEAD.
    const theirs = await ctx.inner.headObject(bucket, other);
    if (!theirs) return;
    const ours = await ctx.inner.headObject(bucket, committed);
    // Ours is gone already: removed as the older one, or deleted; the other name stays.
    if (!ours) return;
    const [older, newer] = isNewerStored(ours, theirs) ? [theirs, ours] : [ours, theirs];
    const unchecked = newer.key !== key && (verified === undefined || newer.version !== verified);
    if (unchecked && !(await baselineHolds(ctx, bucket, key, newer))) return;
    try {
      await removeOlder(ctx, bucket, key, older);
      return;
    } catch (err) {
      if (!isPreconditionFailed(err)) throw err;
      if (attempt === ATTEMPTS) {
        // Reads still pick the newer name; the next write of the key removes the older.
        log.warn("Both stored names of a key stay: they kept changing during its cleanup", {
          bucket,
          key,
        });
        return;
      }
    }
  }
}
