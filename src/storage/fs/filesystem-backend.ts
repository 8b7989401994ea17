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
 *
 * This class is the façade: buckets (fs-buckets.ts), reads (fs-object-reader.ts), writes and
 * deletes (fs-object-writer.ts) and listings (listing/fs-list-objects.ts) live in their modules.
 */

import type {
  Backend,
  BucketEntry,
  ByteRange,
  DeleteCondition,
  ListOptions,
  ListPage,
  LocalExtent,
  ObjectBody,
  ObjectInfo,
  ObjectMeta,
  StagedObject,
} from "../backend.ts";
import { privateDir } from "../../lib/mod.ts";
import { assertXattrSupport } from "../../native/mod.ts";
import { BucketDirectories } from "./fs-buckets.ts";
import { nullIfAbsent } from "./fs-calls.ts";
import { ExtentStore } from "./fs-extents.ts";
import { isUsableBucketName, parseKeyOrNull } from "./fs-keys.ts";
import type { NestingOptions } from "./fs-nesting.ts";
import { ObjectReader, readObject } from "./fs-object-reader.ts";
import { ObjectWriter } from "./fs-object-writer.ts";
import { listObjectsSync } from "./listing/fs-list-objects.ts";
import type { DirectoryListings, ListingOptions } from "./listing/fs-sorted-dir.ts";
import { sharedListings } from "./listing/shared-listings.ts";
import { RetiredFiles } from "./retired-files.ts";

/** How a filesystem backend behaves beyond its data directory (tests hook in here). */
export interface FilesystemBackendOptions extends NestingOptions {
  /**
   * The listing cache (listing/fs-sorted-dir.ts). Every backend open on one root shares it
   * (listing/shared-listings.ts), so a later open of a root still open must ask for the same.
   */
  listing?: ListingOptions;
}

export class FilesystemBackend implements Backend {
  readonly kind = "filesystem" as const;

  private constructor(
    readonly root: string,
    /** Large replaced or deleted files, unlinked after the request (retired-files.ts). */
    readonly retired: RetiredFiles,
    /** The sorted listings of large directories, shared by every backend open on this root. */
    readonly listings: DirectoryListings,
    private readonly buckets: BucketDirectories,
    private readonly reader: ObjectReader,
    private readonly writer: ObjectWriter,
  ) {}

  /** Opens (creating if needed) a data directory; refuses one without xattr support. */
  static async open(
    root: string,
    options: FilesystemBackendOptions = {},
  ): Promise<FilesystemBackend> {
    await Deno.mkdir(root, { recursive: true });
    const absolute = await Deno.realPath(root);
    await assertXattrSupport(absolute);
    const tmpDir = `${absolute}/.svc/tmp`;
    // svc's own state: 0700 folders. Files staged in tmp/ become objects by rename and keep the
    // umask's mode, as object files always have; while staged, the folder hides them.
    await privateDir(`${absolute}/.svc`);
    await privateDir(tmpDir);
    await removeStaleTempFiles(tmpDir);
    const retired = new RetiredFiles(tmpDir);
    const listings = sharedListings(absolute, options.listing);
    const buckets = new BucketDirectories(absolute, listings);
    // Multi-file objects (completed multipart uploads); see fs-extents.ts.
    const extents = await ExtentStore.open(absolute, async (bucket, key) => {
      const parsed = parseKeyOrNull(key);
      return (parsed && isUsableBucketName(bucket) &&
        (await readObject(buckets.dir(bucket), parsed))?.extents) || null;
    }, (trash) => retired.release(trash));
    const nesting = { onConversionStep: options.onConversionStep };
    return new FilesystemBackend(
      absolute,
      retired,
      listings,
      buckets,
      new ObjectReader(buckets, extents),
      new ObjectWriter(buckets, tmpDir, { extents, retired, listings, nesting }),
    );
  }

  // ---- buckets -------------------------------------------------------------------------------

  listBuckets(): Promise<BucketEntry[]> {
    return this.buckets.list();
  }

  headBucket(bucket: string): Promise<BucketEntry | null> {
    return this.buckets.head(bucket);
  }

  createBucket(bucket: string): Promise<void> {
    return this.buckets.create(bucket);
  }

  deleteBucket(bucket: string): Promise<void> {
    return this.buckets.delete(bucket);
  }

  // ---- objects -------------------------------------------------------------------------------

  headObject(bucket: string, key: string): Promise<ObjectInfo | null> {
    return this.reader.head(bucket, key);
  }

  getObject(bucket: string, key: string, range?: ByteRange): Promise<ObjectBody | null> {
    return this.reader.get(bucket, key, range);
  }

  stageObject(
    bucket: string,
    key: string,
    body: ReadableStream<Uint8Array>,
    signal?: AbortSignal,
  ): Promise<StagedObject> {
    return this.writer.stage(bucket, key, body, signal);
  }

  updateObjectMeta(
    bucket: string,
    key: string,
    update: (meta: ObjectMeta) => ObjectMeta,
  ): Promise<ObjectInfo | null> {
    return this.writer.updateMeta(bucket, key, update);
  }

  stageExtents(
    bucket: string,
    key: string,
    sources: LocalExtent[],
  ): Promise<StagedObject | null> {
    return this.writer.stageExtents(bucket, key, sources);
  }

  deleteObject(bucket: string, key: string, condition?: DeleteCondition): Promise<boolean> {
    return this.writer.delete(bucket, key, condition);
  }

  async listObjects(bucket: string, options: ListOptions): Promise<ListPage> {
    const bucketDir = await this.buckets.require(bucket);
    return listObjectsSync(this.listings, bucketDir, options);
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
