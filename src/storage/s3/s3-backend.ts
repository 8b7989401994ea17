/**
 * The S3 backend: a `Backend` over a remote S3-compatible store (AWS, MinIO, another svc, …).
 * Objects keep their names; svc's metadata rides along as `x-amz-meta-svc-*` (s3-meta.ts).
 * Uploads are spooled locally and sent at commit (s3-upload.ts); listings follow the filesystem
 * backend's order and paging exactly (s3-list.ts).
 *
 * What each backend answer means: 404 NoSuchKey is absence (null / false), and so is a bare 404
 * to a HEAD once the bucket is known to exist; NoSuchBucket (also inside a 403) is NoSuchBucket;
 * throttling is SlowDown; everything else throws (s3-errors.ts). A failed HEAD is never read as
 * "absent".
 */
import { createHash } from "node:crypto";
import { privateDir, SvcError } from "../../lib/mod.ts";
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
  WriteCondition,
} from "../backend.ts";
import { S3Client } from "./s3-client.ts";
import { BUCKET_NAME, noSuchBucket, S3Buckets } from "./s3-buckets.ts";
import { BackendError, isNoSuchBucket, isRefusal, svcErrorFromBackend } from "./s3-errors.ts";
import { isAddressableKey } from "./s3-keys.ts";
import { listPage } from "./s3-list.ts";
import { metaFromHeaders } from "./s3-meta.ts";
import { rewriteMeta } from "./s3-meta-update.ts";
import type { S3BackendOptions } from "./s3-options.ts";
import {
  listingsNeedHeads,
  type Spool,
  SPOOL_SUFFIX,
  spoolBody,
  uploadFiles,
  uploadSpool,
} from "./s3-upload.ts";
import { escapeXmlText, unquoteEtag } from "./s3-xml.ts";

const MAX_KEY_BYTES = 1024;

export class S3Backend implements Backend {
  readonly kind = "s3" as const;
  private readonly client: S3Client;
  private readonly buckets: S3Buckets;

  private constructor(private readonly options: S3BackendOptions) {
    this.client = new S3Client(options);
    this.buckets = new S3Buckets(this.client, options);
  }

  /** Prepares the spool directory (removing this backend's leftovers of an earlier run). */
  static async open(options: S3BackendOptions): Promise<S3Backend> {
    await privateDir(options.spoolDir);
    await removeStaleSpools(options.spoolDir);
    return new S3Backend(options);
  }

  // ---- buckets (s3-buckets.ts) ---------------------------------------------------------------

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

  async headObject(bucket: string, key: string): Promise<ObjectInfo | null> {
    if (!isAddressableKey(key) || !BUCKET_NAME.test(bucket)) return this.buckets.absent(bucket);
    try {
      const response = await this.client.send({ method: "HEAD", bucket, key, idempotent: true });
      const storedSize = Number(response.headers.get("content-length") ?? 0);
      const meta = metaFromHeaders(response.headers, storedSize);
      return { key, storedSize, meta, ...versionOf(response.headers) };
    } catch (err) {
      if (isMissingKey(err)) return this.buckets.absent(bucket);
      throw svcErrorFromBackend(err, bucket, key);
    }
  }

  async getObject(bucket: string, key: string, range?: ByteRange): Promise<ObjectBody | null> {
    if (!isAddressableKey(key) || !BUCKET_NAME.test(bucket)) return this.buckets.absent(bucket);
    let response;
    try {
      response = await this.client.send({
        method: "GET",
        bucket,
        key,
        // Deno's fetch would otherwise decompress a body stored with Content-Encoding: gzip.
        headers: {
          "accept-encoding": "identity",
          ...(range ? { range: `bytes=${range.start}-${range.end}` } : {}),
        },
        idempotent: true,
        stream: true,
      });
    } catch (err) {
      if (err instanceof BackendError && err.code === "NoSuchKey") return null;
      if (isMissingKey(err)) return this.buckets.absent(bucket);
      if (err instanceof BackendError && err.status === 416) {
        throw new SvcError(
          "InvalidRange",
          `Range ${range?.start}-${range?.end} is outside object "${key}"`,
        );
      }
      throw svcErrorFromBackend(err, bucket, key);
    }
    const body = response.body ?? new Response("").body!;
    const contentRange = response.headers.get("content-range");
    const total = /\/(\d+)$/.exec(contentRange ?? "")?.[1];
    // Never pass on bytes other than those asked for: a store that answers another range (s3rver
    // answers `bytes=0-0` with the whole object) fails the read instead.
    const served = /^bytes (\d+)-(\d+)\//.exec(contentRange ?? "");
    const wrongRange = range &&
      (response.status !== 206 || total === undefined || served === null ||
        Number(served[1]) !== range.start || Number(served[2]) !== range.end);
    if (wrongRange) {
      await body.cancel().catch(() => {});
      throw svcErrorFromBackend(
        new Error(
          `Backend answered GET "${bucket}/${key}" bytes=${range.start}-${range.end} with ` +
            `${response.status} ${contentRange ?? "(no Content-Range)"}`,
        ),
        bucket,
        key,
      );
    }
    const storedSize = Number(total ?? response.headers.get("content-length") ?? 0);
    const meta = metaFromHeaders(response.headers, storedSize);
    return { info: { key, storedSize, meta, ...versionOf(response.headers) }, body };
  }

  async stageObject(
    bucket: string,
    key: string,
    body: ReadableStream<Uint8Array>,
    signal?: AbortSignal,
  ): Promise<StagedObject> {
    await this.checkWritable(bucket, key);
    const spool = await spoolBody(this.options.spoolDir, body, signal);
    return this.staged(bucket, key, spool);
  }

  /**
   * A completed multipart upload: its part files go to the backend as the parts of one backend
   * multipart upload at commit (s3-upload.ts uploadFiles), read where they are; no spool copy.
   */
  async stageExtents(bucket: string, key: string, extents: LocalExtent[]): Promise<StagedObject> {
    await this.checkWritable(bucket, key);
    const size = extents.reduce((sum, extent) => sum + extent.size, 0);
    let used = false;
    return {
      size,
      commit: async (meta: ObjectMeta, condition?: WriteCondition) => {
        if (used) throw new Error(`Staged object "${key}" was already used`);
        used = true;
        let etag: string;
        try {
          const target = { bucket, key };
          etag = await uploadFiles(this.client, this.options, target, extents, meta, condition);
        } catch (err) {
          const failed = commitError(err, bucket, key, condition);
          used = !isRefusal(failed); // refused: the parts may be sent again (backend.ts)
          throw failed;
        }
        return { key, storedSize: size, meta, ...(etag ? { version: etag } : {}) };
      },
      abort: () => {
        used = true;
        return Promise.resolve();
      },
    };
  }

  /** The refusals of a write, before any byte is read. */
  private async checkWritable(bucket: string, key: string): Promise<void> {
    if (new TextEncoder().encode(key).length > MAX_KEY_BYTES) {
      throw new SvcError("KeyTooLongError", `Key "${key}" is longer than ${MAX_KEY_BYTES} bytes`, {
        Key: key,
      });
    }
    if (!isAddressableKey(key)) {
      throw new SvcError("InvalidObjectName", `Key "${key}" cannot be stored`, { Key: key });
    }
    await this.buckets.require(bucket);
  }

  /** A self-copy with the new metadata (s3-meta-update.ts); retried when the object changed. */
  async updateObjectMeta(
    bucket: string,
    key: string,
    update: (meta: ObjectMeta) => ObjectMeta,
  ): Promise<ObjectInfo | null> {
    if (!isAddressableKey(key) || !BUCKET_NAME.test(bucket)) return this.buckets.absent(bucket);
    for (let attempt = 1;; attempt++) {
      let response;
      try {
        response = await this.client.send({ method: "HEAD", bucket, key, idempotent: true });
      } catch (err) {
        if (isMissingKey(err)) return this.buckets.absent(bucket);
        throw svcErrorFromBackend(err, bucket, key);
      }
      const storedSize = Number(response.headers.get("content-length") ?? 0);
      const meta = update(metaFromHeaders(response.headers, storedSize));
      const backendEtag = response.headers.get("etag") ?? "";
      try {
        await rewriteMeta(
          this.client,
          this.options,
          { bucket, key, storedSize, backendEtag },
          meta,
        );
        return { key, storedSize, meta };
      } catch (err) {
        const changed = err instanceof BackendError && (err.status === 412 || err.status === 404);
        if (!changed || attempt === 3) throw svcErrorFromBackend(err, bucket, key);
      }
    }
  }

  /** HEAD first, because S3 answers 204 to deleting a missing key. A delete racing ours may
   * make both report true. */
  async deleteObject(
    bucket: string,
    key: string,
    condition?: DeleteCondition,
  ): Promise<boolean> {
    const current = await this.headObject(bucket, key);
    if (!current) return false;
    // DeleteObjects (keys ending in `/`) takes no condition: checked against the HEAD instead.
    if (condition && key.endsWith("/") && current.version !== condition.ifMatch) {
      throw new SvcError(
        "PreconditionFailed",
        `Delete of "${key}" refused: If-Match did not hold`,
        {
          Condition: "If-Match",
        },
      );
    }
    try {
      if (key.endsWith("/")) await this.deleteExactly(bucket, key);
      else {
        // S3's conditional DeleteObject: 412 when the object is another version now.
        const headers = condition && { "if-match": `"${condition.ifMatch}"` };
        await this.client.send({ method: "DELETE", bucket, key, headers, idempotent: true });
      }
    } catch (err) {
      if (isMissingKey(err)) return false;
      if (condition) throw commitError(err, bucket, key, condition);
      throw svcErrorFromBackend(err, bucket, key);
    }
    return true;
  }

  /**
   * Deletes one key through DeleteObjects. Used for keys ending in `/`: some stores give a
   * DeleteObject of `dir/` prefix semantics (svc itself deletes the whole subtree, and so would a
   * svc used as this backend), while DeleteObjects removes exactly the keys it names everywhere.
   * The one request where S3 requires a body checksum: Content-MD5.
   */
  private async deleteExactly(bucket: string, key: string): Promise<void> {
    const body = `<Delete><Quiet>true</Quiet><Object><Key>${escapeXmlText(key)}</Key></Object>` +
      "</Delete>";
    const md5 = createHash("md5").update(body).digest("base64");
    const response = await this.client.send({
      method: "POST",
      bucket,
      query: { delete: "" },
      headers: { "content-md5": md5, "content-type": "application/xml" },
      body,
      idempotent: true,
    });
    const failed = /<Error>[\s\S]*?<Code>([^<]*)<\/Code>[\s\S]*?<\/Error>/.exec(response.text);
    if (failed && failed[1] !== "NoSuchKey") {
      throw new BackendError(
        500,
        failed[1],
        `DeleteObjects refused "${key}"`,
        "POST ?delete",
        false,
      );
    }
  }

  async listObjects(bucket: string, options: ListOptions): Promise<ListPage> {
    if (!BUCKET_NAME.test(bucket)) throw noSuchBucket(bucket);
    try {
      return await listPage(
        this.client,
        bucket,
        options,
        (key) => this.headObject(bucket, key),
        listingsNeedHeads(this.client.url()),
      );
    } catch (err) {
      throw svcErrorFromBackend(err, bucket);
    }
  }

  // ---- internals -----------------------------------------------------------------------------

  private staged(bucket: string, key: string, spool: Spool): StagedObject {
    let used = false;
    const discard = () => Deno.remove(spool.path).catch(() => {});
    return {
      size: spool.size,
      commit: async (meta: ObjectMeta, condition?: WriteCondition) => {
        if (used) throw new Error(`Staged object "${key}" was already used`);
        used = true;
        let etag: string;
        try {
          const target = { bucket, key };
          etag = await uploadSpool(this.client, this.options, target, spool, meta, condition);
        } catch (err) {
          const failed = commitError(err, bucket, key, condition);
          used = !isRefusal(failed); // refused: the spool may be sent again (backend.ts)
          throw failed;
        } finally {
          if (used) await discard();
        }
        return { key, storedSize: spool.size, meta, ...(etag ? { version: etag } : {}) };
      },
      abort: async () => {
        used = true;
        await discard();
      },
    };
  }
}

/** The version token of a HEAD or GET answer: the backend's ETag. */
function versionOf(headers: Headers): { version?: string } {
  const etag = headers.get("etag");
  return etag ? { version: unquoteEtag(etag) } : {};
}

/**
 * What a failed commit means. With a condition: 412, a 409 ConditionalRequestConflict (S3's
 * answer to a conditional write racing another) and, for `ifMatch`, a 404 (no object to match)
 * are PreconditionFailed, the distinct failure callers act on.
 */
function commitError(
  err: unknown,
  bucket: string,
  key: string,
  condition: WriteCondition | undefined,
): Error {
  if (isNoSuchBucket(err)) return noSuchBucket(bucket);
  if (condition && err instanceof BackendError) {
    const failed = err.status === 412 || err.code === "PreconditionFailed" ||
      err.code === "ConditionalRequestConflict" ||
      ("ifMatch" in condition && err.status === 404);
    if (failed) {
      const wanted = "ifNoneMatch" in condition
        ? "If-None-Match: *"
        : `If-Match: ${condition.ifMatch}`;
      return new SvcError(
        "PreconditionFailed",
        `Backend refused the write of "${key}": ${wanted} did not hold`,
        { Condition: "ifNoneMatch" in condition ? "If-None-Match" : "If-Match" },
      );
    }
  }
  return svcErrorFromBackend(err, bucket, key);
}

/** A 404 that means "no such key": NoSuchKey, or a bare 404 (HEAD has no body). */
function isMissingKey(err: unknown): boolean {
  return err instanceof BackendError && err.status === 404 && err.code !== "NoSuchBucket";
}

/** Spool files older than this process are leftovers of a crash; newer ones are in use. */
async function removeStaleSpools(spoolDir: string): Promise<void> {
  for await (const entry of Deno.readDir(spoolDir)) {
    if (!entry.isFile || !entry.name.endsWith(SPOOL_SUFFIX)) continue;
    const path = `${spoolDir}/${entry.name}`;
    const stat = await Deno.lstat(path).catch(() => null);
    if (stat && (stat.mtime?.getTime() ?? 0) < performance.timeOrigin) {
      await Deno.remove(path).catch(() => {});
    }
  }
}
