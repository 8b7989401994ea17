/**
 * Tidying the tree after a delete: removing directories left empty, bottom-up, and never one
 * that is (or holds) an object. Synchronous, so that a marker write (also synchronous) cannot
 * land between the attribute check and the rmdir.
 */

import { readMeta } from "./fs-object-meta.ts";
import { errorCode, isAbsentError, nullIfAbsent } from "./fs-calls.ts";
import type { DirectoryListings } from "./listing/fs-sorted-dir.ts";

/**
 * rmdir; false when the directory is not empty. A directory already gone counts as removed.
 * `listings` (the root's listing cache) is told of the change first, as by every change below.
 */
export function removeDirectoryIfEmptySync(listings: DirectoryListings, path: string): boolean {
  try {
    listings.ownChangeStarting(path.slice(0, path.lastIndexOf("/")));
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
 * directory left standing.
 */
export function removeEmptyParentsSync(
  listings: DirectoryListings,
  bucketDir: string,
  dirs: string[],
): string {
  for (let depth = dirs.length; depth > 0; depth--) {
    const path = [bucketDir, ...dirs.slice(0, depth)].join("/");
    if (readMeta(path) !== null || !removeDirectoryIfEmptySync(listings, path)) return path;
  }
  return bucketDir;
}

/**
 * Removes `dir` and everything below it, bottom-up, provided nothing below is an object: an
 * object committed meanwhile makes an rmdir fail (or is seen) instead of being deleted with the
 * tree. Returns false, leaving what remains, when it meets an object or, unless `unlinkFiles`,
 * any file.
 */
export function removeTreeWithoutObjects(
  listings: DirectoryListings,
  dir: string,
  options: { unlinkFiles: boolean },
): boolean {
  let entries: Deno.DirEntry[];
  try {
    entries = [...Deno.readDirSync(dir)];
  } catch (err) {
    return nullIfAbsent(err) ?? true;
  }
  for (const entry of entries) {
    const path = `${dir}/${entry.name}`;
    if (entry.isDirectory) {
      if (!removeTreeWithoutObjects(listings, path, options)) return false;
    } else {
      if (!options.unlinkFiles || readMeta(path) !== null) return false;
      Deno.removeSync(path);
    }
  }
  if (readMeta(dir) !== null) return false;
  return removeDirectoryIfEmptySync(listings, dir);
}
