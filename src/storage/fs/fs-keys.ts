/**
 * Object keys as filesystem paths: which keys can be stored, and putting a committed object in
 * place. A key `a/b` is the file `<bucket>/a/b`; a key ending in `/` (a directory marker) is the
 * directory itself, carrying the metadata attribute. When a key's path must also be a
 * directory (`a` next to `a/b`), the object lives inside that directory under a reserved name
 * (fs-nesting.ts); clients cannot use those names as key segments.
 */

import { dotSegmentOf, SvcError } from "../../lib/mod.ts";
import type { ObjectMeta } from "../backend.ts";
import {
  errorCode,
  fsyncDirectory,
  isDirectorySync,
  nullIfAbsent,
  statOrNull,
} from "./fs-calls.ts";
import {
  fileObject,
  META_XATTR,
  readFileObjectSync,
  readMarkerSync,
  readMeta,
  type StoredObject,
} from "./fs-object-meta.ts";
import { type NestingOptions, nestObjectFile, pathLock } from "./fs-nesting.ts";
import type { DirectoryListings } from "./listing/fs-sorted-dir.ts";
import { lstatNoThrow, removeXattr, setJsonXattr } from "../../native/mod.ts";
import { isReservedEntry, MARKER_ENTRY, OBJECT_ENTRY } from "./fs-reserved.ts";

/** A validated key: its path segments, and whether it names a directory marker. */
export interface ParsedKey {
  key: string;
  segments: string[];
  marker: boolean;
}

/**
 * What changing the tree of a key works with: the root's listing cache, told of every change
 * (fs-sorted-dir.ts), and how a file in the way is converted (fs-nesting.ts).
 */
export interface Placement {
  listings: DirectoryListings;
  nesting: NestingOptions;
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
  const dot = dotSegmentOf(key);
  if (dot !== null) throw invalid(`has a "${dot}" path segment`);
  const marker = key.endsWith("/");
  const segments = (marker ? key.slice(0, -1) : key).split("/");
  for (const segment of segments) {
    if (segment === "") throw invalid("has an empty path segment");
    if (isReservedEntry(segment)) {
      throw invalid(`has a "${segment}" path segment, a name the storage reserves`);
    }
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
 * Refuses a key only for a file in its way that is not an object (placed by hand: never moved,
 * never deleted). An object file in the way becomes a directory at commit (fs-nesting.ts), and a
 * directory where the key's file goes holds the object inside it. Cheap on the common path: no
 * call for a key of one segment (the caller checked the bucket), one inline lstat otherwise.
 */
export async function checkPathConflicts(bucketDir: string, parsed: ParsedKey): Promise<void> {
  const { segments } = parsed;
  // A key of one segment has the bucket directory as parent, which the caller just checked.
  const parent = segments.length === 1 ? null : (() => {
    // Inline like every other metadata call of the object hot path (see statOrNull in
    // fs-calls.ts): an lstat walks cached entries and takes no directory lock.
    try {
      return Deno.lstatSync([bucketDir, ...segments.slice(0, -1)].join("/"));
    } catch (err) {
      // ENOENT: path resolution stopped at a missing directory, so no file is in the way above.
      if (errorCode(err) === "ENOENT") return null;
      if (errorCode(err) === "ENOTDIR") return "file-above" as const;
      throw err;
    }
  })();
  if (parent === "file-above" || (parent && !parent.isDirectory)) {
    const blocking = await blockingNonObject(bucketDir, parsed);
    if (blocking) throw blocking;
  }
  if (!parsed.marker) return;
  const targetPath = objectPath(bucketDir, parsed);
  const target = await Deno.lstat(targetPath).catch(nullIfAbsent);
  if (target && !target.isDirectory && isNonObjectFileSync(targetPath)) {
    throw pathConflict(parsed.key, segments.join("/"), false);
  }
}

/**
 * Moves the committed temp file (metadata already set) to where the key lives and makes the new
 * name durable. The rename is the commit point: before it the old object (if any) is intact.
 * A plain key goes to its own path, or inside it as OBJECT_ENTRY when that path is a directory;
 * a marker with a body goes to MARKER_ENTRY inside its directory (see fs-nesting.ts).
 */
export async function placeFile(
  tmpPath: string,
  bucketDir: string,
  parsed: ParsedKey,
  placement: Placement,
) {
  if (parsed.marker) return await placeMarkerFile(tmpPath, bucketDir, parsed, placement);
  const { listings } = placement;
  const plain = objectPath(bucketDir, parsed);
  for (let attempt = 1;; attempt++) {
    await makeDirectories(bucketDir, parsed, parsed.segments.length - 1, placement);
    const nested = statOrNull(plain)?.isDirectory === true;
    const target = nested ? `${plain}/${OBJECT_ENTRY}` : plain;
    const parent = target.slice(0, target.lastIndexOf("/"));
    try {
      listings.ownChangeStarting(parent);
      // A rename onto the plain path waits for a conversion of that path (see fs-nesting.ts).
      if (nested) await Deno.rename(tmpPath, target);
      else await pathLock.run(plain, () => Deno.rename(tmpPath, target));
      listings.ownEntryAdded(parent, target.slice(parent.length + 1), false);
      await fsyncDirectory(parent);
      return;
    } catch (err) {
      const code = errorCode(err);
      if (attempt >= PLACE_ATTEMPTS) throw err;
      // A parent was pruned, became a file, or the path became a directory since we looked.
      if (code !== "ENOENT" && code !== "ENOTDIR" && code !== "EISDIR") throw err;
    }
  }
}

/** placeFile for a marker with a body: the file replaces the directory's own attribute. */
async function placeMarkerFile(
  tmpPath: string,
  bucketDir: string,
  parsed: ParsedKey,
  placement: Placement,
) {
  const dir = objectPath(bucketDir, parsed);
  for (let attempt = 1;; attempt++) {
    await makeDirectories(bucketDir, parsed, parsed.segments.length, placement);
    try {
      await Deno.rename(tmpPath, `${dir}/${MARKER_ENTRY}`);
      placement.listings.ownEntryAdded(dir, MARKER_ENTRY, false);
      break;
    } catch (err) {
      const code = errorCode(err);
      if (attempt >= PLACE_ATTEMPTS || (code !== "ENOENT" && code !== "ENOTDIR")) throw err;
    }
  }
  await fsyncDirectory(dir);
  // The file is the marker now (readMarkerSync prefers the later of the two): drop the
  // attribute an empty marker had, so the directory alone no longer reads as one.
  removeXattr(dir, META_XATTR);
}

/**
 * Makes the key's directory a marker by setting its metadata attribute. setxattr replaces the
 * value atomically, so an existing directory (with children) becomes a marker in one step.
 */
export async function placeMarker(
  bucketDir: string,
  parsed: ParsedKey,
  meta: ObjectMeta,
  placement: Placement,
) {
  const path = objectPath(bucketDir, parsed);
  for (let attempt = 1;; attempt++) {
    await makeDirectories(bucketDir, parsed, parsed.segments.length - 1, placement);
    const placed = placeMarkerSync(placement.listings, path, meta);
    if (placed === "placed") break;
    if (placed === "file") await nestOrRefuse(path, parsed, parsed.segments.length, placement);
    if (attempt >= PLACE_ATTEMPTS) throw new Error(`Could not create directory "${path}"`);
  }
  await fsyncDirectory(path);
  await fsyncDirectory(path.slice(0, path.lastIndexOf("/")));
  // A marker with a body stored before: the attribute (later) is the marker now.
  await Deno.remove(`${path}/${MARKER_ENTRY}`).catch(nullIfAbsent);
}

/**
 * mkdir and the attribute as one synchronous step, so the empty-parent cleanup of a concurrent
 * delete (synchronous too) never sees the new directory without its attribute and removes it.
 */
function placeMarkerSync(
  listings: DirectoryListings,
  path: string,
  meta: ObjectMeta,
): "placed" | "file" | "retry" {
  const parent = path.slice(0, path.lastIndexOf("/"));
  try {
    listings.ownChangeStarting(parent);
    Deno.mkdirSync(path);
    listings.ownEntryAdded(parent, path.slice(parent.length + 1), true);
  } catch (err) {
    const code = errorCode(err);
    // A parent was pruned, or became a file, since makeDirectories: its next run sorts that out.
    if (code === "ENOENT" || code === "ENOTDIR") return "retry";
    if (code !== "EEXIST") throw err;
    if (!isDirectorySync(path)) return "file";
  }
  listings.ownChangeStarting(path); // the attribute moves the directory's ctime
  setJsonXattr(path, META_XATTR, meta);
  return "placed";
}

/**
 * Creates the first `depth` directories of the key's path, fsyncing each parent so a new name
 * survives a crash. An object file in the way becomes a directory holding it (fs-nesting.ts);
 * any other file is ObjectPathConflict. NoSuchBucket when the bucket went.
 */
async function makeDirectories(
  bucketDir: string,
  parsed: ParsedKey,
  depth: number,
  placement: Placement,
) {
  const { listings } = placement;
  const dirs = parsed.segments.slice(0, depth);
  // The common case, every directory there already: one inline lstat.
  if (statOrNull([bucketDir, ...dirs].join("/"))?.isDirectory) return;
  if (!(await Deno.lstat(bucketDir).catch(nullIfAbsent))?.isDirectory) {
    throw noSuchBucket(bucketDir);
  }
  let restarts = 0;
  for (let i = 0, path = bucketDir; i < dirs.length; i++) {
    const parent = path;
    path += `/${dirs[i]}`;
    try {
      listings.ownChangeStarting(parent);
      await Deno.mkdir(path);
      listings.ownEntryAdded(parent, dirs[i], true);
      await fsyncDirectory(parent);
    } catch (err) {
      const code = errorCode(err);
      if ((code === "ENOENT" || code === "ENOTDIR") && i > 0 && restarts++ < PLACE_ATTEMPTS) {
        [i, path] = [-1, bucketDir]; // a concurrent delete pruned a parent: start over
        continue;
      }
      if (code === "ENOENT" && i === 0) throw noSuchBucket(bucketDir);
      if (code !== "EEXIST") throw err;
      if ((await Deno.lstat(path).catch(nullIfAbsent))?.isDirectory) continue;
      await nestOrRefuse(path, parsed, i + 1, placement);
      if (restarts++ >= PLACE_ATTEMPTS) throw err;
      [i, path] = [i - 1, parent]; // look at this level again
    }
  }
}

/** Converts the object file at `path` (the key's first `depth` segments) into a directory. */
async function nestOrRefuse(
  path: string,
  parsed: ParsedKey,
  depth: number,
  placement: Placement,
): Promise<void> {
  if (isNonObjectFileSync(path)) {
    throw pathConflict(parsed.key, parsed.segments.slice(0, depth).join("/"), false);
  }
  // Gone or a directory meanwhile: the conversion declines and the caller looks again.
  const root = path.slice(0, path.length - parsed.segments.slice(0, depth).join("/").length - 1);
  const tmpDir = `${root.slice(0, root.lastIndexOf("/"))}/.svc/tmp`;
  await pathLock.run(
    path,
    () => nestObjectFile(path, tmpDir, placement.listings, placement.nesting),
  );
}

/** The conflict for a non-object file found where one of the key's directories must go. */
async function blockingNonObject(
  bucketDir: string,
  parsed: ParsedKey,
): Promise<SvcError | undefined> {
  let path = bucketDir;
  for (let i = 0; i < parsed.segments.length - 1; i++) {
    path += `/${parsed.segments[i]}`;
    const stat = await Deno.lstat(path).catch(nullIfAbsent);
    if (stat && !stat.isDirectory) {
      if (!isNonObjectFileSync(path)) return undefined; // an object: nested at commit
      return pathConflict(parsed.key, parsed.segments.slice(0, i + 1).join("/"), false);
    }
  }
  return undefined;
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

/**
 * Where the object of a key is stored, read synchronously (one lstat and one attribute read on
 * the plain layout): a file at its path, a file inside its directory when the path is a
 * directory, or the marker forms (readMarkerSync). null when absent or not an object.
 */
export function locateObjectSync(bucketDir: string, parsed: ParsedKey): StoredObject | null {
  const path = objectPath(bucketDir, parsed);
  if (parsed.marker) return readMarkerSync(path, undefined, true);
  // The plain layout costs what it always did: one lstat, one attribute read.
  const stat = lstatNoThrow(path);
  if (stat?.isDirectory) return readFileObjectSync(`${path}/${OBJECT_ENTRY}`, true);
  if (!stat?.isFile) return null;
  // Stat before metadata: see readFileObjectSync's forOpen.
  const meta = readMeta(path);
  return meta && fileObject(meta, path, stat);
}

/**
 * Whether `path` is a regular file without object metadata (placed by hand). An object file gets
 * its attribute before its name exists and never loses it, so one inode seen on both sides of a
 * missing attribute really is no object; anything else (gone, replaced, turned into a directory
 * by a concurrent conversion) is not a file in the way.
 */
function isNonObjectFileSync(path: string): boolean {
  const before = statOrNull(path);
  if (!before?.isFile || readMeta(path) !== null) return false;
  const after = statOrNull(path);
  return after?.isFile === true && after.ino === before.ino;
}
