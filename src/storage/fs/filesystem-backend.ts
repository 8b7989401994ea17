/**
 * The filesystem backend: each object is a plain file `<root>/<bucket>/<key>` whose metadata
 * (ObjectMeta JSON) lives in the `user.svc.meta` extended attribute. The attribute is set on the
 * temp file before the rename, so the rename is the single commit point and no half-written
 * object is ever visible. A key ending in `/` is a directory marker: the directory itself
 * carries the attribute, so `a/` and `a/b` coexist (see fs-keys.ts for the rules). A key whose
 * path must also be a directory (`a` beside `a/b`, or a marker with a body) is stored inside
 * that directory under a reserved name (fs-nesting.ts).
 *
 * Layout: `<root>/<bucket>/…` objects; `<root>/.svc/tmp/` uploads being staged (same filesystem
 * as the buckets, so the commit is a rename); `<root>/.svc/…` other internal state.
 *
 * Concurrency: one process per root. Checks that guard an rmdir or a marker write run as
 * synchronous blocks, so no other request of this process can slip between check and action.
 */

import { SvcError } from "../../lib/errors.ts";
import type {
  Backend,
  BucketEntry,
  ByteRange,
  ListOptions,
  ListPage,
  LocalExtent,
  ObjectBody,
  ObjectInfo,
  ObjectMeta,
  StagedObject,
} from "../backend.ts";
import {
  bytesStream,
  emptyStream,
  fileRangeStream,
  openIfUnchanged,
  readRangeSync,
  SMALL_BODY_BYTES,
  writeStreamToFile,
} from "../../lib/file-streams.ts";
import { EarlyWriteback } from "./early-writeback.ts";
import { withRegularFile } from "../../native/fd-read.ts";
import {
  checkPathConflicts,
  isUsableBucketName,
  locateObjectSync,
  objectPath,
  type ParsedKey,
  parseKey,
  parseKeyOrNull,
  placeFile,
  placeMarker,
} from "./fs-keys.ts";
import { pathLock } from "./fs-nesting.ts";
import { MARKER_ENTRY, OBJECT_ENTRY } from "./fs-reserved.ts";
import {
  errorCode,
  firstObjectKey,
  fsyncDirectory,
  isAbsentError,
  META_XATTR,
  nullIfAbsent,
  readMarkerSync,
  readMeta,
  removeDirectoryIfEmptySync,
  removeEmptyParentsSync,
  removeTreeWithoutObjects,
  type StoredObject,
  verifyCandidateSync,
  walkKeys,
} from "./fs-walk.ts";
import { assertXattrSupport, getJsonXattr, removeXattr, setJsonXattr } from "../../native/xattr.ts";
import { ExtentStore, type StoredMeta } from "./fs-extents.ts";
import { RETIRE_MIN_BYTES, RetiredFiles } from "./retired-files.ts";
import { ownChangeStarting } from "./fs-sorted-dir.ts";
import { commonPrefixOf, compareUtf8 } from "../../lib/key-order.ts";

const BUCKET_XATTR = "user.svc.bucket";
/** Reads retried when a commit keeps replacing the file between reading metadata and opening. */
const READ_ATTEMPTS = 5;

export class FilesystemBackend implements Backend {
  readonly kind = "filesystem" as const;

  /** Multi-file objects (completed multipart uploads); see fs-extents.ts. */
  private extents!: ExtentStore;

  /** Large replaced or deleted files, unlinked after the request (retired-files.ts). */
  readonly retired: RetiredFiles;

  private constructor(readonly root: string, private readonly tmpDir: string) {
    this.retired = new RetiredFiles(tmpDir);
  }

  /** Opens (creating if needed) a data directory; refuses one without xattr support. */
  static async open(root: string): Promise<FilesystemBackend> {
    await Deno.mkdir(root, { recursive: true });
    const absolute = await Deno.realPath(root);
    await assertXattrSupport(absolute);
    const tmpDir = `${absolute}/.svc/tmp`;
    await Deno.mkdir(tmpDir, { recursive: true });
    await removeStaleTempFiles(tmpDir);
    const backend = new FilesystemBackend(absolute, tmpDir);
    backend.extents = await ExtentStore.open(absolute, async (bucket, key) => {
      const parsed = parseKeyOrNull(key);
      return (parsed && isUsableBucketName(bucket) &&
        (await backend.readObject(bucket, parsed))?.extents) || null;
    }, (trash) => backend.retired.release(trash));
    return backend;
  }

  // ---- buckets -------------------------------------------------------------------------------

  async listBuckets(): Promise<BucketEntry[]> {
    const buckets: BucketEntry[] = [];
    for await (const entry of Deno.readDir(this.root)) {
      if (entry.name.startsWith(".") || !entry.isDirectory) continue;
      const bucket = this.bucketEntry(entry.name);
      if (bucket) buckets.push(bucket);
    }
    return buckets.sort((a, b) => compareUtf8(a.name, b.name));
  }

  headBucket(bucket: string): Promise<BucketEntry | null> {
    try {
      return Promise.resolve(this.bucketEntry(bucket));
    } catch (err) {
      return Promise.reject(err);
    }
  }

  async createBucket(bucket: string): Promise<void> {
    if (!isUsableBucketName(bucket)) {
      throw new SvcError("InvalidBucketName", `Bucket name "${bucket}" is not valid`, {
        BucketName: bucket,
      });
    }
    const path = this.bucketDir(bucket);
    try {
      await Deno.mkdir(path);
    } catch (err) {
      if (errorCode(err) !== "EEXIST") throw err;
      if (!(await Deno.lstat(path)).isDirectory) {
        throw new Error(`Data directory entry "${path}" is in the way of bucket "${bucket}"`);
      }
      throw new SvcError("BucketAlreadyOwnedByYou", `Bucket "${bucket}" already exists`, {
        BucketName: bucket,
      });
    }
    setJsonXattr(path, BUCKET_XATTR, { created: Date.now() });
    await fsyncDirectory(path);
    await fsyncDirectory(this.root);
  }

  async deleteBucket(bucket: string): Promise<void> {
    const bucketDir = await this.requireBucket(bucket);
    const notEmpty = () =>
      new SvcError("BucketNotEmpty", `Bucket "${bucket}" is not empty`, { BucketName: bucket });
    if (firstObjectKey(bucketDir, "") !== undefined) throw notEmpty();
    // Bottom-up rather than a recursive remove: an object committed meanwhile makes an rmdir
    // fail (or is seen) instead of being deleted with the tree.
    if (!removeTreeWithoutObjects(bucketDir, { unlinkFiles: true })) throw notEmpty();
    await fsyncDirectory(this.root);
  }

  // ---- objects -------------------------------------------------------------------------------

  async headObject(bucket: string, key: string): Promise<ObjectInfo | null> {
    const parsed = parseKeyOrNull(key);
    const found = parsed ? this.readObject(bucket, parsed) : null;
    if (!found) await this.requireBucket(bucket);
    return found?.info ?? null;
  }

  async getObject(bucket: string, key: string, range?: ByteRange): Promise<ObjectBody | null> {
    const parsed = parseKeyOrNull(key);
    const small = parsed && this.readSmallObject(bucket, parsed, range);
    if (small) return small;
    for (let attempt = 0; parsed && attempt < READ_ATTEMPTS; attempt++) {
      const found = this.readObject(bucket, parsed);
      if (!found) break;
      const { info, ino, extents } = found;
      const start = range?.start ?? 0;
      const end = range?.end ?? info.storedSize - 1;
      if (range && (start < 0 || end < start || end >= info.storedSize)) {
        throw new SvcError("InvalidRange", `Range ${start}-${end} is outside object "${key}"`);
      }
      if (!ino) return { info, body: emptyStream() }; // an empty marker: the directory itself
      const file = openIfUnchanged(ino.path, ino.ino);
      if (file && extents !== undefined) {
        // Open (and protect) the extents before letting go of the entry that names them.
        const body = this.extents.open(extents, info.meta, range && { start, end });
        file.close();
        return { info, body };
      }
      if (file && end - start + 1 <= SMALL_BODY_BYTES) {
        return smallBody(info, readRangeSync(file, start, end - start + 1));
      }
      if (file) {
        return { info, body: fileRangeStream(file, start, end - start + 1, info.storedSize) };
      }
      if (attempt === READ_ATTEMPTS - 1) {
        throw new SvcError("SlowDown", `Object "${key}" is being replaced too often to be read`);
      }
    }
    await this.requireBucket(bucket);
    return null;
  }

  async stageObject(
    bucket: string,
    key: string,
    body: ReadableStream<Uint8Array>,
    signal?: AbortSignal,
  ): Promise<StagedObject> {
    // Every refusal happens before the first byte is read.
    const parsed = parseKey(key);
    const bucketDir = await this.requireBucket(bucket);
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
      return this.stagedMarker(bucketDir, parsed);
    }
    return this.stagedFile(bucketDir, parsed, tmpPath, file, size, undefined, writeback);
  }

  /**
   * Rewrites the metadata attribute of the file in place. One setxattr replaces the whole record
   * atomically (a crash leaves the old record or the new one, never a mix), and the bytes are
   * not touched. The inode is checked synchronously right before the write, so a concurrent
   * replacement of the file (possible only from outside the key lock) is re-read, not tagged.
   */
  async updateObjectMeta(
    bucket: string,
    key: string,
    update: (meta: ObjectMeta) => ObjectMeta,
  ): Promise<ObjectInfo | null> {
    const parsed = parseKeyOrNull(key);
    for (let attempt = 0; parsed && attempt < READ_ATTEMPTS; attempt++) {
      const found = this.readObject(bucket, parsed);
      if (!found) break;
      // The file holding the object (plain, nested or a marker with a body), else the marker's
      // directory itself.
      const path = found.ino?.path ?? objectPath(this.bucketDir(bucket), parsed);
      const meta = update(found.info.meta);
      const unchanged = (() => {
        const stat = statOrNull(path);
        if (found.ino ? stat?.ino !== found.ino.ino : !stat?.isDirectory) return false;
        // An object kept as extents keeps naming them (see fs-extents.ts).
        const stored: StoredMeta = found.extents === undefined
          ? meta
          : { ...meta, extents: found.extents };
        setJsonXattr(path, META_XATTR, stored);
        return true;
      })();
      if (!unchanged) continue;
      await fsyncPath(path, !found.ino);
      return { ...found.info, meta };
    }
    await this.requireBucket(bucket);
    return null;
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
    const bucketDir = await this.requireBucket(bucket);
    await checkPathConflicts(bucketDir, parsed);
    if (parsed.marker) return null;
    const extents = await this.extents.link(sources, { bucket, key });
    if (extents === null) return null;
    const tmpPath = `${this.tmpDir}/${crypto.randomUUID()}.put`;
    let file: Deno.FsFile;
    try {
      file = await Deno.open(tmpPath, { write: true, createNew: true });
    } catch (err) {
      await this.extents.release(extents);
      throw err;
    }
    const size = sources.reduce((sum, source) => sum + source.size, 0);
    return this.stagedFile(bucketDir, parsed, tmpPath, file, size, extents);
  }

  async deleteObject(bucket: string, key: string): Promise<boolean> {
    const parsed = parseKeyOrNull(key);
    const bucketDir = await this.requireBucket(bucket);
    if (!parsed) return false;
    const path = objectPath(this.bucketDir(bucket), parsed);
    let dirs = parsed.segments.slice(0, -1);
    if (parsed.marker) {
      // Synchronous so a concurrent marker write on this directory cannot interleave.
      if (!readMarkerSync(path)) return false;
      ownChangeStarting(path);
      removeXattr(path, META_XATTR);
      await Deno.remove(`${path}/${MARKER_ENTRY}`).catch(nullIfAbsent);
      removeDirectoryIfEmptySync(path);
    } else {
      const stat = await Deno.lstat(path).catch(nullIfAbsent);
      let removed: StoredMeta | false | "moved";
      if (stat?.isDirectory) {
        // The object named like a directory lives inside it (fs-nesting.ts).
        removed = await removeObjectFile(`${path}/${OBJECT_ENTRY}`, this.retired);
        if (!removed || removed === "moved") return false;
        dirs = parsed.segments;
      } else {
        if (!stat?.isFile) return false;
        // Under the path lock: a conversion of this file into a directory is not half done.
        removed = await pathLock.run(path, () => removeObjectFile(path, this.retired));
        if (removed === "moved") return await this.deleteObject(bucket, key);
        if (!removed) return false;
      }
      await this.extents.release(removed.extents);
    }
    const survivor = removeEmptyParentsSync(bucketDir, dirs);
    await fsyncDirectory(survivor);
    return true;
  }

  async listObjects(bucket: string, options: ListOptions): Promise<ListPage> {
    const bucketDir = await this.requireBucket(bucket);
    const { prefix, startAfter, maxKeys } = options;
    const delimiter = options.delimiter || undefined;
    const page: ListPage = { objects: [], commonPrefixes: [], isTruncated: false };
    if (maxKeys < 1) return page;
    const skip: { prefix?: string } = {};
    // With "/" a directory is exactly a common prefix, so it is reported without reading it.
    const walk = walkKeys(bucketDir, {
      prefix,
      startAfter,
      rollUpDirectories: delimiter === "/",
      skip,
      omitBaseNames: options.omitBaseNames,
    });
    let last: string | undefined;
    for (const item of walk) {
      let commonPrefix: string | undefined;
      let info: ObjectInfo | null = null;
      if (item.kind === "prefix") {
        commonPrefix = item.key;
      } else {
        info = verifyCandidateSync(item);
        if (!info) continue;
        commonPrefix = delimiter ? commonPrefixOf(item.key, prefix, delimiter) : undefined;
        if (commonPrefix !== undefined) {
          skip.prefix = commonPrefix;
          // A common prefix at or before startAfter was returned by an earlier page (or lies
          // before the requested start): its keys are skipped, never reported again.
          if (startAfter !== undefined && compareUtf8(commonPrefix, startAfter) <= 0) continue;
        }
      }
      if (commonPrefix !== undefined && commonPrefix === last) continue;
      if (page.objects.length + page.commonPrefixes.length === maxKeys) {
        page.isTruncated = true;
        page.nextStartAfter = last;
        break;
      }
      if (commonPrefix !== undefined) page.commonPrefixes.push(commonPrefix);
      else if (info) page.objects.push(info);
      last = commonPrefix ?? item.key;
    }
    return page;
  }

  // ---- internals -----------------------------------------------------------------------------

  /**
   * The directory of a bucket. Every path is built here, so a name that is not one plain path
   * segment (`.`, `..`, `a/..`) can never resolve to the data directory itself, another bucket
   * or a place outside: such a bucket does not exist.
   */
  private bucketDir(bucket: string): string {
    if (!isUsableBucketName(bucket)) {
      throw new SvcError("NoSuchBucket", `Bucket "${bucket}" does not exist`, {
        BucketName: bucket,
      });
    }
    return `${this.root}/${bucket}`;
  }

  private bucketEntry(bucket: string): BucketEntry | null {
    if (!isUsableBucketName(bucket)) return null;
    const path = this.bucketDir(bucket);
    const stat = lstatOrNull(path);
    if (!stat?.isDirectory) return null;
    // A bucket directory made by hand (or before a crash) has no attribute: its mtime stands in.
    const recorded = getJsonXattr<{ created: number }>(path, BUCKET_XATTR);
    return { name: bucket, created: new Date(recorded?.created ?? stat.mtime?.getTime() ?? 0) };
  }

  /**
   * The bucket's directory, or NoSuchBucket. Every object call starts here, so it checks only
   * that the directory exists (one inline lstat), not the creation date in its attribute.
   */
  private requireBucket(bucket: string): Promise<string> {
    try {
      const path = isUsableBucketName(bucket) ? this.bucketDir(bucket) : null;
      if (path === null || !lstatOrNull(path)?.isDirectory) {
        throw new SvcError("NoSuchBucket", `Bucket "${bucket}" does not exist`, {
          BucketName: bucket,
        });
      }
      return Promise.resolve(path);
    } catch (err) {
      return Promise.reject(err);
    }
  }

  /**
   * The object with the file holding its bytes (path and inode; none for an empty marker) and the
   * extents a multipart object keeps its bytes in, or null when absent or not an object.
   */
  private readObject(
    bucket: string,
    parsed: ParsedKey,
  ): { info: ObjectInfo; ino: StoredObject["file"]; extents?: string } | null {
    const found = locateObjectSync(this.bucketDir(bucket), parsed);
    if (!found) return null;
    const info = { key: parsed.key, storedSize: found.storedSize, meta: found.meta };
    return { info, ino: found.file, extents: found.extents };
  }

  /**
   * The common small GET in one pass over one descriptor (fd-read.ts): a plain key whose file
   * holds a passthrough object of at most SMALL_BODY_BYTES in the requested range. Metadata,
   * size and bytes come from the one open inode, so a concurrent replace cannot mix versions.
   * null for anything else (absent, nested, a marker, extents, a larger read): the general path.
   */
  private readSmallObject(
    bucket: string,
    parsed: ParsedKey,
    range: ByteRange | undefined,
  ): ObjectBody | null {
    if (parsed.marker) return null;
    return withRegularFile(objectPath(this.bucketDir(bucket), parsed), (file) => {
      const raw = file.attribute(META_XATTR);
      if (raw === null) return null;
      const stored = JSON.parse(utf8.decode(raw)) as StoredMeta;
      if (stored.extents !== undefined) return null;
      const info: ObjectInfo = { key: parsed.key, storedSize: file.size, meta: stored };
      const start = range?.start ?? 0;
      const end = range?.end ?? file.size - 1;
      if (range && (start < 0 || end < start || end >= file.size)) {
        throw new SvcError(
          "InvalidRange",
          `Range ${start}-${end} is outside object "${parsed.key}"`,
        );
      }
      if (end - start + 1 > SMALL_BODY_BYTES) return null;
      return smallBody(info, file.read(start, end - start + 1));
    });
  }

  private stagedFile(
    bucketDir: string,
    parsed: ParsedKey,
    tmpPath: string,
    file: Deno.FsFile,
    size: number,
    extents?: string,
    /** Early syncs of the bytes (large bodies): settled before the commit's fsync. */
    writeback?: EarlyWriteback,
  ): StagedObject {
    let state: "staged" | "failed" | "done" = "staged";
    let open = true;
    const closeFile = () => {
      if (open) file.close();
      open = false;
    };
    return {
      size,
      commit: async (meta) => {
        if (state !== "staged") throw new Error(`Staged object "${parsed.key}" was already used`);
        state = "failed"; // until the rename succeeds; abort() then still cleans up
        // Attribute first, so one fsync makes bytes and metadata durable before the name exists.
        const stored: StoredMeta = extents === undefined ? meta : { ...meta, extents };
        setJsonXattr(tmpPath, META_XATTR, stored);
        await writeback?.settle();
        await file.sync();
        closeFile();
        // The object this commit replaces may have extents: released once the rename is done.
        const replaced = locateObjectSync(bucketDir, parsed);
        // A large replaced file keeps a second name, so the rename does not free its blocks.
        const held = replaced?.file && replaced.extents === undefined &&
            replaced.storedSize >= RETIRE_MIN_BYTES
          ? await this.retired.hold(replaced.file.path)
          : null;
        try {
          await placeFile(tmpPath, bucketDir, parsed);
        } finally {
          if (held !== null) this.retired.release(held);
        }
        state = "done";
        if (replaced?.extents !== extents) await this.extents.release(replaced?.extents);
        return { key: parsed.key, storedSize: size, meta };
      },
      abort: async () => {
        if (state === "done") return;
        state = "done";
        await writeback?.settle().catch(() => {});
        closeFile();
        await Deno.remove(tmpPath).catch(() => {});
        await this.extents.release(extents);
      },
    };
  }

  private stagedMarker(bucketDir: string, parsed: ParsedKey): StagedObject {
    let used = false;
    return {
      size: 0,
      commit: async (meta) => {
        if (used) throw new Error(`Staged object "${parsed.key}" was already used`);
        used = true;
        await placeMarker(bucketDir, parsed, meta);
        return { key: parsed.key, storedSize: 0, meta };
      },
      abort: () => {
        used = true;
        return Promise.resolve();
      },
    };
  }
}

const utf8 = new TextDecoder();

/**
 * A small body already read. Its stream is made only if a caller asks for it: the HTTP answer
 * sends `bytes` with the headers, and building an unused ReadableStream per GET was measurable.
 */
function smallBody(info: ObjectInfo, bytes: Uint8Array<ArrayBuffer>): ObjectBody {
  let stream: ReadableStream<Uint8Array> | undefined;
  return {
    info,
    bytes,
    get body() {
      return stream ??= bytesStream(bytes);
    },
  };
}

function statOrNull(path: string): Deno.FileInfo | null {
  try {
    return Deno.lstatSync(path);
  } catch (err) {
    return nullIfAbsent(err);
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
 * lstat, inline. The metadata calls of the object hot path (bucket, object, temp file) are
 * synchronous like the xattr reads beside them: on a local filesystem they take a few
 * microseconds, while each async call hops to a thread and back (~20-120 µs measured here) and
 * made up most of the CPU of a small GET or PUT. fsync and rename, which wait on the disk,
 * stay asynchronous.
 */
function lstatOrNull(path: string): Deno.FileInfo | null {
  try {
    return Deno.lstatSync(path);
  } catch (err) {
    return nullIfAbsent(err);
  }
}

/**
 * Deletes temp files a crashed process left behind. Files this process created (an earlier
 * open of the same root, e.g. on config reload, with uploads still in flight) are newer than
 * the process and are kept.
 */
async function removeStaleTempFiles(tmpDir: string): Promise<void> {
  const processStart = performance.timeOrigin;
  for await (const entry of Deno.readDir(tmpDir)) {
    const path = `${tmpDir}/${entry.name}`;
    const stat = await Deno.lstat(path).catch(nullIfAbsent);
    if (!stat || (stat.mtime?.getTime() ?? 0) >= processStart) continue;
    await Deno.remove(path, { recursive: true }).catch(nullIfAbsent);
  }
}

/**
 * Unlinks an object file: its stored metadata when removed (its extents are the caller's to
 * release), false when it was absent or not an object, "moved" when it turned into a directory
 * (a conversion finished first).
 */
async function removeObjectFile(
  path: string,
  retired: RetiredFiles,
): Promise<StoredMeta | false | "moved"> {
  const stat = await Deno.lstat(path).catch(nullIfAbsent);
  if (stat?.isDirectory) return "moved";
  const stored: StoredMeta | null = stat?.isFile ? readMeta(path) : null;
  if (stored === null) return false;
  ownChangeStarting(path.slice(0, path.lastIndexOf("/")));
  if (stat!.size >= RETIRE_MIN_BYTES && await retired.take(path)) return stored;
  try {
    await Deno.remove(path);
    return stored;
  } catch (err) {
    if (isAbsentError(err)) return false; // a concurrent delete won
    throw err;
  }
}
