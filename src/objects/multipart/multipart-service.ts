/**
 * Multipart uploads over the on-disk multipart store: limits, part validation at completion,
 * the multipart ETag, and the completion itself, which streams the parts in order through the
 * object service's one write path (hash, verify, commit under the key lock).
 */
import type { ReplayBodyCheck } from "../../body/mod.ts";
import { KeyLock, SvcError } from "../../lib/mod.ts";
import type { ObjectInfo, ObjectMeta, ScratchSealer } from "../../storage/mod.ts";
import { type CompletedUploads, sameParts } from "./completed-uploads.ts";
import { encodePartSizes } from "./part-layout.ts";
import type { MultipartStore, PartInfo, UploadRecord } from "./multipart-store.ts";
import {
  checkUploadTotal,
  type CompletedPart,
  type CompletionAnswer,
  multipartEtag,
  noSuchUpload,
  validateCompletion,
  vanished,
} from "./multipart-completion.ts";

export {
  type CompletedPart,
  type CompletionAnswer,
  MIN_PART_SIZE,
  multipartEtag,
  validateCompletion,
} from "./multipart-completion.ts";
import type { ObjectService } from "../object-service.ts";
import {
  type ClientMetadata,
  type CommitPlan,
  DEFAULT_CONTENT_TYPE,
  type WritePrecondition,
} from "../write-options.ts";
import { MultipartBudget } from "./multipart-budget.ts";
import { PartHashChain } from "./part-hash-chain.ts";
import { BucketQuiet } from "./bucket-quiet.ts";
import { concatenateParts } from "./part-concatenation.ts";
import type { WriteContext } from "../usage/write-observer.ts";

export interface MultipartLimits {
  maxUploads: number;
  idleTtlHours: number;
  /** Bytes all uploads in progress may hold together (max_total_multipart_bytes). */
  maxTotalBytes: number;
  /** Largest completed multipart object (max_passthrough_object_size); a part is max_object_size. */
  maxObjectBytes: number;
}

export class MultipartService {
  readonly #objects: ObjectService;
  readonly #store: MultipartStore;
  readonly #completed: CompletedUploads;
  readonly #limits: () => MultipartLimits;
  /** Keeps completions and DeleteBucket of one bucket apart. */
  readonly #quiet = new BucketQuiet();
  readonly #createLock = new KeyLock();
  /** Per upload: the object's sha256 so far, hashed as parts arrive (part-hash-chain.ts). */
  readonly #chains = new Map<string, PartHashChain>();
  /** One Complete of an upload at a time: a retry waits for the first, then answers as it did. */
  readonly #completeLock = new KeyLock();
  /** The global in-flight byte cap's bookkeeping. */
  readonly #budget: MultipartBudget;

  constructor(
    objects: ObjectService,
    store: MultipartStore,
    completed: CompletedUploads,
    limits: () => MultipartLimits,
  ) {
    this.#objects = objects;
    this.#store = store;
    this.#completed = completed;
    this.#limits = limits;
    this.#budget = new MultipartBudget({
      uploads: async () => (await store.list()).map((upload) => upload.uploadId),
      storedBytes: async (id) => (await store.listParts(id)).reduce((n, p) => n + p.size, 0),
    });
  }

  /** Bytes uploads in progress hold (stored parts and parts being received). */
  inflightBytes(): Promise<number> {
    return this.#budget.heldBytes();
  }

  async create(bucket: string, key: string, metadata: ClientMetadata): Promise<UploadRecord> {
    await this.#objects.headBucket(bucket);
    this.#objects.checkDeclaredSize(undefined);
    // Count and create as one step, so concurrent Creates cannot overshoot the cap.
    return await this.#createLock.run("create", async () => {
      const max = this.#limits().maxUploads;
      if (await this.#store.count() >= max) {
        throw new SvcError(
          "SlowDown",
          `Too many multipart uploads in progress (at most ${max}); complete or abort some first`,
        );
      }
      return await this.#store.create({
        bucket,
        key,
        contentType: metadata.contentType ?? "",
        userMeta: metadata.userMeta,
        headers: metadata.headers,
        ...(metadata.tags ? { tags: metadata.tags } : {}),
      });
    });
  }

  /** The upload, checked against the bucket and key the client addressed. */
  async upload(bucket: string, key: string, uploadId: string): Promise<UploadRecord> {
    const record = await this.#store.get(uploadId);
    if (record === null || record.bucket !== bucket || record.key !== key) {
      throw noSuchUpload(uploadId);
    }
    return record;
  }

  async uploadPart(
    bucket: string,
    key: string,
    uploadId: string,
    partNumber: number,
    body: ReadableStream<Uint8Array>,
    options: {
      contentLength?: number;
      expectedMd5?: string;
      expectedSha256?: string;
      signal?: AbortSignal;
      /** A replayed part: staged through this check, which never lets it commit. */
      replayCheck?: ReplayBodyCheck;
    },
  ): Promise<PartInfo> {
    await this.upload(bucket, key, uploadId);
    const maxObjectSize = this.#objects.limits.maxObjectSize;
    this.#objects.checkDeclaredSize(options.contentLength);
    // One part is one request body: max_object_size. The upload's total is judged at Complete
    // (max_passthrough_object_size); the other parts count towards the global budget here.
    const others = (await this.#store.listParts(uploadId))
      .filter((part) => part.partNumber !== partNumber)
      .reduce((sum, part) => sum + part.size, 0);
    // A body shorter than its Content-Length errors in the HTTP layer (or the aws-chunked
    // decoder) before the part is committed; a longer one is cut off here.
    // A replayed part is staged through the replay check, which never lets it commit.
    const reservation = await this.#budget.reserve(
      uploadId,
      others,
      options.contentLength,
      this.#limits().maxTotalBytes,
    );
    let stored: number | null = null;
    try {
      const checked = options.replayCheck?.stage(body) ?? body;
      const part = await this.#store.putPart(uploadId, partNumber, checked, {
        sealer: await this.#sealer(bucket),
        signal: options.signal,
        maxBytes: Math.min(
          maxObjectSize,
          options.contentLength ?? Infinity,
          reservation.maxBytes,
        ),
        expectedMd5: options.expectedMd5,
        expectedSha256: options.expectedSha256,
      });
      stored = part.size;
      // A sealed part is not hashed ahead: its upload completes by streaming (see
      // #completeInPlace), which hashes as it writes; the chain would read ciphertext.
      if (part.keyId === undefined) this.#chain(uploadId).stored(partNumber, part.etag);
      else this.#chain(uploadId).stop();
      return part;
    } finally {
      reservation.settle(stored);
    }
  }

  /** How parts of `bucket` are kept at rest: sealed when its backend encrypts. */
  async #sealer(bucket: string): Promise<ScratchSealer | null> {
    return await this.#objects.backend.scratchSealer?.(bucket) ?? null;
  }

  #chain(uploadId: string): PartHashChain {
    let chain = this.#chains.get(uploadId);
    if (!chain) {
      chain = new PartHashChain((partNumber) => this.#store.partPath(uploadId, partNumber)!);
      this.#chains.set(uploadId, chain);
    }
    return chain;
  }

  #forget(uploadId: string): void {
    this.#chains.get(uploadId)?.stop();
    this.#chains.delete(uploadId);
    this.#budget.forget(uploadId);
  }

  /**
   * Completes an upload. A repeat of a Complete that succeeded, with the same part list, answers
   * as the first did without writing again (the object may have changed since: the repeat does
   * not bring it back); any other Complete of a completed upload is NoSuchUpload.
   */
  complete(
    bucket: string,
    key: string,
    uploadId: string,
    requested: CompletedPart[],
    precondition: WritePrecondition | undefined,
    signal?: AbortSignal,
    context?: WriteContext,
  ): Promise<CompletionAnswer> {
    return this.#completeLock.run(uploadId, async () => {
      const done = await this.#completed.get(uploadId);
      if (done !== null) {
        if (done.bucket !== bucket || done.key !== key || !sameParts(done, requested)) {
          throw noSuchUpload(uploadId);
        }
        // A crash between the record and the removal leaves the upload behind: finish that.
        await this.#store.remove(uploadId);
        this.#forget(uploadId);
        return { etag: done.etag, storage: done.storage, repeated: true };
      }
      const info = await this.#quiet.whileCompleting(
        bucket,
        () => this.#completeOnce(bucket, key, uploadId, requested, precondition, signal, context),
      );
      await this.#completed.record({
        uploadId,
        bucket,
        key,
        parts: requested.map(({ partNumber, etag }) => ({ partNumber, etag })),
        etag: info.meta.etag,
        storage: info.debug?.decision ?? info.meta.storage,
        completedAt: Date.now(),
      });
      await this.#store.remove(uploadId);
      this.#forget(uploadId);
      return { etag: info.meta.etag, storage: info.debug?.decision ?? info.meta.storage, info };
    });
  }

  async #completeOnce(
    bucket: string,
    key: string,
    uploadId: string,
    requested: CompletedPart[],
    precondition: WritePrecondition | undefined,
    signal?: AbortSignal,
    context?: WriteContext,
  ): Promise<ObjectInfo> {
    const record = await this.upload(bucket, key, uploadId);
    const stored = new Map((await this.#store.listParts(uploadId)).map((p) => [p.partNumber, p]));
    const parts = validateCompletion(requested, stored);
    const maxObjectBytes = this.#limits().maxObjectBytes;
    const total = checkUploadTotal(parts, maxObjectBytes);
    if (precondition) precondition(await this.#objects.backend.headObject(bucket, key));
    const metadata = {
      contentType: record.contentType || undefined,
      userMeta: record.userMeta,
      headers: record.headers,
      tags: record.tags,
    };
    const plan = {
      etag: multipartEtag(parts),
      partsCount: parts.length,
      partSizes: encodePartSizes(parts.map((part) => part.size)),
    };
    const fast = await this.#completeInPlace(
      bucket,
      key,
      uploadId,
      parts,
      metadata,
      plan,
      precondition,
      signal,
      context,
    );
    if (fast !== null) return fast;

    const sealer = await this.#sealer(bucket);
    const body = concatenateParts(this.#store, uploadId, parts, sealer);
    const work = this.#objects.store(bucket, key, body, {
      metadata,
      maxBytes: maxObjectBytes,
      expectedSize: total,
      verify: (digest) => {
        if (digest.bytes !== total) {
          throw new SvcError(
            "InternalError",
            `Upload "${uploadId}" changed while it was being completed`,
          );
        }
        return plan;
      },
      md5: false,
      precondition,
      signal,
      context,
    });
    return await work;
  }

  /**
   * The fast completion: the parts become the object's bytes where they are (hard links on the
   * filesystem, backend parts on S3) and the sha256 comes from the hash chain. null when the
   * backend cannot (delta-eligible keys, parts on another filesystem): then the parts are streamed.
   */
  async #completeInPlace(
    bucket: string,
    key: string,
    uploadId: string,
    parts: PartInfo[],
    metadata: ClientMetadata,
    plan: CommitPlan,
    precondition: WritePrecondition | undefined,
    signal: AbortSignal | undefined,
    context: WriteContext | undefined,
  ): Promise<ObjectInfo | null> {
    const backend = this.#objects.backend;
    // Sealed parts are opened and streamed into the object (sealed again, under its own salt):
    // linked or sent as they are, they would be neither the object's format nor plaintext.
    if (!backend.stageExtents || parts.some((part) => part.keyId !== undefined)) return null;
    const extents = parts.map((part) => ({
      path: this.#store.partPath(uploadId, part.partNumber)!,
      size: part.size,
    }));
    const staged = await backend.stageExtents(bucket, key, extents, signal)
      .catch((err) => Promise.reject(vanished(err, uploadId)));
    if (staged === null) return null;
    try {
      const meta: ObjectMeta = {
        size: staged.size,
        etag: plan.etag!,
        md5: "",
        sha256: await this.#chain(uploadId).digest(parts)
          .catch((err) => Promise.reject(vanished(err, uploadId))),
        contentType: metadata.contentType || DEFAULT_CONTENT_TYPE,
        userMeta: metadata.userMeta,
        headers: metadata.headers,
        lastModified: this.#objects.now(),
        storage: "passthrough",
        partsCount: plan.partsCount,
        ...(plan.partSizes !== undefined ? { partSizes: plan.partSizes } : {}),
        ...(metadata.tags ? { tags: metadata.tags } : {}),
      };
      signal?.throwIfAborted();
      return await this.#objects.commitStaged(bucket, key, staged, meta, precondition, context);
    } catch (err) {
      await staged.abort();
      throw err;
    }
  }

  async abort(bucket: string, key: string, uploadId: string): Promise<void> {
    await this.upload(bucket, key, uploadId);
    await this.#store.remove(uploadId);
    this.#forget(uploadId);
  }

  async listParts(bucket: string, key: string, uploadId: string) {
    const record = await this.upload(bucket, key, uploadId);
    return { record, parts: await this.#store.listParts(uploadId) };
  }

  async listUploads(bucket: string): Promise<UploadRecord[]> {
    await this.#objects.headBucket(bucket);
    return (await this.#store.list()).filter((u) => u.bucket === bucket);
  }

  /**
   * Runs `work` (a DeleteBucket) once no completion is writing into the bucket; completions that
   * start meanwhile wait for it, so none can stage into a bucket while it is being removed.
   */
  whileBucketQuiet<T>(bucket: string, work: () => Promise<T>): Promise<T> {
    return this.#quiet.whileDeleting(bucket, work);
  }

  /** Removes every upload of a deleted bucket, and the records of its completed ones. */
  async purgeBucket(bucket: string): Promise<number> {
    const uploads = (await this.#store.list()).filter((u) => u.bucket === bucket);
    for (const upload of uploads) {
      await this.#store.remove(upload.uploadId);
      this.#forget(upload.uploadId);
    }
    await this.#completed.prune({ bucket });
    return uploads.length;
  }

  /**
   * Removes uploads idle for longer than the TTL, and records of uploads completed longer ago
   * than that (a client retrying a Complete does so within seconds or minutes).
   */
  async sweep(now = Date.now()) {
    const ttlMs = this.#limits().idleTtlHours * 3600_000;
    const result = await this.#store.sweep(ttlMs, now);
    for (const swept of result.removed) this.#forget(swept.uploadId);
    await this.#completed.prune({ olderThanMs: ttlMs, now });
    return result;
  }
}
