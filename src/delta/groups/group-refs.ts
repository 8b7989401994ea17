/**
 * Reference markers of a group deltaspace (`auto` and template policies): a group's deltas live
 * beside their keys (`<key>.delta`), far from the baseline `.dg/<id>/reference.bin`, so a listing
 * of the group's folder cannot tell whether a delta still uses it. Each delta stored against the
 * baseline therefore has a small marker `.dg/<id>/refs/<sha256(key) hex>` (body and user metadata
 * `key`: the logical key), written before the delta and removed after it:
 *
 * - a crash between marker and delta leaves a marker without delta: at worst a baseline kept too
 *   long (a leak, swept when the bucket is deleted), never a baseline removed under a delta;
 * - the baseline goes when its last marker does (under the group's lock, delta-cleanup.ts).
 *
 * Each delta write has a marker of its own, `refs/<sha256(key) hex>.<markerId>` (the id is in the
 * delta's metadata): two svc instances writing one key at once each hold theirs, so the cleanup
 * of one write's delta never removes the marker of another's (docs/DELTA.md "Several instances
 * over one backend"). Deltas written before keep the shared marker without an id.
 *
 * A later baseline generation (generations.ts) has the same layout one level down:
 * `.dg/<id>/g<N>/reference.bin` and `.dg/<id>/g<N>/refs/…`.
 */

import { createHash } from "node:crypto";
import type { ObjectMeta } from "../../storage/mod.ts";
import type { DeltaContext } from "../delta-context.ts";

const REFS = "refs/";
const encoder = new TextEncoder();

function hex(algorithm: "sha256" | "md5", data: Uint8Array): string {
  return createHash(algorithm).update(data).digest("hex");
}

/** The marker of `key` in the group folder `folder` (`.dg/<id>/`): one write's when `id`. */
export function markerName(folder: string, key: string, id?: string): string {
  const name = `${folder}${REFS}${hex("sha256", encoder.encode(key))}`;
  return id === undefined ? name : `${name}.${id}`;
}

/** A new marker id: unique per delta write. */
export function newMarkerId(): string {
  return crypto.randomUUID().replaceAll("-", "").slice(0, 16);
}

/**
 * The group folder of a stored name under `.dg/`, or null: `.dg/<id>/`, or the generation folder
 * `.dg/<id>/g<N>/` for the names of a later generation (generations.ts).
 */
export function groupFolderOfName(name: string): string | null {
  const match = /^\.dg\/[^/]+\/(?:g[1-9][0-9]*\/)?/.exec(name);
  return match ? match[0] : null;
}

/** Writes the marker `id` of `key`: its delta is about to be stored against `folder`. */
export async function writeMarker(
  ctx: DeltaContext,
  bucket: string,
  folder: string,
  key: string,
  id?: string,
): Promise<void> {
  const body = encoder.encode(key);
  const meta: ObjectMeta = {
    size: body.byteLength,
    etag: hex("md5", body),
    md5: hex("md5", body),
    sha256: hex("sha256", body),
    contentType: "text/plain; charset=utf-8",
    userMeta: { key: encodeURIComponent(key) },
    headers: {},
    lastModified: Date.now(),
    storage: "passthrough",
  };
  const staged = await ctx.inner.stageObject(
    bucket,
    markerName(folder, key, id),
    new Blob([body]).stream(),
  );
  try {
    await staged.commit(meta);
  } catch (err) {
    await staged.abort();
    throw err;
  }
}

export async function removeMarker(
  ctx: DeltaContext,
  bucket: string,
  folder: string,
  key: string,
  id?: string,
): Promise<void> {
  await ctx.inner.deleteObject(bucket, markerName(folder, key, id));
}

/** Whether any marker is left in the group folder. */
export async function hasMarkers(
  ctx: DeltaContext,
  bucket: string,
  folder: string,
): Promise<boolean> {
  const page = await ctx.inner.listObjects(bucket, { prefix: folder + REFS, maxKeys: 1 });
  return page.objects.length > 0;
}

/** The markers of a group folder with the logical key each names (null when unreadable). */
export async function listMarkers(
  ctx: DeltaContext,
  bucket: string,
  folder: string,
): Promise<Array<{ name: string; key: string | null }>> {
  const out: Array<{ name: string; key: string | null }> = [];
  let startAfter: string | undefined;
  for (;;) {
    const page = await ctx.inner.listObjects(bucket, {
      prefix: folder + REFS,
      startAfter,
      maxKeys: 1000,
    });
    for (const info of page.objects) {
      const raw = info.meta.userMeta.key;
      let key: string | null = null;
      try {
        key = raw === undefined ? null : decodeURIComponent(raw);
      } catch {
        key = null;
      }
      out.push({ name: info.key, key });
    }
    if (!page.isTruncated || page.nextStartAfter === undefined) return out;
    startAfter = page.nextStartAfter;
  }
}
