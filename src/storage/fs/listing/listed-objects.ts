/**
 * Which walked candidates are objects (fs-walk.ts yields candidates only): the same decisions as
 * readFileObjectSync / readMarkerSync in fs-object-meta.ts, made with lean lookups because a
 * listing verifies every entry it shows.
 */

import type { ObjectInfo } from "../../backend.ts";
import {
  cJoinedPath,
  cPath,
  DIRECTORY,
  leanLstat,
  leanLstatC,
  leanSize,
  lookupXattrTextC,
  REGULAR_FILE,
} from "../../../native/mod.ts";
import { fromStored, type StoredMeta } from "../fs-extents.ts";
import { META_XATTR, readStoredMeta } from "../fs-meta-spill.ts";
import { MARKER_ENTRY } from "../fs-reserved.ts";
import type { DirectoryListings } from "./fs-sorted-dir.ts";
import { type WalkItem, walkKeys } from "./fs-walk.ts";

/**
 * The ObjectInfo of a walked candidate, or null when it is not an object. The same decisions as
 * readFileObjectSync / readMarkerSync (metadata first, then the type), made with the lean
 * lookups (lookupXattrTextC, leanLstatC): a listing verifies every entry it shows, and their
 * garbage (a C string, a value copy and a FileInfo with four Dates per entry) was most of what a
 * listing allocated. Synchronous: an async stat costs far more per call than the few
 * microseconds the kernel needs.
 */
export function verifyCandidateSync(item: WalkItem): ObjectInfo | null {
  if (item.kind === "file") return listedFile(item.key, item.dir, item.entry);
  const own = listedMeta(cPath(item.path));
  const withBody = item.kind === "dir" && item.markerEntry === false
    ? null
    : listedFile(item.key, item.path, MARKER_ENTRY);
  if (own && (!withBody || own.lastModified > withBody.meta.lastModified)) {
    return leanLstat(item.path) === DIRECTORY ? { key: item.key, storedSize: 0, meta: own } : null;
  }
  return withBody;
}

/** The first object at or below `prefix` in key order, if any. */
export function firstObjectKey(
  listings: DirectoryListings,
  bucketDir: string,
  prefix: string,
): string | undefined {
  for (const item of walkKeys(listings, bucketDir, { prefix })) {
    if (verifyCandidateSync(item)) return item.key;
  }
  return undefined;
}

/** The metadata at a C path (c-path.ts). */
function listedMeta(path: Uint8Array): StoredMeta | null {
  const text = lookupXattrTextC(path, META_XATTR);
  if (text === null) return null;
  const meta = JSON.parse(text) as StoredMeta;
  // A page of listed objects is held while the caller works through it (a replication walk holds
  // several), so its strings outlive the young generation. Repeated values are shared: the MD5 of
  // a single-part object is its ETag, and content types and storage kinds repeat across a bucket.
  if (meta.md5 === meta.etag) meta.md5 = meta.etag;
  meta.contentType = shared(meta.contentType);
  meta.storage = shared(meta.storage);
  if (isEmptyRecord(meta.userMeta)) meta.userMeta = NONE;
  if (isEmptyRecord(meta.headers)) meta.headers = NONE;
  return meta;
}

/** The empty user metadata and headers of most objects, one frozen copy (never written to). */
const NONE: Record<string, string> = Object.freeze({});

function isEmptyRecord(value: unknown): boolean {
  if (typeof value !== "object" || value === null) return false;
  for (const _ in value) return false;
  return true;
}

/** Common short strings, one copy each (bounded: a bucket of random content types). */
const sharedStrings = new Map<unknown, string>();

function shared<T>(value: T): T {
  if (typeof value !== "string" || value.length > 100) return value;
  const known = sharedStrings.get(value);
  if (known !== undefined) return known as T;
  if (sharedStrings.size < 1024) sharedStrings.set(value, value);
  return value;
}

/** The object in file `${dir}/${entry}`, with the same decisions as readFileObjectSync. */
function listedFile(key: string, dir: string, entry: string): ObjectInfo | null {
  let stored = listedMeta(cJoinedPath(dir, entry));
  if (!stored || leanLstatC(cJoinedPath(dir, entry)) !== REGULAR_FILE) return null;
  if (stored.extents === undefined && stored.spill === undefined) {
    return { key, storedSize: leanSize(), meta: stored };
  }
  // Metadata too large for the attribute is read from the file (fs-meta-spill.ts): rare.
  if (stored.spill !== undefined) stored = readStoredMeta(`${dir}/${entry}`);
  if (!stored) return null;
  const { meta, storedSize } = fromStored(stored, leanSize());
  return { key, storedSize, meta };
}
