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
import { ENTRY_DIRECTORY, ENTRY_FILE, readDirectoryEntries } from "./fs-read-dir.ts";

export const FILE = 0;
export const DIR = 1;
export const NESTED = 2;

/**
 * One directory's entries in key order: their sort keys (readDirectory tells how a key encodes
 * its kind) and a kind per entry, rather than an object per entry. A cached (large) directory
 * keeps its keys packed: one string holding them all, with each key's start and length, ~1 byte
 * per character plus 6 per entry instead of a string object (~40 bytes) and an array slot each;
 * `nameAt` slices the few names a page reaches.
 */
export class SortedDir {
  #keys: string[] | null;
  #text = "";
  #starts: Uint32Array | null = null;
  /** Each key's length less one (keys are 1 to 256 UTF-16 units: a name plus its kind). */
  #lengths: Uint8Array | null = null;
  /** V8 keeps a string of only Latin-1 characters one byte per character. */
  #bytesPerChar = 2;
  /** FILE, DIR or NESTED per entry. */
  readonly kinds: Uint8Array;
  readonly length: number;

  private constructor(
    keys: string[],
    /** Whether the directory holds its own object (OBJECT_ENTRY). */
    readonly hasObjectEntry: boolean,
    /** Whether it holds a marker body (MARKER_ENTRY). */
    readonly hasMarkerEntry: boolean,
  ) {
    this.#keys = keys;
    this.length = keys.length;
    this.kinds = new Uint8Array(keys.length);
    for (let i = 0; i < keys.length; i++) {
      const last = keys[i].charCodeAt(keys[i].length - 1);
      this.kinds[i] = last === SLASH ? DIR : last === NUL ? NESTED : FILE;
    }
  }

  /** Entries from their sort keys, already in order (see readDirectory). */
  static fromSortKeys(keys: string[], hasObjectEntry: boolean, hasMarkerEntry: boolean) {
    return new SortedDir(keys, hasObjectEntry, hasMarkerEntry);
  }

  /** The entry's sort key as stored: a directory's ends in `/`, a NESTED one's in NUL. */
  #keyAt(index: number): string {
    if (this.#keys !== null) return this.#keys[index];
    const start = this.#starts![index];
    return this.#text.slice(start, start + this.#lengths![index] + 1);
  }

  /** The entry's name in the directory. */
  nameAt(index: number): string {
    const key = this.#keyAt(index);
    return this.kinds[index] === FILE ? key : key.slice(0, -1);
  }

  /** The entry's key relative to the directory: `name/` for a directory, else the name. */
  sortKeyAt(index: number): string {
    const key = this.#keyAt(index);
    return this.kinds[index] === NESTED ? key.slice(0, -1) : key;
  }

  /** Memory the entries take once packed, in bytes (for the cache bound). */
  get packedBytes(): number {
    return this.#text.length * this.#bytesPerChar + this.length * 6;
  }

  /** Replaces the key array with the packed form. */
  pack(): void {
    const keys = this.#keys;
    if (keys === null) return;
    const starts = new Uint32Array(keys.length);
    const lengths = new Uint8Array(keys.length);
    let at = 0;
    for (let i = 0; i < keys.length; i++) {
      starts[i] = at;
      lengths[i] = keys[i].length - 1;
      at += keys[i].length;
    }
    this.#text = keys.join("");
    this.#bytesPerChar = BEYOND_LATIN1.test(this.#text) ? 2 : 1;
    this.#starts = starts;
    this.#lengths = lengths;
    this.#keys = null;
  }
}

const SLASH = 0x2f;
const NUL = 0;

/** Directories smaller than this are cheap to re-read and are not cached. */
const CACHE_MIN_ENTRIES = 1024;
/**
 * Bound on the packed listings of all cached directories together: 128 MiB holds a directory of
 * ~5 million entries with names of 20 characters (a million-key bucket of each benchmark shape,
 * ~90 MiB, fits at once).
 */
const CACHE_MAX_BYTES = 128 * 2 ** 20;
/** A directory changed less than this before the read is not cached (see the header). */
const STABLE_MS = 2500;

const EMPTY = SortedDir.fromSortKeys([], false, false);

interface CacheEntry {
  stamp: string;
  dir: SortedDir;
}

/** Path → listing, in least-recently-used order (Map iteration order). */
const cache = new Map<string, CacheEntry>();
let cachedBytes = 0;

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
  return dir.sortKeyAt(index);
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
  if (dir.length >= CACHE_MIN_ENTRIES) remember(path, dir, readStart);
  return dir;
}

/** Drops every cached listing (tests). */
export function clearSortedDirectoryCache(): void {
  cache.clear();
  cachedBytes = 0;
}

/**
 * Reads and sorts `path`. Each entry is one sort key whose last character tells its kind: a
 * directory `name/` (DIR) and `name\0` (its NESTED candidate, which sorts exactly as `name`
 * would: no other name continues with NUL), a file its bare name. One array of strings sorted by
 * the engine's own comparison is several times faster than a comparator over entry numbers (a
 * million-entry directory: ~1.5 s instead of ~5 s), and leaves one string per entry behind.
 */
function readDirectory(path: string): SortedDir {
  const keys: string[] = [];
  let hasObjectEntry = false;
  let hasMarkerEntry = false;
  let astral = false;
  try {
    readDirectoryEntries(path, (name, type) => {
      if (isReservedEntry(name)) {
        if (type === ENTRY_FILE) {
          hasObjectEntry ||= name === OBJECT_ENTRY;
          hasMarkerEntry ||= name === MARKER_ENTRY;
        }
        return;
      }
      if (type === ENTRY_DIRECTORY) keys.push(`${name}/`, `${name}\0`);
      else if (type === ENTRY_FILE) keys.push(name);
      else return;
      astral ||= SURROGATE_OR_LATER.test(name);
    });
  } catch (err) {
    const code = (err as { code?: unknown } | null)?.code;
    if (code === "ENOENT" || code === "ENOTDIR") return EMPTY;
    throw err;
  }
  // JavaScript's own comparison is byte order unless names hold U+D800 or above.
  if (astral) keys.sort(compareUtf8);
  else keys.sort();
  return SortedDir.fromSortKeys(keys, hasObjectEntry, hasMarkerEntry);
}

const SURROGATE_OR_LATER = /[\uD800-\uFFFF]/;
const BEYOND_LATIN1 = /[\u0100-\uFFFF]/;

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
  dir.pack();
  if (dir.packedBytes > CACHE_MAX_BYTES) return;
  const stamp = `${stat.ino}:${mtime}:${ctime}`;
  cache.set(path, { stamp, dir });
  cachedBytes += dir.packedBytes;
  for (const [oldest] of cache) {
    if (cachedBytes <= CACHE_MAX_BYTES) break;
    forget(oldest);
  }
}

function forget(path: string): void {
  const entry = cache.get(path);
  if (!entry) return;
  cache.delete(path);
  cachedBytes -= entry.dir.packedBytes;
}
