/**
 * Walking a bucket directory in S3 key order.
 *
 * Directories are read in key order through fs-sorted-dir.ts (cached when large), and each
 * directory level starts at the first entry that can be in range (binary search), so a page
 * costs O(page) whatever the size of the directory or the subtree. The
 * walk yields candidates only: whether a file or directory really is an object (carries the
 * metadata attribute) is decided by the caller (listed-objects.ts), because that costs a stat the
 * walk would waste on entries a page never reaches.
 */

import { OBJECT_ENTRY } from "../fs-reserved.ts";
import {
  DIR,
  type DirectoryListings,
  FILE,
  NESTED,
  type SortedDir,
  sortKeyAt,
} from "./fs-sorted-dir.ts";
import { compareUtf8 } from "../../../lib/mod.ts";
import { leanLstat, lookupXattr, REGULAR_FILE } from "../../../native/mod.ts";
import { META_XATTR } from "../fs-object-meta.ts";

const utf8 = new TextEncoder();

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
 * Yields candidates below `bucketDir` in key order, restricted to `prefix` and `startAfter`,
 * reading directories through `listings` (the root's cache). Directories wholly outside the
 * prefix or wholly at or before `startAfter` are never read. Synchronous (see
 * DirectoryListings.sorted): an async generator only adds a promise per entry, and its
 * microtasks would hold the event loop just as long.
 */
export function* walkKeys(
  listings: DirectoryListings,
  bucketDir: string,
  options: WalkOptions,
): Generator<WalkItem> {
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
  const walk = new Walk(listings, options);
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

  constructor(readonly listings: DirectoryListings, readonly options: WalkOptions) {}

  read(path: string): SortedDir {
    if (path !== this.#recentPath || !this.#recent) {
      this.#recent = this.listings.sorted(path);
      this.#recentPath = path;
    }
    return this.#recent;
  }

  /**
   * Whether the directory at `path` holds keys below its own name, so that rolled up it is a
   * common prefix. A directory holding only its nested object (left when the last key below the
   * object went: the object stays where it is, as moving it back could not be atomic for readers
   * and writers at once) holds none. One lstat per prefix; the directory is read only when it
   * does hold a nested object, and then its entries, marker entry and own marker attribute
   * decide (an empty subdirectory left by a racing delete still counts, as it always did).
   */
  holdsKeys(path: string): boolean {
    if (leanLstat(`${path}/${OBJECT_ENTRY}`) !== REGULAR_FILE) return true;
    const dir = this.read(path);
    return dir.length > 0 || dir.hasMarkerEntry || lookupXattr(path, META_XATTR) !== null;
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
        if (isAfter(key, startAfter) && this.holdsKeys(path)) yield { kind: "prefix", key, path };
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
