/**
 * Writing one stored file of the delta store: a local file staged into the inner backend, and a
 * delta stored as `<key>.delta` with its metadata (DeltaMeta: the baseline's sha256 and folder,
 * the group key, why it was stored so), a group's marker written before it (group-refs.ts); and
 * a delta PUT's own bytes handed to the rebuilt-object cache.
 */

import type { ObjectInfo, ObjectMeta, WriteCondition } from "../storage/mod.ts";
import { sourceTimeOf, storedNameFor } from "./layout.ts";
import {
  baselineFolderOf,
  type DecisionReason,
  type DeltaContext,
  type DeltaMeta,
  rebuiltOwner,
  removeQuietly,
} from "./delta-context.ts";
import type { Deltaspace } from "./groups/deltaspace-policy.ts";
import type { Spool } from "./live-encode.ts";
import { newMarkerId, removeMarker, writeMarker } from "./groups/group-refs.ts";
import { isGroupFolder } from "./groups/deltaspace-policy.ts";
import { commitOrdered, type SameWrite } from "./fleet/ordered-commit.ts";

export async function fileStream(path: string): Promise<ReadableStream<Uint8Array>> {
  return (await Deno.open(path, { read: true })).readable;
}

/**
 * Stages a local file into the inner backend under `name` and commits it with `meta` (when
 * `condition` holds: PreconditionFailed otherwise).
 */
export async function storeFile(
  ctx: DeltaContext,
  bucket: string,
  name: string,
  path: string,
  meta: ObjectMeta,
  condition?: WriteCondition,
): Promise<ObjectInfo> {
  const staged = await ctx.inner.stageObject(bucket, name, await fileStream(path));
  try {
    return await staged.commit(meta, condition);
  } catch (err) {
    await staged.abort();
    throw err;
  }
}

/**
 * Stores a local file as `name` (a key's passthrough or delta name in a compressed bucket),
 * replacing exactly the object HEADed first, stamped after it (fleet/ordered-commit.ts: another
 * instance may commit under the name at the same time). Returns the stored info and the object
 * it replaced; SlowDown when the name kept changing for longer than a write waits.
 */
export async function storeOrdered(
  ctx: DeltaContext,
  bucket: string,
  name: string,
  path: string,
  meta: ObjectMeta,
  sameWrite?: SameWrite,
): Promise<{ info: ObjectInfo; previous: ObjectInfo | null }> {
  return await commitOrdered(
    ctx.inner,
    bucket,
    name,
    meta,
    (stamped, condition) => storeFile(ctx, bucket, name, path, stamped, condition),
    { sameWrite },
  );
}

/** The fields of a stored record that are the delta store's own, not the caller's. */
const DELTA_ONLY_FIELDS = [
  "referenceSha256",
  "deltaspace",
  "deltaGroup",
  "storageReason",
  "transform",
  "codec",
  "writtenAt",
  "markerId",
  "sourceLastModified",
] as const;

/** The caller's metadata without delta-only fields. */
export function plainMeta(meta: ObjectMeta): ObjectMeta {
  const rest: Record<string, unknown> = { ...meta };
  for (const field of DELTA_ONLY_FIELDS) delete rest[field];
  return rest as unknown as ObjectMeta;
}

/** The fields of a stored record that are the store's, not the caller's (kept on a meta update). */
export function storeOwnFields(meta: ObjectMeta): Partial<DeltaMeta> {
  const stored = meta as DeltaMeta;
  const own = DELTA_ONLY_FIELDS.map((field) => [field, stored[field]] as const)
    .filter(([, value]) => value !== undefined);
  return { storage: stored.storage, ...Object.fromEntries(own) };
}

/**
 * Where a commit stores its delta, and the baseline folder of the delta it replaced when that
 * was another one (a policy change): released once the new delta is in.
 */
export interface Target {
  space: Deltaspace;
  replaced?: string;
  /** The delta stores an existing passthrough write again (background/archive-convert.ts). */
  sameWrite?: SameWrite;
}

/**
 * Stores a delta file as `<key>.delta` (a group's own marker first) and removes the marker of the
 * delta it replaced. Notes in `target.replaced` the folder of that delta, when another one.
 * `codec` is the codec that wrote it (recorded: a read decodes with it).
 */
export async function storeDelta(
  ctx: DeltaContext,
  bucket: string,
  key: string,
  target: Target,
  deltaPath: string,
  meta: ObjectMeta,
  referenceSha256: string,
  storageReason: DecisionReason,
  codec?: string,
): Promise<ObjectInfo> {
  const { space } = target;
  const deltaName = storedNameFor(key, "delta");
  const markerId = space.grouped ? newMarkerId() : undefined;
  if (space.grouped) await writeMarker(ctx, bucket, space.folder, key, markerId);
  const deltaMeta: DeltaMeta = {
    ...meta,
    storage: "delta",
    referenceSha256,
    deltaspace: space.folder,
    deltaGroup: space.label,
    storageReason,
    ...(codec ? { codec } : {}),
    ...(markerId !== undefined ? { markerId } : {}),
    ...(target.sameWrite
      ? { sourceLastModified: String(sourceTimeOf(target.sameWrite.source)) }
      : {}),
  };
  let info: ObjectInfo;
  let previous: ObjectInfo | null;
  try {
    ({ info, previous } = await storeOrdered(
      ctx,
      bucket,
      deltaName,
      deltaPath,
      deltaMeta,
      target.sameWrite,
    ));
  } catch (err) {
    // This write's own marker: no other delta counts on it.
    if (space.grouped) await removeMarker(ctx, bucket, space.folder, key, markerId).catch(() => {});
    throw err;
  }
  const previousFolder = previous ? baselineFolderOf(key, previous.meta) : undefined;
  if (previous && previousFolder !== undefined && isGroupFolder(previousFolder)) {
    // The delta this commit replaced (exactly that one: storeOrdered) is gone, so goes its own
    // marker (the folder's baseline is released below when it was another folder's).
    const previousMarker = (previous.meta as DeltaMeta).markerId;
    await removeMarker(ctx, bucket, previousFolder, key, previousMarker).catch(() => {});
  }
  if (previousFolder !== undefined && previousFolder !== space.folder) {
    target.replaced = previousFolder;
  }
  // The key's passthrough name, when older, goes once the caller is out of the lock (settleForms).
  return { ...info, key, debug: { deltaspace: space.label } };
}

/**
 * After a delta PUT, the spool holds the object's exact bytes (hashed as they arrived): renamed
 * into the rebuilt-object cache, it makes the newest version of a group read warm, at
 * passthrough speed, without a decode. The cache hashes and seals it off the PUT's path and drops
 * bytes that do not match the sha256, as for any rebuilt file. Never fails the PUT.
 */
export function warmRebuilt(
  ctx: DeltaContext,
  bucket: string,
  key: string,
  spool: Spool,
  sha256: string,
) {
  ctx.rebuiltCache.acquireBuilt(
    rebuiltOwner(ctx, bucket, storedNameFor(key, "delta")),
    sha256,
    (path) => Deno.rename(spool.path, path),
  ).then(
    (acquired) => "corrupt" in acquired ? undefined : acquired.release(),
    () => {},
  ).finally(() => removeQuietly(spool.path)); // still there when the entry existed already
}

/** Whether a delta's spool can become its rebuilt-cache entry (see warmRebuilt). */
export function warms(ctx: DeltaContext, stored: ObjectInfo, spool: Spool): boolean {
  // An encrypted backend's bytes are never kept on local disk in plaintext.
  return stored.sealed !== true && spool.size > 0 && spool.size <= ctx.rebuiltCache.maxBytes &&
    stored.meta.sha256 !== "";
}
