/**
 * Walking a bucket directory in S3 key order, and the few tree operations built on it.
 *
 * S3 orders keys by their UTF-8 bytes, and a directory `d` holds exactly the keys that start with
 * `d/`, so siblings are sorted with `/` appended to directory names (`a-c` < `a/…` < `a0`). The
 * walk yields candidates only: whether a file or directory really is an object (carries the
 * metadata attribute) is decided by the caller, because that costs a stat the walk would waste
 * on entries a page never reaches.
 */

import type { ObjectInfo, ObjectMeta } from "./backend.ts";
import { getJsonXattr, XattrError } from "./xattr.ts";
import { isReservedEntry, MARKER_ENTRY, OBJECT_ENTRY } from "./fs-reserved.ts";

/**
 * Compares two strings in UTF-8 byte order, which is Unicode code point order. JavaScript's `<`
 * compares UTF-16 code units, which puts U+E000..U+FFFF after astral characters (surrogates
 * 0xD800..0xDFFF); shifting the two ranges past each other at the first difference fixes that.
 */
export function compareUtf8(a: string, b: string): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    const x = a.charCodeAt(i);
    const y = b.charCodeAt(i);
    if (x !== y) return codePointRank(x) - codePointRank(y);
  }
  return a.length - b.length;
}

function codePointRank(unit: number): number {
  if (unit < 0xd800) return unit;
  return unit >= 0xe000 ? unit - 0x800 : unit + 0x2000;
}

export interface SortedEntry {
  name: string;
  isDirectory: boolean;
  /**
   * A candidate for the object named like directory `name`, stored inside it as OBJECT_ENTRY
   * (see fs-nesting.ts). Every directory gets one, sorted as the plain name: only whether the
   * entry exists is left to the (lazy) verification.
   */
  nested?: boolean;
  /** The name as it sorts among its siblings: directories carry a trailing `/`. */
  sortKey: string;
}

/**
 * Regular files and directories of `path` in key order. A directory that vanished (a concurrent
 * delete removed it) reads as empty; symlinks and special files are never objects and are left
 * out. Synchronous on purpose: Deno's async readDir costs ~5 µs of JavaScript per entry in
 * promise hops that hold the event loop just the same, the sync one ~1 µs (10,000 entries:
 * ~50 ms against ~10 ms, measured).
 */
export function readSortedDir(path: string): SortedEntry[] {
  const entries: SortedEntry[] = [];
  let astral = false;
  try {
    for (const entry of Deno.readDirSync(path)) {
      if (entry.isSymlink || isReservedEntry(entry.name)) continue;
      if (entry.isDirectory) {
        entries.push({ name: entry.name, isDirectory: true, sortKey: `${entry.name}/` });
        entries.push({ name: entry.name, isDirectory: false, nested: true, sortKey: entry.name });
      } else if (entry.isFile) {
        entries.push({ name: entry.name, isDirectory: false, sortKey: entry.name });
      } else continue;
      astral ||= SURROGATE_OR_LATER.test(entry.name);
    }
  } catch (err) {
    if (isAbsentError(err)) return [];
    throw err;
  }
  // JavaScript's own comparison is byte order unless names hold U+D800 or above, and it is
  // several times faster than compareUtf8 on large directories.
  return entries.sort(
    astral
      ? (a, b) => compareUtf8(a.sortKey, b.sortKey)
      : (a, b) => (a.sortKey < b.sortKey ? -1 : a.sortKey > b.sortKey ? 1 : 0),
  );
}

const SURROGATE_OR_LATER = /[\uD800-\uFFFF]/;
const utf8 = new TextEncoder();

/** ENOENT and ENOTDIR: the path (or one of its parents) is not there. */
export function isAbsentError(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  return code === "ENOENT" || code === "ENOTDIR";
}

export type WalkItem =
  /** A regular file: an object if it carries metadata. */
  | { kind: "file"; key: string; path: string }
  /** A directory whose key ends in `/`: an object (a directory marker) if it carries metadata. */
  | { kind: "dir"; key: string; path: string }
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
}

/**
 * Yields candidates below `bucketDir` in key order, restricted to `prefix` and `startAfter`.
 * Directories wholly outside the prefix or wholly at or before `startAfter` are never read.
 * Synchronous (see readSortedDir): an async generator only adds a promise per entry, and its
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
  // The base directory's own marker is the key `base`, in range only when the prefix is exactly
  // that directory.
  if (base !== "" && base === prefix && isAfter(base, startAfter)) {
    yield { kind: "dir", key: base, path: basePath };
  }
  yield* walkDirectory(basePath, base, options);
}

function* walkDirectory(
  dirPath: string,
  dirKey: string,
  options: WalkOptions,
): Generator<WalkItem> {
  const { prefix, startAfter, skip } = options;
  for (const entry of readSortedDir(dirPath)) {
    const key = dirKey + entry.sortKey;
    const path = entry.nested
      ? `${dirPath}/${entry.name}/${OBJECT_ENTRY}`
      : `${dirPath}/${entry.name}`;
    const inPrefix = key.startsWith(prefix);
    // A directory whose key is a proper start of the prefix ("photos/" for "photos/2") holds the
    // range without being in it.
    if (!inPrefix && !(entry.isDirectory && prefix.startsWith(key))) {
      if (compareUtf8(key, prefix) < 0) continue;
      return; // Sorted: every later sibling is past the prefix range too.
    }
    if (skip?.prefix !== undefined && key.startsWith(skip.prefix)) continue;
    if (!isAfter(key, startAfter)) {
      // Only a directory that contains startAfter can still hold later keys.
      if (!(entry.isDirectory && startAfter?.startsWith(key))) continue;
    }
    if (!entry.isDirectory) {
      yield { kind: "file", key, path };
    } else if (options.rollUpDirectories && inPrefix) {
      if (isAfter(key, startAfter)) yield { kind: "prefix", key, path };
    } else {
      if (inPrefix && isAfter(key, startAfter)) yield { kind: "dir", key, path };
      yield* walkDirectory(path, key, options);
    }
  }
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

/**
 * The common prefix `key` rolls up into: the prefix plus everything up to and including the
 * first delimiter after it; undefined when there is no delimiter after the prefix.
 */
export function commonPrefixOf(
  key: string,
  prefix: string,
  delimiter: string,
): string | undefined {
  const at = key.indexOf(delimiter, prefix.length);
  return at < 0 ? undefined : key.slice(0, at + delimiter.length);
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
  try {
    return getJsonXattr<ObjectMeta>(path, META_XATTR);
  } catch (err) {
    if (err instanceof XattrError && (err.errno === ENOENT || err.errno === ENOTDIR)) return null;
    throw err;
  }
}

const ENOENT = 2;
const ENOTDIR = 20;

/** The ObjectInfo of a walked candidate, or null when it is not an object. */
export function verifyCandidateSync(item: WalkItem): ObjectInfo | null {
  // Synchronous: a listing page verifies up to a thousand entries, and an async stat costs far
  // more per call than the few microseconds the kernel needs.
  const found = item.kind === "file" ? readFileObjectSync(item.path) : readMarkerSync(item.path);
  return found && { key: item.key, storedSize: found.storedSize, meta: found.meta };
}

/** A stored object: its metadata, and the file holding its bytes (none for an empty marker). */
export interface StoredObject {
  meta: ObjectMeta;
  storedSize: number;
  file?: { path: string; ino: number | null };
}

/** The object in the regular file `path`; null when it is absent, not a file or no object. */
export function readFileObjectSync(path: string): StoredObject | null {
  let stat: Deno.FileInfo;
  try {
    stat = Deno.lstatSync(path);
  } catch (err) {
    return nullIfAbsent(err);
  }
  if (!stat.isFile) return null;
  const meta = readMeta(path);
  return meta && { meta, storedSize: stat.size, file: { path, ino: stat.ino } };
}

/**
 * The directory marker of `dirPath`: the directory's own attribute (empty body) or the
 * MARKER_ENTRY file inside it (a body). While an overwrite that changes form is between its two
 * steps both exist, and the later one is the marker (the other is removed next).
 */
export function readMarkerSync(dirPath: string): StoredObject | null {
  if (!isDirectorySync(dirPath)) return null;
  const own = readMeta(dirPath);
  const withBody = readFileObjectSync(`${dirPath}/${MARKER_ENTRY}`);
  if (own && (!withBody || own.lastModified > withBody.meta.lastModified)) {
    return { meta: own, storedSize: 0 };
  }
  return withBody;
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
export async function fsyncDirectory(path: string): Promise<void> {
  const dir = await Deno.open(path, { read: true }).catch(nullIfAbsent);
  if (!dir) return;
  try {
    await dir.sync();
  } finally {
    dir.close();
  }
}
