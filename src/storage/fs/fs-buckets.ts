/**
 * The buckets of a data directory: each is the directory `<root>/<bucket>`, its creation date in
 * the `user.svc.bucket` attribute. Every path of an object is built from `dir()` here.
 */

import { compareUtf8, SvcError } from "../../lib/mod.ts";
import type { BucketEntry } from "../backend.ts";
import { getJsonXattr, setJsonXattr } from "../../native/mod.ts";
import { isUsableBucketName } from "./fs-keys.ts";
import { errorCode, fsyncDirectory, statOrNull } from "./fs-calls.ts";
import { removeTreeWithoutObjects } from "./fs-tree-cleanup.ts";
import type { DirectoryListings } from "./listing/fs-sorted-dir.ts";
import { firstObjectKey } from "./listing/listed-objects.ts";

const BUCKET_XATTR = "user.svc.bucket";

export class BucketDirectories {
  constructor(
    readonly root: string,
    /** The root's listing cache: deleting a bucket lists it and removes its tree. */
    private readonly listings: DirectoryListings,
  ) {}

  async list(): Promise<BucketEntry[]> {
    const buckets: BucketEntry[] = [];
    for await (const entry of Deno.readDir(this.root)) {
      if (entry.name.startsWith(".") || !entry.isDirectory) continue;
      const bucket = this.entry(entry.name);
      if (bucket) buckets.push(bucket);
    }
    return buckets.sort((a, b) => compareUtf8(a.name, b.name));
  }

  head(bucket: string): Promise<BucketEntry | null> {
    try {
      return Promise.resolve(this.entry(bucket));
    } catch (err) {
      return Promise.reject(err);
    }
  }

  async create(bucket: string): Promise<void> {
    if (!isUsableBucketName(bucket)) {
      throw new SvcError("InvalidBucketName", `Bucket name "${bucket}" is not valid`, {
        BucketName: bucket,
      });
    }
    const path = this.dir(bucket);
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

  async delete(bucket: string): Promise<void> {
    const bucketDir = await this.require(bucket);
    const notEmpty = () =>
      new SvcError("BucketNotEmpty", `Bucket "${bucket}" is not empty`, { BucketName: bucket });
    if (firstObjectKey(this.listings, bucketDir, "") !== undefined) throw notEmpty();
    // Bottom-up rather than a recursive remove: an object committed meanwhile makes an rmdir
    // fail (or is seen) instead of being deleted with the tree.
    if (!removeTreeWithoutObjects(this.listings, bucketDir, { unlinkFiles: true })) {
      throw notEmpty();
    }
    await fsyncDirectory(this.root);
  }

  /**
   * The directory of a bucket. Every path is built here, so a name that is not one plain path
   * segment (`.`, `..`, `a/..`) can never resolve to the data directory itself, another bucket
   * or a place outside: such a bucket does not exist.
   */
  dir(bucket: string): string {
    if (!isUsableBucketName(bucket)) {
      throw new SvcError("NoSuchBucket", `Bucket "${bucket}" does not exist`, {
        BucketName: bucket,
      });
    }
    return `${this.root}/${bucket}`;
  }

  /**
   * The bucket's directory, or NoSuchBucket. Every object call starts here, so it checks only
   * that the directory exists (one inline lstat), not the creation date in its attribute.
   */
  require(bucket: string): Promise<string> {
    try {
      const path = isUsableBucketName(bucket) ? this.dir(bucket) : null;
      if (path === null || !statOrNull(path)?.isDirectory) {
        throw new SvcError("NoSuchBucket", `Bucket "${bucket}" does not exist`, {
          BucketName: bucket,
        });
      }
      return Promise.resolve(path);
    } catch (err) {
      return Promise.reject(err);
    }
  }

  private entry(bucket: string): BucketEntry | null {
    if (!isUsableBucketName(bucket)) return null;
    const path = this.dir(bucket);
    const stat = statOrNull(path);
    if (!stat?.isDirectory) return null;
    // A bucket directory made by hand (or before a crash) has no attribute: its mtime stands in.
    const recorded = getJsonXattr<{ created: number }>(path, BUCKET_XATTR);
    return { name: bucket, created: new Date(recorded?.created ?? stat.mtime?.getTime() ?? 0) };
  }
}
