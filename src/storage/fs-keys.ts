/**
 * Object keys as filesystem paths: which keys can be stored, and putting a committed object in
 * place. A key `a/b` is the file `<bucket>/a/b`; a key ending in `/` (a directory marker) is the
 * directory itself. A name is either a file or a directory, so the key `a` cannot coexist with
 * `a/b` or `a/`; that is refused as ObjectPathConflict, never settled by deleting an object.
 */

import { SvcError } from "../errors.ts";
import type { ObjectMeta } from "./backend.ts";
import {
  errorCode,
  firstObjectKey,
  fsyncDirectory,
  isDirectorySync,
  META_XATTR,
  nullIfAbsent,
  readMeta,
  removeTreeWithoutObjects,
} from "./fs-walk.ts";
import { setJsonXattr } from "./xattr.ts";

/** A validated key: its path segments, and whether it names a directory marker. */
export interface ParsedKey {
  key: string;
  segments: string[];
  marker: boolean;
}

/** Retries when a concurrent delete prunes an empty parent directory we are about to use. */
const PLACE_ATTEMPTS = 5;
const MAX_KEY_BYTES = 1024;
/** NAME_MAX of ext4, xfs and btrfs. */
const MAX_SEGMENT_BYTES = 255;
const utf8 = new TextEncoder();

/** Validates a key for writing; throws InvalidObjectName or KeyTooLongError. */
export function parseKey(key: string): ParsedKey {
  const shown = key.length > 80 ? `${key.slice(0, 80)}…` : key;
  const invalid = (why: string) =>
    new SvcError("InvalidObjectName", `Key "${shown}" ${why}`, { Key: key });
  const tooLong = (why: string) =>
    new SvcError("KeyTooLongError", `Key "${shown}" ${why}`, { Key: key });
  if (key === "") throw invalid("is empty");
  if (utf8.encode(key).length > MAX_KEY_BYTES) throw tooLong("is longer than 1024 bytes");
  // A lone surrogate would be written as U+FFFD, so the key read back would differ.
  if (!key.isWellFormed()) throw invalid("contains an unpaired UTF-16 surrogate");
  if (key.includes("\0")) throw invalid("contains a NUL byte");
  const marker = key.endsWith("/");
  const segments = (marker ? key.slice(0, -1) : key).split("/");
  for (const segment of segments) {
    if (segment === "") throw invalid("has an empty path segment");
    if (segment === "." || segment === "..") throw invalid(`has a "${segment}" path segment`);
    if (utf8.encode(segment).length > MAX_SEGMENT_BYTES) {
      throw tooLong("has a path segment longer than 255 bytes");
    }
  }
  return { key, segments, marker };
}

/** Reads and deletes treat a key that could never be stored as absent. */
export function parseKeyOrNull(key: string): ParsedKey | null {
  try {
    return parseKey(key);
  } catch {
    return null;
  }
}

/** Dot names are internal state (`.svc`); `/` and NUL would leave the data directory. */
export function isUsableBucketName(bucket: string): boolean {
  return bucket !== "" && !bucket.startsWith(".") && !bucket.includes("/") &&
    !bucket.includes("\0");
}

export function objectPath(bucketDir: string, parsed: ParsedKey): string {
  return [bucketDir, ...parsed.segments].join("/");
}

/**
 * Refuses a key the filesystem cannot hold next to what exists: a file where the key needs a
 * directory (`a` blocks `a/b` and `a/`), or objects where the key needs a file (`a/b` or the
 * marker `a/` block `a`). A directory in the way that holds no object is stale and is removed
 * at commit. Cheap on the common path: two lstat calls.
 */
export async function checkPathConflicts(bucketDir: string, parsed: ParsedKey): Promise<void> {
  const { key, segments } = parsed;
  const parentPath = [bucketDir, ...segments.slice(0, -1)].join("/");
  const parent = await Deno.lstat(parentPath).catch((err) => {
    // ENOENT: path resolution stopped at a missing directory, so no file is in the way above.
    if (errorCode(err) === "ENOENT") return null;
    if (errorCode(err) === "ENOTDIR") return "file-above" as const;
    throw err;
  });
  if (parent === "file-above" || (parent && !parent.isDirectory)) {
    throw await blockingFileConflict(bucketDir, parsed);
  }
  const targetPath = objectPath(bucketDir, parsed);
  const target = await Deno.lstat(targetPath).catch(nullIfAbsent);
  if (!target) return;
  if (parsed.marker && !target.isDirectory) {
    throw pathConflict(key, segments.join("/"), readMeta(targetPath) !== null);
  }
  if (!parsed.marker && target.isDirectory) {
    const below = firstObjectKey(bucketDir, `${key}/`);
    if (below !== undefined) throw pathConflict(key, below, true);
  }
}

/**
 * Moves the committed temp file (metadata already set) onto the key's path and makes the new
 * name durable. The rename is the commit point: before it the old object (if any) is intact.
 */
export async function placeFile(tmpPath: string, bucketDir: string, parsed: ParsedKey) {
  const target = objectPath(bucketDir, parsed);
  for (let attempt = 1;; attempt++) {
    await makeParents(bucketDir, parsed);
    try {
      await Deno.rename(tmpPath, target);
      break;
    } catch (err) {
      const code = errorCode(err);
      if (code === "ENOTDIR") throw await blockingFileConflict(bucketDir, parsed);
      if (attempt >= PLACE_ATTEMPTS) throw err;
      if (code === "ENOENT") continue; // a parent was pruned between mkdir and rename
      if (code !== "EISDIR") throw err;
      clearStaleDirectorySync(bucketDir, parsed, target);
    }
  }
  await fsyncDirectory(target.slice(0, target.lastIndexOf("/")));
}

/**
 * Makes the key's directory a marker by setting its metadata attribute. setxattr replaces the
 * value atomically, so an existing directory (with children) becomes a marker in one step.
 */
export async function placeMarker(bucketDir: string, parsed: ParsedKey, meta: ObjectMeta) {
  const path = objectPath(bucketDir, parsed);
  for (let attempt = 1;; attempt++) {
    await makeParents(bucketDir, parsed);
    const placed = placeMarkerSync(path, meta);
    if (placed === "placed") break;
    if (placed === "file") {
      throw pathConflict(parsed.key, parsed.segments.join("/"), readMeta(path) !== null);
    }
    if (attempt >= PLACE_ATTEMPTS) throw new Error(`Could not create directory "${path}"`);
  }
  await fsyncDirectory(path);
  await fsyncDirectory(path.slice(0, path.lastIndexOf("/")));
}

/**
 * mkdir and the attribute as one synchronous step, so the empty-parent cleanup of a concurrent
 * delete (synchronous too) never sees the new directory without its attribute and removes it.
 */
function placeMarkerSync(path: string, meta: ObjectMeta): "placed" | "file" | "retry" {
  try {
    Deno.mkdirSync(path);
  } catch (err) {
    const code = errorCode(err);
    // A parent was pruned, or became a file, since makeParents: its next run sorts that out.
    if (code === "ENOENT" || code === "ENOTDIR") return "retry";
    if (code !== "EEXIST") throw err;
    if (!isDirectorySync(path)) return "file";
  }
  setJsonXattr(path, META_XATTR, meta);
  return "placed";
}

/**
 * Creates the key's missing parent directories, fsyncing each parent so a new name survives a
 * crash. Throws ObjectPathConflict when a file is in the way, NoSuchBucket when the bucket went.
 */
async function makeParents(bucketDir: string, parsed: ParsedKey): Promise<void> {
  const dirs = parsed.segments.slice(0, -1);
  if ((await Deno.lstat([bucketDir, ...dirs].join("/")).catch(nullIfAbsent))?.isDirectory) return;
  if (!(await Deno.lstat(bucketDir).catch(nullIfAbsent))?.isDirectory) {
    throw noSuchBucket(bucketDir);
  }
  let restarts = 0;
  for (let i = 0, path = bucketDir; i < dirs.length; i++) {
    const parent = path;
    path += `/${dirs[i]}`;
    try {
      await Deno.mkdir(path);
      await fsyncDirectory(parent);
    } catch (err) {
      const code = errorCode(err);
      if (code === "ENOENT" && i > 0 && restarts++ < PLACE_ATTEMPTS) {
        [i, path] = [-1, bucketDir]; // a concurrent delete pruned a parent: start over
        continue;
      }
      if (code === "ENOENT" && i === 0) throw noSuchBucket(bucketDir);
      if (code !== "EEXIST" && code !== "ENOTDIR") throw err;
      if ((await Deno.lstat(path).catch(nullIfAbsent))?.isDirectory) continue;
      throw await blockingFileConflict(bucketDir, parsed);
    }
  }
}

/**
 * Removes a directory standing where file `target` goes, unless an object lives in it. One
 * synchronous step, so no marker or object of this process lands between check and removal.
 */
function clearStaleDirectorySync(bucketDir: string, parsed: ParsedKey, target: string): void {
  const below = firstObjectKey(bucketDir, `${parsed.key}/`);
  if (below !== undefined) throw pathConflict(parsed.key, below, true);
  if (!removeTreeWithoutObjects(target, { unlinkFiles: false })) {
    throw new SvcError(
      "ObjectPathConflict",
      `Key "${parsed.key}" cannot be stored: directory "${parsed.key}/" holds files that are ` +
        `not objects`,
      { Key: parsed.key },
    );
  }
}

/** The conflict for the file found where one of the key's parent directories must go. */
async function blockingFileConflict(bucketDir: string, parsed: ParsedKey): Promise<SvcError> {
  let path = bucketDir;
  for (let i = 0; i < parsed.segments.length - 1; i++) {
    path += `/${parsed.segments[i]}`;
    const stat = await Deno.lstat(path).catch(nullIfAbsent);
    if (stat && !stat.isDirectory) {
      const other = parsed.segments.slice(0, i + 1).join("/");
      return pathConflict(parsed.key, other, readMeta(path) !== null);
    }
  }
  // The file went away meanwhile; a retry of the write will find the path free.
  return new SvcError(
    "ObjectPathConflict",
    `Key "${parsed.key}" conflicts with a concurrent write; retry`,
    { Key: parsed.key },
  );
}

/** The bucket was deleted while an upload into it was staged. */
function noSuchBucket(bucketDir: string): SvcError {
  const bucket = bucketDir.slice(bucketDir.lastIndexOf("/") + 1);
  return new SvcError("NoSuchBucket", `Bucket "${bucket}" does not exist`, { BucketName: bucket });
}

function pathConflict(key: string, other: string, otherIsObject: boolean): SvcError {
  const what = otherIsObject ? `existing key "${other}"` : `a non-object file at "${other}"`;
  return new SvcError(
    "ObjectPathConflict",
    `Key "${key}" conflicts with ${what}: the filesystem backend cannot store a file and a ` +
      `directory under the same name`,
    { Key: key, ConflictingKey: other },
  );
}
