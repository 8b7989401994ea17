/**
 * Walking a bucket directory in S3 key order, and the few tree operations built on it.
 *
 * Directories are read in key order through fs-sorted-dir.ts (cached when large), and each
 * directory level starts at the first entry that can be in range (binary search), so a page
 * costs O(page) whatever the size of the directory or the subtree. The
 * walk yields candidates only: whether a file or directory really is an object (carries the
 * metadata attribute) is decided by the caller, because that costs a stat the walk would waste
 * on entries a page never reaches.
 */

import { fromStored, type StoredMeta } from "./fs-extents.ts";
import type { ObjectInfo, ObjectMeta } from "../backend.ts";
import { lookupXattr, lookupXattrTextC } from "../../native/xattr.ts";
import {
  DIRECTORY,
  leanLstat,
  leanLstatC,
  leanSize,
  REGULAR_FILE,
} from "../../native/lean-stat.ts";
import { cJoinedPath, cPath } from "../../native/c-path.ts";
import { MARKER_ENTRY, OBJECT_ENTRY } from "./fs-reserved.ts";
import {
  DIR,
  FILE,
  NESTED,
  ownChangeStarting,
  type SortedDir,
  sortedDirectory,
  sortKeyAt,
} from "./fs-sorted-dir.ts";
import { compareUtf8 } from "../../lib/key-order.ts";

const utf8 = new TextEncoder();

/** ENOENT and ENOTDIR: the path (or one of its parents) is not there. */
export function isAbsentError(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  return code === "ENOENT" || code === "ENOTDIR";
}

export type WalkItem =
  /**
   * A regular file, `${dir}/${entry}`: an object if it carries metadata. Kept as its two parts:
   * a listing verifies thousands of these, and the joined path string would be garbage.
   */
  | { kind: "file"; key: string; dir: string; entry: string }
  /**
   * A directory whose key ends in `/`: an object (a directory marker) if it carries metadata or
   * holds MARKER_ENTRY; `markerEntry` says whether it does, when the walk has read it.
   */
  | { kind: "dir"; key: string; path: string; markerEntry?: boolean }
  /** A directory rolled up whole as a common prefix (delimiter `/`); never descended. */
  | { kind: "prefix"; key: string; path: string };

export interface WalkOptions {
  prefix: string;
  /** Only keys strictly greater than this. */
  startAfter?: string;
  /** Report directories below the prefix as `prefix` items, never descending (delimiter `/`). */
  rollUpDirectories?: boolean;
  /**
   * Keys starting with `skip.prefix` are passed over. The caller sets it while iterating, once a
   * common prefix has been decided, so the rest of that range is never read.
   */
  skip?: { prefix?: string };
  /** Files (and nested objects) with these names are passed over (ListOptions.omitBaseNames). */
  omitBaseNames?: ReadonlySet<string>;
}

/**
 * Yields candidates below `bucketDir` in key order, restricted to `prefix` and `startAfter`.
 * Directories wholly outside the prefix or wholly at or before `startAfter` are never read.
 * Synchronous (see sortedDirectory): an async generator only adds a promise per entry, and its
 * microtasks would hold the event loop just as long.
 */
export function* walkKeys(bucketDir: string, options: WalkOptions): Generator<WalkItem> {
  const { prefix, startAfter } = options;
  // Everything that matches the prefix is at or before startAfter: nothing to read.
  if (
    startAfter !== undefined && compareUtf8(startAfter, prefix) >= 0 &&
    !startAfter.startsWith(prefix)
  ) return;
  // Start in the deepest directory the prefix names completely ("photos/2" starts in "photos").
  const base = prefix.slice(0, prefix.lastIndexOf("/") + 1);
  if (!isStorableDirectoryKey(base)) return;
  const basePath = base === "" ? bucketDir : `${bucketDir}/${base.slice(0, -1)}`;
  const walk = new Walk(options);
  // The base directory's own marker is the key `base`, in range only when the prefix is exactly
  // that directory.
  if (base !== "" && base === prefix && isAfter(base, startAfter)) {
    const markerEntry = walk.read(basePath).hasMarkerEntry;
    yield { kind: "dir", key: base, path: basePath, markerEntry };
  }
  yield* walk.directory(basePath, base);
}

/** One walk: its options, and the listing read last (a NESTED check reads the directory the
 * walk descends into next; within one synchronous walk it cannot change in between). */
class Walk {
  #recentPath = "";
  #recent: SortedDir | undefined;

  constructor(readonly options: WalkOptions) {}

  read(path: string): SortedDir {
    if (path !== this.#recentPath || !this.#recent) {
      this.#recent = sortedDirectory(path);
      this.#recentPath = path;
    }
    return this.#recent;
  }

  *directory(dirPath: string, dirKey: string): Generator<WalkItem> {
    const { prefix, startAfter, skip, rollUpDirectories, omitBaseNames } = this.options;
    const dir = this.read(dirPath);
    for (let i = firstInRange(dir, dirKey, prefix, startAfter); i < dir.length; i++) {
      const kind = dir.kinds[i];
      const isDirectory = kind === DIR;
      const name = dir.nameAt(i);
      const key = dirKey + sortKeyAt(dir, i);
      const inPrefix = key.startsWith(prefix);
      // A directory whose key is a proper start of the prefix ("photos/" for "photos/2") holds
      // the range without being in it.
      if (!inPrefix && !(isDirectory && prefix.startsWith(key))) {
        if (compareUtf8(key, prefix) < 0) continue;
        return; // Sorted: every later sibling is past the prefix range too.
      }
      if (skip?.prefix !== undefined && key.startsWith(skip.prefix)) continue;
      if (!isAfter(key, startAfter)) {
        // Only a directory that contains startAfter can still hold later keys.
        if (!(isDirectory && startAfter?.startsWith(key))) continue;
      }
      if (kind !== DIR && omitBaseNames?.has(name)) continue;
      if (kind === FILE) {
        yield { kind: "file", key, dir: dirPath, entry: name };
        continue;
      }
      const path = `${dirPath}/${name}`;
      if (kind === NESTED) {
        // Rolled up, the directory is never read: its object is probed (one getxattr) instead.
        if (rollUpDirectories || this.read(path).hasObjectEntry) {
          yield { kind: "file", key, dir: path, entry: OBJECT_ENTRY };
        }
      } else if (rollUpDirectories && inPrefix) {
        if (isAfter(key, startAfter)) yield { kind: "prefix", key, path };
      } else {
        if (inPrefix && isAfter(key, startAfter)) {
          yield { kind: "dir", key, path, markerEntry: this.read(path).hasMarkerEntry };
        }
        yield* this.directory(path, key);
      }
    }
  }
}

/**
 * The first entry of `dir` (holding the keys `dirKey…`) whose keys are not all before the range
 * the walk wants: before the prefix, or at or before startAfter. Entries' key ranges are ordered
 * and disjoint (a directory `a/` covers `a/…`, and no sibling falls inside it), so this is a
 * binary search.
 */
function firstInRange(
  dir: SortedDir,
  dirKey: string,
  prefix: string,
  startAfter: string | undefined,
): number {
  const bound = startAfter !== undefined && compareUtf8(startAfter, prefix) > 0
    ? startAfter
    : prefix;
  if (!bound.startsWith(dirKey) || bound.length === dirKey.length) return 0;
  const below = (i: number) => {
    const key = dirKey + sortKeyAt(dir, i);
    return compareUtf8(key, bound) < 0 && !(dir.kinds[i] === DIR && bound.startsWith(key));
  };
  let low = 0;
  let high = dir.length;
  while (low < high) {
    const mid = (low + high) >>> 1;
    if (below(mid)) low = mid + 1;
    else high = mid;
  }
  return low;
}

function isAfter(key: string, startAfter: string | undefined): boolean {
  return startAfter === undefined || compareUtf8(key, startAfter) > 0;
}

/**
 * Whether `dirKey` ("" or "a/b/") could name a directory of stored keys. Prefixes with empty,
 * `.` or `..` segments match nothing, and must never reach the filesystem as a path.
 */
function isStorableDirectoryKey(dirKey: string): boolean {
  if (dirKey === "") return true;
  if (dirKey.includes("\0")) return false;
  return dirKey.slice(0, -1).split("/").every((segment) =>
    segment !== "" && segment !== "." && segment !== ".." && utf8.encode(segment).length <= 255
  );
}

// ---- reading and tidying the tree ---------------------------------------------------------

/** The extended attribute holding an object's metadata (JSON ObjectMeta). */
export const META_XATTR = "user.svc.meta";

export function errorCode(err: unknown): string | undefined {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === "string" ? code : undefined;
}

/** For `.catch()`: absence becomes null, every other error is rethrown. */
export function nullIfAbsent(err: unknown): null {
  if (isAbsentError(err)) return null;
  throw err;
}

/** The object metadata of `path`; null when it has none or vanished. */
export function readMeta(path: string): ObjectMeta | null {
  const raw = lookupXattr(path, META_XATTR);
  return raw === null ? null : JSON.parse(decoder.decode(raw)) as ObjectMeta;
}

const decoder = new TextDecoder();

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
  const stored = listedMeta(cJoinedPath(dir, entry));
  if (!stored || leanLstatC(cJoinedPath(dir, entry)) !== REGULAR_FILE) return null;
  if (stored.extents === undefined) return { key, storedSize: leanSize(), meta: stored };
  const { meta, storedSize } = fromStored(stored, leanSize());
  return { key, storedSize, meta };
}

/** A stored object: its metadata, and the file holding its bytes (none for an empty marker). */
export interface StoredObject {
  meta: ObjectMeta;
  storedSize: number;
  file?: { path: string; ino: number | null };
  /** The extents directory holding the bytes of a completed multipart upload (fs-extents.ts). */
  extents?: string;
}

/** The object in file `path` from its metadata attribute and stat (fs-extents' stored form). */
export function fileObject(
  stored: ObjectMeta,
  path: string,
  stat: Pick<Deno.FileInfo, "size" | "ino">,
): StoredObject {
  const { meta, storedSize, extents } = fromStored(stored, stat.size);
  const found: StoredObject = { meta, storedSize, file: { path, ino: stat.ino } };
  if (extents !== undefined) found.extents = extents;
  return found;
}

/**
 * The object in the regular file `path`; null when it is absent, not a file or no object. The
 * attribute is read first: for a path that is not there that is one syscall and no exception
 * (a thrown NotFound costs more than the syscall, and listings probe many absent paths).
 * `forOpen`: the caller will open the file expecting `file.ino`; then the stat comes first, so the
 * metadata read after it belongs to that inode, or the file was replaced and the open (which
 * checks the inode) fails and is retried. Metadata first, a replace in between could pair the
 * old metadata with the new inode.
 */
export function readFileObjectSync(path: string, forOpen = false): StoredObject | null {
  const first = forOpen ? statOrNull(path) : null;
  if (forOpen && !first?.isFile) return null;
  const meta = readMeta(path);
  if (!meta) return null;
  const stat = first ?? statOrNull(path);
  if (!stat?.isFile) return null;
  return fileObject(meta, path, stat);
}

/**
 * The directory marker of `dirPath`: the directory's own attribute (empty body) or the
 * MARKER_ENTRY file inside it (a body). While an overwrite that changes form is between its two
 * steps both exist, and the later one is the marker (the other is removed next). `markerEntry`
 * is whether the caller saw MARKER_ENTRY in the directory (undefined: not read, so look).
 */
export function readMarkerSync(
  dirPath: string,
  markerEntry?: boolean,
  forOpen = false,
): StoredObject | null {
  const own = readMeta(dirPath);
  const withBody = markerEntry === false
    ? null
    : readFileObjectSync(`${dirPath}/${MARKER_ENTRY}`, forOpen);
  if (own && (!withBody || own.lastModified > withBody.meta.lastModified)) {
    return statOrNull(dirPath)?.isDirectory ? { meta: own, storedSize: 0 } : null;
  }
  return withBody;
}

export function statOrNull(path: string): Deno.FileInfo | null {
  try {
    return Deno.lstatSync(path);
  } catch (err) {
    return nullIfAbsent(err);
  }
}

/** The first object at or below `prefix` in key order, if any. */
export function firstObjectKey(bucketDir: string, prefix: string): string | undefined {
  for (const item of walkKeys(bucketDir, { prefix })) {
    if (verifyCandidateSync(item)) return item.key;
  }
  return undefined;
}

export function isDirectorySync(path: string): boolean {
  try {
    return Deno.lstatSync(path).isDirectory;
  } catch (err) {
    return nullIfAbsent(err) ?? false;
  }
}

/** rmdir; false when the directory is not empty. A directory already gone counts as removed. */
export function removeDirectoryIfEmptySync(path: string): boolean {
  try {
    ownChangeStarting(path.slice(0, path.lastIndexOf("/")));
    Deno.removeSync(path);
    return true;
  } catch (err) {
    if (errorCode(err) === "ENOTEMPTY") return false;
    if (isAbsentError(err)) return true;
    throw err;
  }
}

/**
 * Removes now-empty directories above a deleted object, deepest first, stopping below the
 * bucket and at any directory that is itself an object (a marker). Returns the deepest
 * directory left standing. Synchronous so that a marker write (also synchronous) cannot land
 * between the attribute check and the rmdir.
 */
export function removeEmptyParentsSync(bucketDir: string, dirs: string[]): string {
  for (let depth = dirs.length; depth > 0; depth--) {
    const path = [bucketDir, ...dirs.slice(0, depth)].join("/");
    if (readMeta(path) !== null || !removeDirectoryIfEmptySync(path)) return path;
  }
  return bucketDir;
}

/**
 * Removes `dir` and everything below it, bottom-up, provided nothing below is an object: an
 * object committed meanwhile makes an rmdir fail (or is seen) instead of being deleted with the
 * tree. Returns false, leaving what remains, when it meets an object or, unless `unlinkFiles`,
 * any file. Synchronous for the same reason as removeEmptyParentsSync.
 */
export function removeTreeWithoutObjects(dir: string, options: { unlinkFiles: boolean }): boolean {
  let entries: Deno.DirEntry[];
  try {
    entries = [...Deno.readDirSync(dir)];
  } catch (err) {
    return nullIfAbsent(err) ?? true;
  }
  for (const entry of entries) {
    const path = `${dir}/${entry.name}`;
    if (entry.isDirectory) {
      if (!removeTreeWithoutObjects(path, options)) return false;
    } else {
      if (!options.unlinkFiles || readMeta(path) !== null) return false;
      Deno.removeSync(path);
    }
  }
  if (readMeta(dir) !== null) return false;
  return removeDirectoryIfEmptySync(dir);
}

/**
 * Makes a directory's entries (a rename, mkdir or unlink in it) durable. A directory that is
 * already gone needs nothing: a concurrent delete removed it, and that removal is the newer state.
 */
// Concurrent callers on one directory share an fsync that started after their call (dir-sync.ts).
export { syncDirectory as fsyncDirectory } from "../../lib/dir-sync.ts";
