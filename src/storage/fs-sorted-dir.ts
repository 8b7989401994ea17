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
 * One directory's entries in key order, as parallel arrays rather than an object per entry. A
 * cached (large) directory keeps its names packed: one string holding them all, with each
 * entry's start and length, ~1 byte per character plus 6 per entry instead of a string object
 * (~40 bytes) and an array slot each; `nameAt` slices the few names a page reaches.
 */
export class SortedDir {
  #names: string[] | null;
  #text = "";
  #starts: Uint32Array | null = null;
  #lengths: Uint8Array | null = null;
  /** V8 keeps a string of only Latin-1 characters one byte per character. */
  #bytesPerChar = 2;

  constructor(
    names: string[],
    /** FILE, DIR or NESTED per entry. */
    readonly kinds: Uint8Array,
    /** Whether the directory holds its own object (OBJECT_ENTRY). */
    readonly hasObjectEntry: boolean,
    /** Whether it holds a marker body (MARKER_ENTRY). */
    readonly hasMarkerEntry: boolean,
  ) {
    this.#names = names;
    this.length = names.length;
  }

  readonly length: number;

  nameAt(index: number): string {
    if (this.#names !== null) return this.#names[index];
    const start = this.#starts![index];
    return this.#text.slice(start, start + this.#lengths![index]);
  }

  /** Memory the entries take once packed, in bytes (for the cache bound). */
  get packedBytes(): number {
    return this.#text.length * this.#bytesPerChar + this.length * 7;
  }

  /** Replaces the name array with the packed form (names are ≤ 255 UTF-16 units each). */
  pack(): void {
    const names = this.#names;
    if (names === null) return;
    const starts = new Uint32Array(names.length);
    const lengths = new Uint8Array(names.length);
    let at = 0;
    for (let i = 0; i < names.length; i++) {
      starts[i] = at;
      lengths[i] = names[i].length;
      at += names[i].length;
    }
    this.#text = names.join("");
    this.#bytesPerChar = BEYOND_LATIN1.test(this.#text) ? 2 : 1;
    this.#starts = starts;
    this.#lengths = lengths;
    this.#names = null;
  }
}

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

const EMPTY = new SortedDir([], new Uint8Array(0), false, false);

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
  return dir.kinds[index] === DIR ? `${dir.nameAt(index)}/` : dir.nameAt(index);
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
 * Reads and sorts `path`. Per entry: its name (shared by a directory's DIR and NESTED entries),
 * a sort key for a directory (`name/`) and array slots; the sort orders entry numbers.
 */
function readDirectory(path: string): SortedDir {
  const names: string[] = [];
  const sortKeys: string[] = [];
  const kindOf: number[] = [];
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
      if (type === ENTRY_DIRECTORY) {
        names.push(name, name);
        sortKeys.push(`${name}/`, name);
        kindOf.push(DIR, NESTED);
      } else if (type === ENTRY_FILE) {
        names.push(name);
        sortKeys.push(name);
        kindOf.push(FILE);
      } else return;
      astral ||= SURROGATE_OR_LATER.test(name);
    });
  } catch (err) {
    const code = (err as { code?: unknown } | null)?.code;
    if (code === "ENOENT" || code === "ENOTDIR") return EMPTY;
    throw err;
  }
  const order = new Array<number>(names.length);
  for (let i = 0; i < order.length; i++) order[i] = i;
  // JavaScript's own comparison is byte order unless names hold U+D800 or above, and it is
  // several times faster than compareUtf8 on large directories.
  order.sort(
    astral ? (a, b) => compareUtf8(sortKeys[a], sortKeys[b]) : (a, b) => {
      const x = sortKeys[a];
      const y = sortKeys[b];
      return x < y ? -1 : x > y ? 1 : 0;
    },
  );
  const kinds = new Uint8Array(order.length);
  const sorted = new Array<string>(order.length);
  for (let i = 0; i < order.length; i++) {
    kinds[i] = kindOf[order[i]];
    sorted[i] = names[order[i]];
  }
  return new SortedDir(sorted, kinds, hasObjectEntry, hasMarkerEntry);
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
