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
 * hiding behind a cached entry. A stale entry could only hide additions: a vanished name fails its
 * verification and is skipped anyway. A directory svc keeps writing to is never quiet that long,
 * so svc's own changes patch its cached listing instead of forcing a read per page (see
 * DirectoryListings.ownChangeStarting); once quiet, or after MAX_UNVERIFIED_MS, it is read whole
 * again.
 */

import { isReservedEntry, MARKER_ENTRY, OBJECT_ENTRY } from "../fs-reserved.ts";
import { ENTRY_DIRECTORY, ENTRY_FILE, readDirectoryEntries } from "../../../native/mod.ts";
import { SortedDir } from "./sorted-entries.ts";
import { compareUtf8 } from "../../../lib/mod.ts";

export { DIR, FILE, NESTED, SortedDir } from "./sorted-entries.ts";

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

/**
 * A listing read whole while the directory was quiet (or, provisionally, while svc wrote to it),
 * plus what svc itself added to the directory since (see ownChangeStarting). It is read whole
 * again once the directory is quiet after changes, or after MAX_UNVERIFIED_MS of own changes.
 */
interface CacheEntry {
  stamp: string;
  dir: SortedDir;
  /** When the listing was read whole (Date.now()). */
  readAt: number;
  /** svc changed the directory since `stamp` was taken: a new stamp may be its own doing. */
  ownChanges: boolean;
  /** Read while the directory was changing (svc writing to it): read again once it is quiet. */
  provisional: boolean;
  /** Sort keys svc added since, merged into `dir` at the next use. */
  added: string[];
}

/**
 * How long a listing kept up to date by svc's own changes is used without a full read, at most:
 * also how long a change by another program, made while svc keeps changing the directory, can
 * stay unseen.
 */
const MAX_UNVERIFIED_MS = 30_000;
/**
 * When svc last started a change of each directory is remembered for this many directories at
 * most: forgotten wholesale when full.
 */
const OWN_CHANGE_MEMORY = 4096;

/** How a backend's listing cache behaves (FilesystemBackendOptions.listing). */
export interface ListingOptions {
  /** MAX_UNVERIFIED_MS (tests shorten it). */
  unverifiedMs?: number;
  /** Told the path of every directory read whole (tests count the reads). */
  onDirectoryRead?: (path: string) => void;
}

/**
 * The sorted listings of one data directory's large directories (see the header): the cache, its
 * byte budget, and what svc itself is changing. FilesystemBackend.open hands them to the code that
 * lists and changes directories; every backend open on one root gets the same (shared-listings.ts).
 */
export class DirectoryListings {
  /** Path → listing, in least-recently-used order (Map iteration order). */
  readonly #cache = new Map<string, CacheEntry>();
  #cachedBytes = 0;
  /**
   * When svc last started a change of each directory, so that a listing read while svc writes to
   * it is kept (provisionally) even without an earlier entry: after a restart under steady
   * writes. Bounded: forgotten wholesale when it holds OWN_CHANGE_MEMORY directories.
   */
  readonly #lastOwnChange = new Map<string, number>();
  readonly unverifiedMs: number;
  readonly onDirectoryRead: ((path: string) => void) | undefined;

  constructor(options: ListingOptions = {}) {
    this.unverifiedMs = options.unverifiedMs ?? MAX_UNVERIFIED_MS;
    this.onDirectoryRead = options.onDirectoryRead;
  }

  /** Whether these listings behave as `options` asks (a second open of the same root). */
  matches(options: ListingOptions): boolean {
    return this.unverifiedMs === (options.unverifiedMs ?? MAX_UNVERIFIED_MS) &&
      this.onDirectoryRead === options.onDirectoryRead;
  }

  /**
   * The entries of `path` in key order: regular files, directories (each also as a NESTED
   * candidate); reserved entries, symlinks and special files left out. A directory that vanished
   * (a concurrent delete removed it) reads as empty. Synchronous on purpose: Deno's async readDir
   * costs ~5 µs of JavaScript per entry in promise hops that hold the event loop just the same,
   * the sync one ~1 µs.
   */
  sorted(path: string): SortedDir {
    const cache = this.#cache;
    const hit = cache.get(path);
    if (hit) {
      if (this.#isCurrent(path, hit)) {
        cache.delete(path); // most recently used goes last
        cache.set(path, hit);
        if (hit.added.length > 0) this.#mergeAdded(hit);
        return hit.dir;
      }
      this.#forget(path);
    }
    const readStart = Date.now();
    this.onDirectoryRead?.(path);
    const dir = readDirectory(path);
    if (dir.length >= CACHE_MIN_ENTRIES) {
      const svcWriting = (this.#lastOwnChange.get(path) ?? 0) > readStart - STABLE_MS;
      this.#remember(path, dir, readStart, svcWriting);
    }
    return dir;
  }

  /**
   * Tells the cache that svc is about to change the entries of `dir` (a rename into or out of
   * it, a mkdir, an unlink): until the directory is quiet again, a new stamp is taken for svc's
   * own doing instead of forcing a read of the whole directory per listing page. Every change svc
   * makes to a bucket directory calls this first, and ownEntryAdded once a new name is there: a
   * directory that takes writes without pause (ingestion into one flat prefix) then keeps its
   * cached listing, where it would otherwise be read and sorted again for every page (~1.3 s per
   * million files).
   */
  ownChangeStarting(dir: string): void {
    const entry = this.#cache.get(dir);
    if (entry) entry.ownChanges = true;
    const lastOwnChange = this.#lastOwnChange;
    if (lastOwnChange.size >= OWN_CHANGE_MEMORY) lastOwnChange.clear();
    lastOwnChange.set(dir, Date.now());
  }

  /** svc added `name` to `dir`: a file, or a directory (which is also a NESTED candidate). */
  ownEntryAdded(dir: string, name: string, isDirectory: boolean): void {
    const entry = this.#cache.get(dir);
    if (!entry) return;
    // The reserved entries are flags of the listing, not entries: read it again.
    if (isReservedEntry(name)) return this.#forget(dir);
    entry.ownChanges = true;
    if (isDirectory) entry.added.push(`${name}/`, `${name}\0`);
    else entry.added.push(name);
  }

  /**
   * Whether a cached listing still holds every entry: the directory is unchanged since the read,
   * or svc's own changes (all of them merged in as they finish) changed it and it is still being
   * changed (it was not quiet for STABLE_MS) within unverifiedMs of the read. A quiet directory
   * whose stamp moved is read again, which also sees any change by another program.
   */
  #isCurrent(path: string, entry: CacheEntry): boolean {
    let stat: Deno.FileInfo;
    try {
      stat = Deno.lstatSync(path);
    } catch {
      return false;
    }
    const mtime = stat.mtime?.getTime() ?? 0;
    const ctime = stat.ctime?.getTime() ?? 0;
    const now = Date.now();
    const quiet = Math.max(mtime, ctime) <= now - STABLE_MS;
    // A listing read while the directory changed is read again once it is quiet.
    if (`${stat.ino}:${mtime}:${ctime}` === entry.stamp) return !(entry.provisional && quiet);
    return entry.ownChanges && entry.stamp.startsWith(`${stat.ino}:`) && !quiet &&
      now - entry.readAt < this.unverifiedMs;
  }

  /** Merges what svc added into the cached listing (already present keys are skipped). */
  #mergeAdded(entry: CacheEntry): void {
    const added = sortUtf8Unique(entry.added).filter((key) => !entry.dir.hasKey(key));
    entry.added = [];
    if (added.length === 0) return;
    this.#cachedBytes -= entry.dir.packedBytes;
    entry.dir = entry.dir.withKeys(added);
    this.#cachedBytes += entry.dir.packedBytes;
  }

  /**
   * Caches a listing just read: when the directory was quiet before the read, or,
   * provisionally, when svc was writing to it (`svcWriting`: its own changes keep the listing
   * current from here, and a change by another program in the same timestamp tick is caught
   * once it is quiet). Called in the same synchronous step as the read, so an ownEntryAdded of a
   * rename that raced the read always finds the entry.
   */
  #remember(path: string, dir: SortedDir, readStart: number, svcWriting: boolean): void {
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
    const provisional = Math.max(mtime, ctime) > readStart - STABLE_MS;
    if (provisional && !svcWriting) return;
    dir.pack();
    if (dir.packedBytes > CACHE_MAX_BYTES) return;
    const stamp = `${stat.ino}:${mtime}:${ctime}`;
    const entry = { stamp, dir, readAt: readStart, ownChanges: false, provisional, added: [] };
    this.#cache.set(path, entry);
    this.#cachedBytes += dir.packedBytes;
    for (const [oldest] of this.#cache) {
      if (this.#cachedBytes <= CACHE_MAX_BYTES) break;
      this.#forget(oldest);
    }
  }

  #forget(path: string): void {
    const entry = this.#cache.get(path);
    if (!entry) return;
    this.#cache.delete(path);
    this.#cachedBytes -= entry.dir.packedBytes;
  }
}

export function sortKeyAt(dir: SortedDir, index: number): string {
  return dir.sortKeyAt(index);
}

function sortUtf8Unique(keys: string[]): string[] {
  return [...new Set(keys)].sort(compareUtf8);
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
