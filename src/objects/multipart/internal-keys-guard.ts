/**
 * Keeps backend-resident multipart state (`.svc/multipart/…` in a bucket, backend-records.ts) out of
 * clients' reach. It sits between the delta layer and the bucket router, so everything a client
 * does with objects passes it, while the upload store writes below it:
 *
 * - reads, HEADs, deletes and metadata updates of such a key find nothing;
 * - writes to it are refused (InvalidObjectName);
 * - listings leave those keys out, and the `.svc/` common prefix too when nothing else is in it;
 * - DeleteBucket of a bucket that holds nothing else removes that state first (the bucket's
 *   uploads go with it, as its local uploads do).
 *
 * Without it a client on an S3 backend could list, read or overwrite another instance's upload
 * records and parts. `.svc/config.db` and other keys under `.svc/` are untouched.
 */
import { SvcError } from "../../lib/mod.ts";
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
  ScratchSealer,
  StagedObject,
} from "../../storage/mod.ts";
import { INTERNAL_PREFIX } from "./backend-records.ts";

const INTERNAL_DIR = ".svc/";
/** The last possible key under INTERNAL_PREFIX: a listing resumes after it. */
const INTERNAL_LAST = `${INTERNAL_PREFIX}\u{10FFFF}`;

export const isInternalKey = (key: string) => key.startsWith(INTERNAL_PREFIX);

export class InternalKeysGuard implements Backend {
  constructor(
    private readonly inner: Backend & { identityOf?(bucket: string): string },
    /** Removes the bucket's backend-resident state (null: there is none anywhere). */
    private readonly purge: ((bucket: string) => Promise<void>) | null,
  ) {}

  get kind(): Backend["kind"] {
    return this.inner.kind;
  }

  identityOf(bucket: string): string {
    return this.inner.identityOf?.(bucket) ?? bucket;
  }

  listBuckets(): Promise<BucketEntry[]> {
    return this.inner.listBuckets();
  }

  headBucket(bucket: string): Promise<BucketEntry | null> {
    return this.inner.headBucket(bucket);
  }

  createBucket(bucket: string): Promise<void> {
    return this.inner.createBucket(bucket);
  }

  async deleteBucket(bucket: string): Promise<void> {
    try {
      return await this.inner.deleteBucket(bucket);
    } catch (err) {
      if (!(err instanceof SvcError && err.code === "BucketNotEmpty") || this.purge === null) {
        throw err;
      }
      if (!await this.#onlyInternal(bucket)) throw err;
      await this.purge(bucket);
      await this.inner.deleteBucket(bucket);
    }
  }

  /** Whether everything in the bucket is under INTERNAL_PREFIX. */
  async #onlyInternal(bucket: string): Promise<boolean> {
    const top = await this.inner.listObjects(bucket, { prefix: "", delimiter: "/", maxKeys: 2 });
    if (top.objects.length > 0 || top.commonPrefixes.some((p) => p !== INTERNAL_DIR)) return false;
    const svc = await this.inner.listObjects(bucket, {
      prefix: INTERNAL_DIR,
      delimiter: "/",
      maxKeys: 2,
    });
    return svc.objects.length === 0 && svc.commonPrefixes.every((p) => p === INTERNAL_PREFIX);
  }

  headObject(bucket: string, key: string): Promise<ObjectInfo | null> {
    return isInternalKey(key) ? this.#absent(bucket) : this.inner.headObject(bucket, key);
  }

  getObject(
    bucket: string,
    key: string,
    range?: ByteRange,
    check?: (info: ObjectInfo) => void,
  ): Promise<ObjectBody | null> {
    if (isInternalKey(key)) return this.#absent(bucket);
    return this.inner.getObject(bucket, key, range, check);
  }

  stageObject(
    bucket: string,
    key: string,
    body: ReadableStream<Uint8Array>,
    signal?: AbortSignal,
    expectedSize?: number,
  ): Promise<StagedObject> {
    if (isInternalKey(key)) return refuse(key, body);
    return this.inner.stageObject(bucket, key, body, signal, expectedSize);
  }

  updateObjectMeta(
    bucket: string,
    key: string,
    update: (meta: ObjectMeta) => ObjectMeta,
  ): Promise<ObjectInfo | null> {
    if (isInternalKey(key)) return this.#absent(bucket);
    return this.inner.updateObjectMeta(bucket, key, update);
  }

  get stageExtents():
    | ((b: string, k: string, e: LocalExtent[], s?: AbortSignal) => Promise<StagedObject | null>)
    | undefined {
    const inner = this.inner;
    if (!inner.stageExtents) return undefined;
    return (bucket, key, extents, signal) =>
      isInternalKey(key) ? refuse(key) : inner.stageExtents!(bucket, key, extents, signal);
  }

  get scratchSealer(): ((bucket: string) => Promise<ScratchSealer | null>) | undefined {
    const inner = this.inner;
    return inner.scratchSealer && ((bucket) => inner.scratchSealer!(bucket));
  }

  async deleteObject(bucket: string, key: string, condition?: DeleteCondition): Promise<boolean> {
    if (isInternalKey(key)) return await this.#absent(bucket) ?? false;
    return await this.inner.deleteObject(bucket, key, condition);
  }

  async listObjects(bucket: string, options: ListOptions): Promise<ListPage> {
    // A listing inside the internal prefix has nothing to show (the bucket must still exist).
    if (isInternalKey(options.prefix)) {
      await this.#absent(bucket);
      return { objects: [], commonPrefixes: [], isTruncated: false };
    }
    let page = await this.inner.listObjects(bucket, options);
    page = await this.#filtered(bucket, options, page);
    // A page that held only internal keys: resume once past them rather than answer it empty.
    if (
      page.objects.length === 0 && page.commonPrefixes.length === 0 && page.isTruncated &&
      page.nextStartAfter !== undefined && isInternalKey(page.nextStartAfter)
    ) {
      const next = { ...options, startAfter: INTERNAL_LAST };
      page = await this.#filtered(bucket, next, await this.inner.listObjects(bucket, next));
    }
    return page;
  }

  async #filtered(bucket: string, options: ListOptions, page: ListPage): Promise<ListPage> {
    const objects = page.objects.filter((info) => !isInternalKey(info.key));
    let commonPrefixes = page.commonPrefixes.filter((prefix) => !isInternalKey(prefix));
    // `.svc/` rolled up from the root: shown only when something else than our state is in it.
    if (commonPrefixes.includes(INTERNAL_DIR) && options.delimiter === "/" && this.purge !== null) {
      const inside = await this.inner.listObjects(bucket, {
        prefix: INTERNAL_DIR,
        delimiter: "/",
        maxKeys: 2,
      });
      const other = inside.objects.length > 0 ||
        inside.commonPrefixes.some((prefix) => prefix !== INTERNAL_PREFIX);
      if (!other) commonPrefixes = commonPrefixes.filter((prefix) => prefix !== INTERNAL_DIR);
    }
    if (
      objects.length === page.objects.length && commonPrefixes.length === page.commonPrefixes.length
    ) {
      return page;
    }
    return { ...page, objects, commonPrefixes };
  }

  /** Absent, after the bucket's own existence is checked (NoSuchBucket stays an error). */
  async #absent(bucket: string): Promise<null> {
    if (await this.inner.headBucket(bucket) === null) {
      throw new SvcError("NoSuchBucket", "The specified bucket does not exist", {
        BucketName: bucket,
      });
    }
    return null;
  }
}

async function refuse(key: string, body?: ReadableStream<Uint8Array>): Promise<never> {
  await body?.cancel().catch(() => {});
  throw new SvcError(
    "InvalidObjectName",
    `Object key "${key}" is reserved for svc's multipart state (${INTERNAL_PREFIX})`,
  );
}
