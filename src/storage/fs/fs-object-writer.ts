/**
 * Writing objects of the filesystem backend: staging uploads (fs-staged-object.ts commits them),
 * rewriting metadata in place, and deletes. Every refusal of a write happens before the first
 * byte of its body is read.
 */

import type {
  DeleteCondition,
  LocalExtent,
  ObjectInfo,
  ObjectMeta,
  StagedObject,
} from "../backend.ts";
import { SvcError, writeStreamToFile } from "../../lib/mod.ts";
import { removeXattr, setJsonXattr } from "../../native/mod.ts";
import { EarlyWriteback } from "./early-writeback.ts";
import type { BucketDirectories } from "./fs-buckets.ts";
import { fsyncDirectory, isAbsentError, nullIfAbsent, statOrNull } from "./fs-calls.ts";
import type { StoredMeta } from "./fs-extents.ts";
import {
  checkPathConflicts,
  locateObjectSync,
  objectPath,
  parseKey,
  parseKeyOrNull,
  placeFile,
} from "./fs-keys.ts";
import { fitsAttribute, rewriteMetaInFile } from "./fs-meta-spill.ts";
import { pathLock } from "./fs-nesting.ts";
import { META_XATTR, readMarkerSync, readMeta, versionOf } from "./fs-object-meta.ts";
import { READ_ATTEMPTS, readObject } from "./fs-object-reader.ts";
import {
  type CommitContext,
  markerFileOfMeta,
  stagedFile,
  stagedMarker,
  underConditionLock,
} from "./fs-staged-object.ts";
import { MARKER_ENTRY, OBJECT_ENTRY } from "./fs-reserved.ts";
import { removeDirectoryIfEmptySync, removeEmptyParentsSync } from "./fs-tree-cleanup.ts";
import { RETIRE_MIN_BYTES } from "./retired-files.ts";

export class ObjectWriter {
  constructor(
    private readonly buckets: BucketDirectories,
    /** `<root>/.svc/tmp`: on the buckets' filesystem, so a commit is a rename. */
    private readonly tmpDir: string,
    private readonly context: CommitContext,
  ) {}

  async stage(
    bucket: string,
    key: string,
    body: ReadableStream<Uint8Array>,
    signal?: AbortSignal,
  ): Promise<StagedObject> {
    // Every refusal happens before the first byte is read.
    const parsed = parseKey(key);
    const bucketDir = await this.buckets.require(bucket);
    await checkPathConflicts(bucketDir, parsed);
    const tmpPath = `${this.tmpDir}/${crypto.randomUUID()}.put`;
    // Not inline, unlike the metadata calls: creating a name locks the temp directory, which
    // concurrent commits hold while they rename out of it, and the main thread would wait there.
    const file = await Deno.open(tmpPath, { write: true, createNew: true });
    const writeback = new EarlyWriteback(tmpPath);
    let size: number;
    try {
      // The body's stages (digests, checksums) keep no chunk: read buffers are recycled.
      size = await writeStreamToFile(body, file, signal, undefined, {
        recycle: true,
        onWritten: (bytes) => writeback.wrote(bytes),
      });
    } catch (err) {
      await writeback.settle().catch(() => {});
      file.close();
      await Deno.remove(tmpPath).catch(() => {});
      throw err;
    }
    if (parsed.marker && size === 0) {
      // An empty marker is the directory's own attribute, as it always was.
      file.close();
      await Deno.remove(tmpPath);
      return stagedMarker(this.context, bucketDir, parsed, this.tmpDir);
    }
    return stagedFile(this.context, bucketDir, parsed, tmpPath, file, size, undefined, writeback);
  }

  /**
   * A completed multipart upload's parts as the object's extents, hard-linked (see
   * fs-extents.ts): no byte is copied. null when that cannot be done (a key ending in `/`, or
   * parts on another filesystem): the caller then streams them through stageObject.
   */
  async stageExtents(
    bucket: string,
    key: string,
    sources: LocalExtent[],
  ): Promise<StagedObject | null> {
    const parsed = parseKey(key);
    const bucketDir = await this.buckets.require(bucket);
    await checkPathConflicts(bucketDir, parsed);
    if (parsed.marker) return null;
    const extents = await this.context.extents.link(sources, { bucket, key });
    if (extents === null) return null;
    const tmpPath = `${this.tmpDir}/${crypto.randomUUID()}.put`;
    let file: Deno.FsFile;
    try {
      file = await Deno.open(tmpPath, { write: true, createNew: true });
    } catch (err) {
      await this.context.extents.release(extents);
      throw err;
    }
    const size = sources.reduce((sum, source) => sum + source.size, 0);
    return stagedFile(this.context, bucketDir, parsed, tmpPath, file, size, extents);
  }

  /**
   * Rewrites the metadata attribute of the file in place. One setxattr replaces the whole record
   * atomically (a crash leaves the old record or the new one, never a mix), and the bytes are
   * not touched. The inode is checked synchronously right before the write, so a concurrent
   * replacement of the file (possible only from outside the key lock) is re-read, not tagged.
   * A record too large for the attribute is written after the bytes first (fs-meta-spill.ts);
   * an empty marker's then becomes a marker file.
   */
  async updateMeta(
    bucket: string,
    key: string,
    update: (meta: ObjectMeta) => ObjectMeta,
  ): Promise<ObjectInfo | null> {
    const parsed = parseKeyOrNull(key);
    for (let attempt = 0; parsed && attempt < READ_ATTEMPTS; attempt++) {
      const found = readObject(this.buckets.dir(bucket), parsed);
      if (!found) break;
      // The file holding the object (plain, nested or a marker with a body), else the marker's
      // directory itself.
      const path = found.ino?.path ?? objectPath(this.buckets.dir(bucket), parsed);
      const meta = update(found.info.meta);
      // An object kept as extents keeps naming them (see fs-extents.ts).
      const stored: StoredMeta = found.extents === undefined
        ? meta
        : { ...meta, extents: found.extents };
      const isCurrent = () => {
        const stat = statOrNull(path);
        return found.ino ? stat?.ino === found.ino.ino : stat?.isDirectory === true;
      };
      const file = found.ino;
      // The bytes the file holds before any metadata record (fs-meta-spill.ts).
      const bodyBytes = found.extents === undefined ? found.info.storedSize : 0;
      let done: boolean;
      if (file && (statOrNull(path)?.size !== bodyBytes || !fitsAttribute(stored))) {
        // A record after the bytes, now or before: rewritten where readers do not look.
        done = await rewriteMetaInFile(path, file.ino, bodyBytes, stored, isCurrent);
      } else if (!file && !fitsAttribute(stored)) {
        // An empty marker outgrowing its directory's attribute becomes a marker file.
        const tmpPath = await markerFileOfMeta(this.tmpDir, stored);
        await placeFile(tmpPath, this.buckets.dir(bucket), parsed, this.context);
        return { ...found.info, meta };
      } else {
        // Synchronous from the check to the write: a replacement is re-read, not tagged.
        done = isCurrent();
        if (done) setJsonXattr(path, META_XATTR, stored);
      }
      if (!done) continue;
      await fsyncPath(path, !found.ino);
      return { ...found.info, meta };
    }
    await this.buckets.require(bucket);
    return null;
  }

  /**
   * Removes the object; with `condition`, only while it is that version, checked and removed
   * under the key lock conditional commits take (PreconditionFailed otherwise).
   */
  async delete(bucket: string, key: string, condition?: DeleteCondition): Promise<boolean> {
    if (!condition) return await this.#delete(bucket, key);
    const parsed = parseKeyOrNull(key);
    const bucketDir = await this.buckets.require(bucket);
    if (!parsed) return false;
    return await underConditionLock(bucketDir, parsed.key, async () => {
      const current = locateObjectSync(bucketDir, parsed);
      if (current === null) return false;
      if (versionOf(current) !== condition.ifMatch) {
        throw new SvcError(
          "PreconditionFailed",
          `Delete of "${key}" refused: If-Match "${condition.ifMatch}" did not hold`,
          { Condition: "If-Match" },
        );
      }
      return await this.#delete(bucket, key);
    });
  }

  async #delete(bucket: string, key: string): Promise<boolean> {
    const parsed = parseKeyOrNull(key);
    const bucketDir = await this.buckets.require(bucket);
    if (!parsed) return false;
    const path = objectPath(this.buckets.dir(bucket), parsed);
    let dirs = parsed.segments.slice(0, -1);
    const { listings } = this.context;
    if (parsed.marker) {
      // Synchronous so a concurrent marker write on this directory cannot interleave.
      if (!readMarkerSync(path)) return false;
      listings.ownChangeStarting(path);
      removeXattr(path, META_XATTR);
      await Deno.remove(`${path}/${MARKER_ENTRY}`).catch(nullIfAbsent);
      removeDirectoryIfEmptySync(listings, path);
    } else {
      const stat = await Deno.lstat(path).catch(nullIfAbsent);
      let removed: StoredMeta | false | "moved";
      if (stat?.isDirectory) {
        // The object named like a directory lives inside it (fs-nesting.ts).
        removed = await removeObjectFile(`${path}/${OBJECT_ENTRY}`, this.context);
        if (!removed || removed === "moved") return false;
        dirs = parsed.segments;
      } else {
        if (!stat?.isFile) return false;
        // Under the path lock: a conversion of this file into a directory is not half done.
        removed = await pathLock.run(path, () => removeObjectFile(path, this.context));
        if (removed === "moved") return await this.#delete(bucket, key);
        if (!removed) return false;
      }
      await this.context.extents.release(removed.extents);
    }
    const survivor = removeEmptyParentsSync(listings, bucketDir, dirs);
    await fsyncDirectory(survivor);
    return true;
  }
}

/** Makes an attribute change durable: fsync of the file (or of the marker's directory). */
async function fsyncPath(path: string, directory: boolean): Promise<void> {
  if (directory) return await fsyncDirectory(path);
  const file = await Deno.open(path, { read: true }).catch(nullIfAbsent);
  if (!file) return; // deleted meanwhile: nothing left to make durable
  try {
    await file.sync();
  } finally {
    file.close();
  }
}

/**
 * Unlinks an object file: its stored metadata when removed (its extents are the caller's to
 * release), false when it was absent or not an object, "moved" when it turned into a directory
 * (a conversion finished first).
 */
async function removeObjectFile(
  path: string,
  { listings, retired }: CommitContext,
): Promise<StoredMeta | false | "moved"> {
  const stat = await Deno.lstat(path).catch(nullIfAbsent);
  if (stat?.isDirectory) return "moved";
  const stored: StoredMeta | null = stat?.isFile ? readMeta(path) : null;
  if (stored === null) return false;
  listings.ownChangeStarting(path.slice(0, path.lastIndexOf("/")));
  if (stat!.size >= RETIRE_MIN_BYTES && await retired.take(path)) return stored;
  try {
    await Deno.remove(path);
    return stored;
  } catch (err) {
    if (isAbsentError(err)) return false; // a concurrent delete won
    throw err;
  }
}
