/**
 * Removing deltas and the baselines nobody uses any more. A delta's baseline is found from the
 * delta's own metadata (`deltaspace`, see DeltaMeta; absent: its parent folder), never from the
 * bucket's current policy, which may have changed since it was written. Everything runs under
 * the lock of the baseline folder it touches (the lock baseline creation and encode take):
 *
 * - parent folder: the baseline goes when no delta encoded against it is left in the folder;
 * - group (`.dg/<id>/`, or a later generation `.dg/<id>/g<N>/`): delete the delta, then its
 *   marker, then that generation's baseline when no marker of it is left (group-refs.ts). All
 *   generations of a group share the group's lock (generations.ts), so an old generation's
 *   baseline is never removed while a PUT picks or creates a generation.
 *
 * The lock orders this process only: against other svc instances over the same backend, a
 * baseline is removed through a retirement claim (baseline-guard.ts).
 */

import { SvcError } from "../lib/mod.ts";
import type { ObjectInfo } from "../storage/mod.ts";
import { baselineFolderOf, type DeltaContext, type DeltaMeta } from "./delta-context.ts";
import { isPreconditionFailed, retireBaseline, RETIRING_PREFIX } from "./fleet/baseline-guard.ts";
import { isGroupFolder } from "./groups/deltaspace-policy.ts";
import { groupFolderOfName, hasMarkers, listMarkers, removeMarker } from "./groups/group-refs.ts";
import { deltaspaceLockKey } from "./groups/generations.ts";
import { deltaspaceOf, logicalKeyOf, storedNameFor } from "./layout.ts";

/**
 * Deletes the baseline of `folder` when nothing uses it any more. Call under the folder's lock.
 * Returns whether the baseline was removed.
 */
export async function removeBaselineIfUnused(
  ctx: DeltaContext,
  bucket: string,
  folder: string,
): Promise<boolean> {
  const inUse = () =>
    isGroupFolder(folder)
      ? hasMarkers(ctx, bucket, folder)
      : parentFolderInUse(ctx, bucket, folder);
  return await retireBaseline(ctx, bucket, folder, inUse);
}

/** Whether a delta of the parent folder `folder` still decodes against its baseline. */
async function parentFolderInUse(
  ctx: DeltaContext,
  bucket: string,
  folder: string,
): Promise<boolean> {
  let startAfter: string | undefined;
  for (;;) {
    const page = await ctx.inner.listObjects(bucket, {
      prefix: folder,
      delimiter: "/",
      startAfter,
      maxKeys: 1000,
    });
    for (const info of page.objects) {
      const logical = logicalKeyOf(info.key);
      if (logical === null || logical === info.key) continue;
      // A delta written under another policy decodes against its group, not this baseline.
      if (baselineFolderOf(logical, info.meta) === folder) return true;
    }
    if (!page.isTruncated || page.nextStartAfter === undefined) return false;
    startAfter = page.nextStartAfter;
  }
}

/**
 * After the delta `removed` of `key` against `folder` is gone: its own marker (group-refs.ts),
 * then maybe the baseline.
 */
async function releaseFolder(
  ctx: DeltaContext,
  bucket: string,
  key: string,
  folder: string,
  removed: ObjectInfo,
): Promise<void> {
  if (isGroupFolder(folder)) {
    await removeMarker(ctx, bucket, folder, key, (removed.meta as DeltaMeta).markerId);
  }
  await removeBaselineIfUnused(ctx, bucket, folder);
}

function versionChanged(key: string): SvcError {
  return new SvcError("PreconditionFailed", `Delta of "${key}" was replaced meanwhile`, {
    Condition: "If-Match",
  });
}

/**
 * Deletes the stored delta of `key` (if any) and what only it used. Returns whether a delta was
 * deleted. The delta's folder is read from its metadata, then checked again under that folder's
 * lock (a concurrent write may have replaced it by a delta against another baseline); the delete
 * itself is conditional on the version seen there (another svc instance may write the key).
 * With `expected`, only that version of the delta goes: PreconditionFailed when another one is
 * there now (fleet/stored-forms.ts).
 */
export async function deleteDelta(
  ctx: DeltaContext,
  bucket: string,
  key: string,
  expected?: ObjectInfo,
): Promise<boolean> {
  const deltaName = storedNameFor(key, "delta");
  for (;;) {
    const info = expected ?? await ctx.inner.headObject(bucket, deltaName);
    if (!info) return false;
    const folder = baselineFolderOf(key, info.meta);
    const outcome = await ctx.deltaspaceLocks.run(
      deltaspaceLockKey(ctx, bucket, folder),
      async (): Promise<boolean | "moved"> => {
        const current = await ctx.inner.headObject(bucket, deltaName);
        if (!current) return false;
        if (expected && current.version !== expected.version) throw versionChanged(key);
        if (baselineFolderOf(key, current.meta) !== folder) return "moved";
        const condition = current.version !== undefined ? { ifMatch: current.version } : undefined;
        try {
          if (!(await ctx.inner.deleteObject(bucket, deltaName, condition))) return false;
        } catch (err) {
          if (expected || !isPreconditionFailed(err)) throw err;
          return "moved"; // rewritten since the HEAD: look again
        }
        await releaseFolder(ctx, bucket, key, folder, current);
        return true;
      },
    );
    if (outcome !== "moved") return outcome;
  }
}

/**
 * After a delta of `key` against another folder replaced one against `previous` (a policy
 * change; the replaced delta's marker is gone already, delta-stored.ts): the baseline of
 * `previous` goes when nothing uses it any more.
 */
export async function releaseReplaced(
  ctx: DeltaContext,
  bucket: string,
  _key: string,
  previous: string,
): Promise<void> {
  await ctx.deltaspaceLocks.run(deltaspaceLockKey(ctx, bucket, previous), async () => {
    await removeBaselineIfUnused(ctx, bucket, previous);
  });
}

/**
 * DeleteBucket of a bucket whose stored names are all svc's own (`names`: parent baselines and
 * `.dg/` files, see onlyArtifacts): no delta is left, so every baseline is unused and every
 * marker stale (a crash between a marker and its delta). Each is removed under its folder's lock,
 * checked again there in case a write landed meanwhile.
 */
export async function removeLeftoverArtifacts(
  ctx: DeltaContext,
  bucket: string,
  names: readonly string[],
): Promise<void> {
  const folders = new Set<string>();
  for (const name of names) {
    // A retirement claim left by a crashed remover: nothing else to do with it.
    if (name.startsWith(RETIRING_PREFIX)) await ctx.inner.deleteObject(bucket, name);
    else folders.add(groupFolderOfName(name) ?? deltaspaceOf(name));
  }
  for (const folder of folders) {
    await ctx.deltaspaceLocks.run(deltaspaceLockKey(ctx, bucket, folder), async () => {
      if (isGroupFolder(folder)) {
        for (const marker of await listMarkers(ctx, bucket, folder)) {
          const delta = marker.key === null
            ? null
            : await ctx.inner.headObject(bucket, storedNameFor(marker.key, "delta"));
          if (delta && baselineFolderOf(marker.key!, delta.meta) === folder) continue;
          await ctx.inner.deleteObject(bucket, marker.name);
        }
      }
      await removeBaselineIfUnused(ctx, bucket, folder);
    });
  }
}
