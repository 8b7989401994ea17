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

import { SvcError } from "../errors.ts";
import type {
  Backend,
  BucketEntry,
  ByteRange,
  ListOptions,
  ListPage,
  ObjectBody,
  ObjectInfo,
  StagedObject,
} from "./backend.ts";
import {
  emptyStream,
  fileRangeStream,
  openIfUnchanged,
  writeStreamToFile,
} from "./file-streams.ts";
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
  commonPrefixOf,
  compareUtf8,
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
import { assertXattrSupport, getJsonXattr, removeXattr, setJsonXattr } from "./xattr.ts";

const BUCKET_XATTR = "user.svc.bucket";
/** Reads retried when a commit keeps replacing the file between reading metadata and opening. */
const READ_ATTEMPTS = 5;

export class FilesystemBackend implements Backend {
  readonly kind = "filesystem" as const;

  private constructor(readonly root: string, private readonly tmpDir: string) {}

  /** Opens (creating if needed) a data directory; refuses one without xattr support. */
  static async open(root: string): Promise<FilesystemBackend> {
    await Deno.mkdir(root, { recursive: true });
    const absolute = await Deno.realPath(root);
    await assertXattrSupport(absolute);
    const tmpDir = `${absolute}/.svc/tmp`;
    await Deno.mkdir(tmpDir, { recursive: true });
    await removeStaleTempFiles(tmpDir);
    return new FilesystemBackend(absolute, tmpDir);
  }

  // ---- buckets -------------------------------------------------------------------------------

  async listBuckets(): Promise<BucketEntry[]> {
    const buckets: BucketEntry[] = [];
    for await (const entry of Deno.readDir(this.root)) {
      if (entry.name.startsWith(".") || !entry.isDirectory) continue;
      const bucket = await this.bucketEntry(entry.name);
      if (bucket) buckets.push(bucket);
    }
    return buckets.sort((a, b) => compareUtf8(a.name, b.name));
  }

  headBucket(bucket: string): Promise<BucketEntry | null> {
    return this.bucketEntry(bucket);
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
    const found = parsed ? await this.readObject(bucket, parsed) : null;
    if (!found) await this.requireBucket(bucket);
    return found?.info ?? null;
  }

  async getObject(bucket: string, key: string, range?: ByteRange): Promise<ObjectBody | null> {
    const parsed = parseKeyOrNull(key);
    for (let attempt = 0; parsed && attempt < READ_ATTEMPTS; attempt++) {
      const found = await this.readObject(bucket, parsed);
      if (!found) break;
      const { info, ino } = found;
      const start = range?.start ?? 0;
      const end = range?.end ?? info.storedSize - 1;
      if (range && (start < 0 || end < start || end >= info.storedSize)) {
        throw new SvcError("InvalidRange", `Range ${start}-${end} is outside object "${key}"`);
      }
      if (!ino) return { info, body: emptyStream() }; // an empty marker: the directory itself
      const file = await openIfUnchanged(ino.path, ino.ino);
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
    const file = await Deno.open(tmpPath, { write: true, createNew: true });
    let size: number;
    try {
      size = await writeStreamToFile(body, file, signal);
    } catch (err) {
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
    return this.stagedFile(bucketDir, parsed, tmpPath, file, size);
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
      removeXattr(path, META_XATTR);
      await Deno.remove(`${path}/${MARKER_ENTRY}`).catch(nullIfAbsent);
      removeDirectoryIfEmptySync(path);
    } else {
      const stat = await Deno.lstat(path).catch(nullIfAbsent);
      if (stat?.isDirectory) {
        // The object named like a directory lives inside it (fs-nesting.ts).
        if (!(await removeObjectFile(`${path}/${OBJECT_ENTRY}`))) return false;
        dirs = parsed.segments;
      } else {
        if (!stat?.isFile) return false;
        // Under the path lock: a conversion of this file into a directory is not half done.
        const removed = await pathLock.run(path, () => removeObjectFile(path));
        if (removed === "moved") return await this.deleteObject(bucket, key);
        if (!removed) return false;
      }
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

  private async bucketEntry(bucket: string): Promise<BucketEntry | null> {
    if (!isUsableBucketName(bucket)) return null;
    const path = this.bucketDir(bucket);
    const stat = await Deno.lstat(path).catch(nullIfAbsent);
    if (!stat?.isDirectory) return null;
    // A bucket directory made by hand (or before a crash) has no attribute: its mtime stands in.
    const recorded = getJsonXattr<{ created: number }>(path, BUCKET_XATTR);
    return { name: bucket, created: new Date(recorded?.created ?? stat.mtime?.getTime() ?? 0) };
  }

  /** The bucket's directory, or NoSuchBucket. */
  private async requireBucket(bucket: string): Promise<string> {
    if (!(await this.bucketEntry(bucket))) {
      throw new SvcError("NoSuchBucket", `Bucket "${bucket}" does not exist`, {
        BucketName: bucket,
      });
    }
    return this.bucketDir(bucket);
  }

  /**
   * The object with the file holding its bytes (path and inode; none for an empty marker), or
   * null when absent or not an object.
   */
  private readObject(
    bucket: string,
    parsed: ParsedKey,
  ): Promise<{ info: ObjectInfo; ino: StoredObject["file"] } | null> {
    const found = locateObjectSync(this.bucketDir(bucket), parsed);
    if (!found) return Promise.resolve(null);
    const info = { key: parsed.key, storedSize: found.storedSize, meta: found.meta };
    return Promise.resolve({ info, ino: found.file });
  }

  private stagedFile(
    bucketDir: string,
    parsed: ParsedKey,
    tmpPath: string,
    file: Deno.FsFile,
    size: number,
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
        setJsonXattr(tmpPath, META_XATTR, meta);
        await file.sync();
        closeFile();
        await placeFile(tmpPath, bucketDir, parsed);
        state = "done";
        return { key: parsed.key, storedSize: size, meta };
      },
      abort: async () => {
        if (state === "done") return;
        state = "done";
        closeFile();
        await Deno.remove(tmpPath).catch(() => {});
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
 * Unlinks an object file: true when removed, false when it was absent or not an object, "moved"
 * when it turned into a directory (a conversion finished first).
 */
async function removeObjectFile(path: string): Promise<boolean | "moved"> {
  const stat = await Deno.lstat(path).catch(nullIfAbsent);
  if (stat?.isDirectory) return "moved";
  if (!stat?.isFile || readMeta(path) === null) return false;
  try {
    await Deno.remove(path);
    return true;
  } catch (err) {
    if (isAbsentError(err)) return false; // a concurrent delete won
    throw err;
  }
}
