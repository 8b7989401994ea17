/**
 * What a stored name of a compressed bucket is, seen below the delta layer (docs/DELTA.md,
 * "Diagnostics"). Works with both layouts a store can hold:
 *
 * - folder deltaspaces: `<folder>/reference.bin` (baseline) and `<key>.delta` (delta, deltaspace =
 *   the key's parent folder);
 * - version groups: `.dg/<id>/reference.bin` (baseline; its metadata may carry the group key),
 *   `.dg/<id>/refs/*` (markers, stored overhead), and deltas whose metadata names their
 *   deltaspace (`deltaspace: ".dg/<id>/"`). A group re-baselined (docs/DELTA.md, "Re-baselining")
 *   has each later generation as a deltaspace of its own: `.dg/<id>/g<N>/reference.bin`,
 *   `.dg/<id>/g<N>/refs/*`, deltas with `deltaspace: ".dg/<id>/g<N>/"`.
 *
 * Anything else is a passthrough object stored under its own key. In a bucket with compression
 * off every name is a passthrough object.
 */
import { deltaspaceOf, logicalKeyOf, REFERENCE_NAME } from "../../delta/mod.ts";
import type { ObjectInfo } from "../../storage/mod.ts";

export const GROUP_PREFIX = ".dg/";
/** A group marker: `.dg/<id>/refs/…`, or of a later baseline generation `.dg/<id>/g<N>/refs/…`. */
const MARKER = /^\.dg\/[^/]+\/(?:g[1-9][0-9]*\/)?refs\//;

export type StoredRole =
  | { role: "baseline"; deltaspace: string }
  | { role: "marker"; deltaspace: string }
  | { role: "delta"; key: string; deltaspace: string }
  | { role: "passthrough"; key: string };

/** A string field of an object's metadata record that older code did not write. */
export function metaString(info: ObjectInfo, field: string): string | undefined {
  const value = (info.meta as unknown as Record<string, unknown>)[field];
  return typeof value === "string" && value !== "" ? value : undefined;
}

/** The deltaspace a delta was encoded in: its `deltaspace` meta field, else its parent folder. */
export function deltaDeltaspace(info: ObjectInfo, logicalKey: string): string {
  return metaString(info, "deltaspace") ?? deltaspaceOf(logicalKey);
}

export function roleOf(info: ObjectInfo, compressed: boolean): StoredRole | null {
  const name = info.key;
  if (!compressed) return { role: "passthrough", key: name };
  if (MARKER.test(name)) {
    return { role: "marker", deltaspace: name.slice(0, name.indexOf("/refs/") + 1) };
  }
  if (name.slice(name.lastIndexOf("/") + 1) === REFERENCE_NAME) {
    return { role: "baseline", deltaspace: deltaspaceOf(name) };
  }
  const key = logicalKeyOf(name);
  if (key === null) return null; // `.delta` or `a/.delta`: nothing svc writes
  if (key !== name) return { role: "delta", key, deltaspace: deltaDeltaspace(info, key) };
  return { role: "passthrough", key };
}

/**
 * The logical key a marker stands for: its user metadata `key` (URL-encoded by the writer), else a
 * top-level `key` field, else the name after `refs/` (URL-decoded when it decodes).
 */
export function markerKeyOf(info: ObjectInfo): string {
  const raw = recordedMarkerKey(info) ??
    info.key.slice(info.key.indexOf("/refs/") + "/refs/".length);
  try {
    return decodeURIComponent(raw);
  } catch {
    return raw;
  }
}

/**
 * The key a marker's metadata records, undefined when the record at hand has none (an S3
 * listing carries no user metadata: HEAD the marker for it).
 */
export function recordedMarkerKey(info: ObjectInfo): string | undefined {
  return info.meta.userMeta?.key ?? metaString(info, "key");
}

/** Why an object went passthrough: its `storageReason`, `unknown` when older code wrote it. */
export function passthroughReason(info: ObjectInfo, compressed: boolean): string {
  if (!compressed) return "compression_off";
  return metaString(info, "storageReason") ?? "unknown";
}

/** The group key a baseline or delta records (`deltaGroup`), if any. */
export function groupKeyOf(info: ObjectInfo): string | undefined {
  return metaString(info, "deltaGroup") ?? metaString(info, "groupKey");
}
