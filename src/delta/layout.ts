/**
 * Names of delta-compression artifacts on the backend (SPEC item 12, DESIGN "Storage format").
 *
 * - Deltaspace: the key's prefix up to and including its last `/` ("" for root keys).
 * - Passthrough objects are stored under their own key, deltas under `<key>.delta`, and each
 *   deltaspace's baseline under `<deltaspace>reference.bin`.
 * - Listings hide baselines and report a delta under its logical key.
 *
 * Reserved names apply only to buckets with compression on: there a client key named
 * `reference.bin` (in any deltaspace) or ending in `.delta` is refused with 400 InvalidArgument,
 * because it would collide with an artifact. In a bucket with `compression: false` these are
 * ordinary keys, stored and listed verbatim; that is what lets one svc be the S3 backend of
 * another (the outer svc writes `x.delta` and `reference.bin` into a bucket of the inner one,
 * which must keep them as plain objects). Only such buckets may serve as the backend of another
 * svc.
 *
 * - Group baselines (the `auto` and template deltaspace policies) and their reference markers
 *   live under the reserved prefix `.dg/` (deltaspace-policy.ts, group-refs.ts): hidden from
 *   listings, and client keys starting with `.dg/` are refused in a compressed bucket.
 *
 * Names are matched case-sensitively, as S3 keys are.
 */

import { compareUtf8, SvcError } from "../lib/mod.ts";
import type { ObjectInfo, StorageKind } from "../storage/mod.ts";

export const REFERENCE_NAME = "reference.bin";
export const DELTA_SUFFIX = ".delta";
/** The reserved prefix of group baselines and their reference markers. */
export const GROUP_PREFIX = ".dg/";

/** The key's prefix up to and including its last `/`; "" for root keys. */
export function deltaspaceOf(key: string): string {
  return key.slice(0, key.lastIndexOf("/") + 1);
}

/** The stored name of the deltaspace's baseline. */
export function referenceNameFor(deltaspace: string): string {
  return deltaspace + REFERENCE_NAME;
}

/**
 * Where an object stored as `kind` lives on the backend. For `reference`, `key` is any key of the
 * deltaspace (or the deltaspace itself) and the answer is that deltaspace's baseline.
 */
export function storedNameFor(key: string, kind: StorageKind): string {
  switch (kind) {
    case "passthrough":
      return key;
    case "delta":
      return key + DELTA_SUFFIX;
    case "reference":
      return referenceNameFor(deltaspaceOf(key));
  }
}

function baseName(name: string): string {
  return name.slice(name.lastIndexOf("/") + 1);
}

/** A baseline, a delta or a group's file: hidden from (or renamed in) compressed listings. */
export function isInternalName(name: string): boolean {
  return baseName(name) === REFERENCE_NAME || name.endsWith(DELTA_SUFFIX) ||
    name.startsWith(GROUP_PREFIX);
}

/**
 * The client-visible key of a stored name in a bucket with compression on: `x.delta` is `x`,
 * anything else not internal is itself. null for names that never show: baselines, `.dg/` names
 * and `.delta`
 * names svc cannot have written because their logical key would be empty or a directory marker
 * (`.delta`, `a/.delta`).
 */
export function logicalKeyOf(storedName: string): string | null {
  if (baseName(storedName) === REFERENCE_NAME || storedName.startsWith(GROUP_PREFIX)) return null;
  if (!storedName.endsWith(DELTA_SUFFIX)) return storedName;
  const logical = storedName.slice(0, -DELTA_SUFFIX.length);
  return logical === "" || logical.endsWith("/") ? null : logical;
}

/**
 * Refuses client keys that collide with artifacts, before any state changes. A no-op when
 * compression is off for the bucket (see the header).
 */
export function validateClientKey(key: string, compressionEnabled: boolean): void {
  if (!compressionEnabled) return;
  if (baseName(key) === REFERENCE_NAME) {
    throw new SvcError(
      "InvalidArgument",
      `Object names called ${REFERENCE_NAME} are reserved in buckets with compression enabled.`,
      { ArgumentName: "key", ArgumentValue: key },
    );
  }
  if (key.startsWith(GROUP_PREFIX)) {
    throw new SvcError(
      "InvalidArgument",
      `Object names starting with ${GROUP_PREFIX} are reserved in buckets with compression enabled.`,
      { ArgumentName: "key", ArgumentValue: key },
    );
  }
  if (key.endsWith(DELTA_SUFFIX)) {
    throw new SvcError(
      "InvalidArgument",
      `Object names ending in ${DELTA_SUFFIX} are reserved in buckets with compression enabled.`,
      { ArgumentName: "key", ArgumentValue: key },
    );
  }
}

export interface LogicalPageOptions {
  /** The client's prefix: a `.delta` name can match it when its logical key does not. */
  prefix?: string;
  /** The client's start-after (or continuation key), compared with logical keys. */
  startAfter?: string;
}

/**
 * Maps one page of stored listing entries of a compressed bucket to logical entries: baselines
 * are dropped, deltas renamed, entries outside the client's prefix or not after its startAfter
 * are dropped, and the result is re-sorted by logical key (see mergeLogicalOrder). Sizes and
 * ETags already come from the logical metadata (`meta.size`, `meta.etag`). When both `x` and
 * `x.delta` are present (an overwrite that changed storage kind, between its write and its
 * cleanup), the one with the later lastModified wins.
 */
/**
 * `info` as clients see it: an object stored again later for the same write (a background
 * archive conversion, background/archive-convert.ts) reports the Last-Modified of that write,
 * which its metadata keeps in `sourceLastModified` (an S3 backend sets its own on every write).
 */
export function withSourceTime(info: ObjectInfo): ObjectInfo {
  const source = Number((info.meta as { sourceLastModified?: string }).sourceLastModified);
  if (!Number.isFinite(source) || source === info.meta.lastModified) return info;
  return { ...info, meta: { ...info.meta, lastModified: source } };
}

/** The Last-Modified of the write a stored object holds (withSourceTime), in ms. */
export function sourceTimeOf(info: ObjectInfo): number {
  return withSourceTime(info).meta.lastModified;
}

export function toLogicalEntries(
  stored: readonly ObjectInfo[],
  options: LogicalPageOptions = {},
): ObjectInfo[] {
  const byKey = new Map<string, ObjectInfo>();
  for (const listed of stored) {
    const info = withSourceTime(listed);
    const key = logicalKeyOf(info.key);
    if (key === null) continue;
    if (options.prefix !== undefined && !key.startsWith(options.prefix)) continue;
    if (options.startAfter !== undefined && compareUtf8(key, options.startAfter) <= 0) continue;
    const previous = byKey.get(key);
    if (previous !== undefined && previous.meta.lastModified >= info.meta.lastModified) continue;
    byKey.set(key, key === info.key ? info : { ...info, key });
  }
  return mergeLogicalOrder([...byKey.values()]);
}

/**
 * Re-sorts entries by key in UTF-8 byte order (stable). Needed because stripping `.delta` moves
 * a key relative to its neighbours: stored `x-y` < `x.delta` (`-` is 0x2D, `.` is 0x2E), but
 * logically `x` < `x-y`.
 *
 * Page-boundary caveat for the listing code: sorting one page is not enough. A backend page that
 * ends at stored name L can be followed by `x.delta` with L < `x.delta`, whose logical key `x`
 * sorts before keys already on this page (`x-y`). Emit only entries for which isSettled(key, L)
 * holds and carry the rest into the next round; on the last (untruncated) backend page every
 * entry is settled.
 */
export function mergeLogicalOrder<T extends { key: string }>(entries: readonly T[]): T[] {
  if (!entries.some((e) => SURROGATE_OR_LATER.test(e.key))) {
    return [...entries].sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  }
  return [...entries].sort((a, b) => compareUtf8(a.key, b.key));
}

/** Sorts keys in UTF-8 byte order, in place; the plain comparison when it agrees (no U+D800+). */
export function sortUtf8(keys: string[]): string[] {
  if (!keys.some((key) => SURROGATE_OR_LATER.test(key))) return keys.sort();
  return keys.sort(compareUtf8);
}

const SURROGATE_OR_LATER = /[\uD800-\uFFFF]/;

/**
 * Whether no stored name after `lastStoredName` can map to a logical key at or before
 * `logicalKey`. A later name maps below `logicalKey` only as `p.delta` where `p` is a prefix of
 * `logicalKey` (or the key itself, a duplicate): any other `p` < `logicalKey` gives
 * `p.delta` < `logicalKey` <= `lastStoredName`, already listed. So the key is settled when every
 * such `p.delta` sorts at or before `lastStoredName`, or was looked up already (`resolved`: the
 * caller asked the backend for `p.delta` directly, see blockingDeltaNames).
 */
export function isSettled(
  logicalKey: string,
  lastStoredName: string,
  resolved?: ReadonlySet<string>,
): boolean {
  for (let end = logicalKey.length; end > 0; end--) {
    const p = logicalKey.slice(0, end);
    if (!couldBeDeltaKey(p) || resolved?.has(p)) continue;
    if (compareUtf8(p + DELTA_SUFFIX, lastStoredName) > 0) return false;
  }
  return true;
}

/**
 * The logical keys `p` whose `p.delta`, not listed yet, could still sort before keys already
 * listed: exactly the prefixes `p` of `lastStoredName` (itself included) with `p.delta` after it
 * (a `p` that is not such a prefix differs from it at a smaller character, so `p.delta` sorts
 * before it and was listed). Usually a handful per page, e.g. for `x/app-1.0.5.zip.delta`:
 * `x/app`, `x/app-1`, `x/app-1.0` and the name itself. Looking these few names up directly
 * settles a whole page, where waiting for the listing to pass them could take the whole subtree
 * (`x/app.delta` sorts after every `x/app-…`).
 */
export function blockingDeltaNames(lastStoredName: string): string[] {
  const out: string[] = [];
  for (let end = 1; end <= lastStoredName.length; end++) {
    const p = lastStoredName.slice(0, end);
    if (couldBeDeltaKey(p) && compareUtf8(p + DELTA_SUFFIX, lastStoredName) > 0) out.push(p);
  }
  return out;
}

/** A directory marker is never stored as a delta, and half a surrogate pair is no key. */
function couldBeDeltaKey(p: string): boolean {
  if (p.endsWith("/")) return false;
  const code = p.charCodeAt(p.length - 1);
  return !(code >= 0xd800 && code <= 0xdbff);
}
