/**
 * One directory's entries in S3 key order, cached for large directories so that a listing page
 * costs O(page) rather than O(directory): reading and sorting 100,000 names takes ~100 ms here,
 * a page must not.
 *
 * S3 orders keys by their UTF-8 bytes, and a directory `d` holds exactly the keys that start with
 * `d/`, so siblings sort with `/` appended to directory names (`a-c` < `a/…` < `a0`). Every
 * directory also contributes a NESTED candidate sorted as its plain name: the object named like
 * the directory, stored inside it (fs-nesting.ts), whose existence is checked only when a walk
 * reaches it.
 *
 * The cache is checked against the directory's inode, mtime and ctime on every use (one lstat),
 * so a change by anyone (this process, another tool, a hand edit that puts the old mtime back:
 * ctime cannot be set) is seen. A listing is cached only when both times lie STABLE_MS before
 * the read began: a change in the same timestamp tick as an earlier one leaves the times
 * unchanged (Deno reports ctime in whole seconds), and this margin keeps such a change from
 * hiding behind a cached entry. A directory being written to is therefore re-read (correct,
 * O(directory)) until it has been quiet for STABLE_MS. A stale entry could only hide additions:
 * a vanished name fails its verification and is skipped anyway.
 */

import { isReservedEntry, MARKER_ENTRY, OBJECT_ENTRY } from "./fs-reserved.ts";

export const FILE = 0;
export const DIR = 1;
export const NESTED = 2;

export interface SortedDir {
  names: string[];
  /** FILE, DIR or NESTED per entry. */
  kinds: Uint8Array;
  /** Whether the directory holds its own object (OBJECT_ENTRY) or marker body (MARKER_ENTRY). */
  hasObjectEntry: boolean;
  hasMarkerEntry: boolean;
}

/** Directories smaller than this are cheap to re-read and are not cached. */
const CACHE_MIN_ENTRIES = 1024;
/** Bound on the cached names of all directories together (~40 bytes each). */
const CACHE_MAX_NAMES = 4_000_000;
/** A directory changed less than this before the read is not cached (see the header). */
const STABLE_MS = 2500;

const EMPTY: SortedDir = {
  names: [],
  kinds: new Uint8Array(0),
  hasObjectEntry: false,
  hasMarkerEntry: false,
};

interface CacheEntry {
  stamp: string;
  dir: SortedDir;
}

/** Path → listing, in least-recently-used order (Map iteration order). */
const cache = new Map<string, CacheEntry>();
let cachedNames = 0;

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

export function sortKeyAt(dir: SortedDir, index: number): string {
  return dir.kinds[index] === DIR ? `${dir.names[index]}/` : dir.names[index];
}

/**
 * The entries of `path` in key order: regular files, directories (each also as a NESTED
 * candidate); reserved entries, symlinks and special files left out. A directory that vanished
 * (a concurrent delete removed it) reads as empty. Synchronous on purpose: Deno's async readDir
 * costs ~5 µs of JavaScript per entry in promise hops that hold the event loop just the same,
 * the sync one ~1 µs.
 */
export function sortedDirectory(path: string): SortedDir {
  const hit = cache.get(path);
  if (hit) {
    if (hit.stamp === stampOf(path)) {
      cache.delete(path); // most recently used goes last
      cache.set(path, hit);
      return hit.dir;
    }
    forget(path);
  }
  const readStart = Date.now();
  const dir = readDirectory(path);
  if (dir.names.length >= CACHE_MIN_ENTRIES) remember(path, dir, readStart);
  return dir;
}

/** Drops every cached listing (tests). */
export function clearSortedDirectoryCache(): void {
  cache.clear();
  cachedNames = 0;
}

function readDirectory(path: string): SortedDir {
  const entries: Array<{ sortKey: string; name: string; kind: number }> = [];
  let hasObjectEntry = false;
  let hasMarkerEntry = false;
  let astral = false;
  try {
    for (const entry of Deno.readDirSync(path)) {
      if (entry.isSymlink) continue;
      if (isReservedEntry(entry.name)) {
        if (entry.isFile) {
          hasObjectEntry ||= entry.name === OBJECT_ENTRY;
          hasMarkerEntry ||= entry.name === MARKER_ENTRY;
        }
        continue;
      }
      if (entry.isDirectory) {
        entries.push({ sortKey: `${entry.name}/`, name: entry.name, kind: DIR });
        entries.push({ sortKey: entry.name, name: entry.name, kind: NESTED });
      } else if (entry.isFile) {
        entries.push({ sortKey: entry.name, name: entry.name, kind: FILE });
      } else continue;
      astral ||= SURROGATE_OR_LATER.test(entry.name);
    }
  } catch (err) {
    const code = (err as { code?: unknown } | null)?.code;
    if (code === "ENOENT" || code === "ENOTDIR") return EMPTY;
    throw err;
  }
  // JavaScript's own comparison is byte order unless names hold U+D800 or above, and it is
  // several times faster than compareUtf8 on large directories.
  entries.sort(
    astral
      ? (a, b) => compareUtf8(a.sortKey, b.sortKey)
      : (a, b) => (a.sortKey < b.sortKey ? -1 : a.sortKey > b.sortKey ? 1 : 0),
  );
  const kinds = new Uint8Array(entries.length);
  const names = entries.map((entry, i) => {
    kinds[i] = entry.kind;
    return entry.name;
  });
  return { names, kinds, hasObjectEntry, hasMarkerEntry };
}

const SURROGATE_OR_LATER = /[\uD800-\uFFFF]/;

/** What identifies one state of a directory's entry list; "" when it is gone. */
function stampOf(path: string): string {
  let stat: Deno.FileInfo;
  try {
    stat = Deno.lstatSync(path);
  } catch {
    return "";
  }
  return `${stat.ino}:${stat.mtime?.getTime()}:${stat.ctime?.getTime()}`;
}

function remember(path: string, dir: SortedDir, readStart: number): void {
  if (dir.names.length > CACHE_MAX_NAMES) return;
  // Taken after the read: a change during it moved mtime past readStart - STABLE_MS.
  let stat: Deno.FileInfo;
  try {
    stat = Deno.lstatSync(path);
  } catch {
    return;
  }
  const mtime = stat.mtime?.getTime();
  const ctime = stat.ctime?.getTime();
  if (mtime === undefined || ctime === undefined) return;
  if (Math.max(mtime, ctime) > readStart - STABLE_MS) return;
  const stamp = `${stat.ino}:${mtime}:${ctime}`;
  cache.set(path, { stamp, dir });
  cachedNames += dir.names.length;
  for (const [oldest] of cache) {
    if (cachedNames <= CACHE_MAX_NAMES) break;
    forget(oldest);
  }
}

function forget(path: string): void {
  const entry = cache.get(path);
  if (!entry) return;
  cache.delete(path);
  cachedNames -= entry.dir.names.length;
}
