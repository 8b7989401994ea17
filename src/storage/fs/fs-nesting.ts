/**
 * Keys whose path must also be a directory. S3 lets `foo/bar` and `foo/bar/xyzzy` coexist, and a
 * key ending in `/` carry a body; a filesystem cannot hold a file and a directory under one name.
 * So when the path of key `k` is a directory, the object `k` lives inside it as the reserved
 * entry `k/.svc-object` ("nested"), and a marker `k/` with a non-empty body as `k/.svc-marker`
 * (an empty marker stays the directory's own attribute). Every other key keeps the plain
 * one-file-per-object layout. Clients can never send these two names as a key segment (fs-keys
 * refuses them), so they never collide with a client key.
 *
 * Converting the file `k` into the directory `k/` holding `k/.svc-object` is crash-safe; at
 * every instant the path is either the old file or the new directory, both readable:
 *
 *   1. mkdir a fresh directory T under `.svc/tmp/`
 *   2. hard-link the object file into T as `T/.svc-object` (same inode: bytes and metadata
 *      attribute come along, nothing is copied)
 *   3. fsync T
 *   4. renameat2(T, k, RENAME_EXCHANGE): one atomic swap; `k` is now the directory, T the old
 *      name of the file (a second link to the same inode)
 *   5. fsync the parent of `k`, so the swap is durable before anything is created below it
 *   6. unlink T
 *
 * A crash before 4 leaves the file untouched and T a stale temp entry; after 4, the directory
 * and T as a stale link. Stale temp entries are removed at the next start. Conversion, commits
 * onto a file path and deletes of a file run under the same per-path lock, so no write lands
 * on the old name between the link and the swap.
 */

import { KeyLock } from "../../lib/mod.ts";
import { errorCode, fsyncDirectory } from "./fs-calls.ts";
import { OBJECT_ENTRY } from "./fs-reserved.ts";
import type { DirectoryListings } from "./listing/fs-sorted-dir.ts";
import { exchangePaths } from "../../native/mod.ts";

export { MARKER_ENTRY, OBJECT_ENTRY } from "./fs-reserved.ts";

/**
 * Serializes the changes of one path's kind (file → directory) with commits and deletes of the
 * file there. One process per data directory, so an in-process lock covers every writer.
 */
export const pathLock = new KeyLock();

/** How a backend runs the conversion (FilesystemBackendOptions passes these through). */
export interface NestingOptions {
  /**
   * Called after each numbered conversion step (the list in the header) with the path being
   * converted. Tests throw from it to simulate a crash at that point.
   */
  onConversionStep?: (step: number, path: string) => void;
}

/**
 * Turns the object file at `path` into a directory holding it as OBJECT_ENTRY (the steps in the
 * header). Returns false when `path` is no longer a file (a concurrent delete or conversion won);
 * the caller re-examines the path. Call under `pathLock` for `path`.
 */
export async function nestObjectFile(
  path: string,
  tmpDir: string,
  listings: DirectoryListings,
  options: NestingOptions = {},
): Promise<boolean> {
  const hook = (step: number) => options.onConversionStep?.(step, path);
  const staging = `${tmpDir}/${crypto.randomUUID()}.nest`;
  await Deno.mkdir(staging);
  hook(1);
  try {
    await Deno.link(path, `${staging}/${OBJECT_ENTRY}`);
  } catch (err) {
    await Deno.remove(staging, { recursive: true }).catch(() => {});
    const code = errorCode(err);
    if (code === "ENOENT" || code === "EPERM" || code === "EISDIR") return false;
    throw err;
  }
  hook(2);
  await fsyncDirectory(staging);
  hook(3);
  const parent = path.slice(0, path.lastIndexOf("/"));
  try {
    listings.ownChangeStarting(parent);
    exchangePaths(staging, path);
    listings.ownEntryAdded(parent, path.slice(parent.length + 1), true);
  } catch (err) {
    await Deno.remove(staging, { recursive: true }).catch(() => {});
    if (errorCode(err) === "ENOENT") return false;
    throw err;
  }
  hook(4);
  await fsyncDirectory(path.slice(0, path.lastIndexOf("/")));
  hook(5);
  await Deno.remove(staging);
  return true;
}
