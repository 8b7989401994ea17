/**
 * Multipart uploads over the upload stores (routed-uploads.ts: local for filesystem buckets,
 * backend-resident for S3 buckets): limits, part validation at completion, the multipart ETag,
 * and the completion itself, which streams the parts in order through the object service's one
 * write path (hash, verify, commit under the key lock), or links local parts in place.
 */
import type { ReplayBodyCheck } from "../../body/mod.ts";
import { KeyLock, SvcError } from "../../lib/mod.ts";
import type { ObjectInfo, ScratchSealer } from "../../storage/mod.ts";
import { type CompletedUpload, sameParts } from "./completed-uploads.ts";
import { encodePartSizes } from "./part-layout.ts";
import type { PartInfo, UploadRecord } from "./multipart-store.ts";
import type { RoutedUploads } from "./routed-uploads.ts";
import { claimCompletion } from "./upload-store.ts";
import {
  checkUploadTotal,
  type CompletedPart,
  type CompletionAnswer,
  multipartEtag,
  noSuchUpload,
  validateCompletion,
} from "./multipart-completion.ts";

export {
  type CompletedPart,
  type CompletionAnswer,
  MIN_PART_SIZE,
  multipartEtag,
  validateCompletion,
} from "./multipart-completion.ts";
import type { ObjectService } from "../object-service.ts";
import type { ClientMetadata, CommitPlan, WritePrecondition } from "../write-options.ts";
import { MultipartBudget } from "./multipart-budget.ts";
import { PartHashChain } from "./part-hash-chain.ts";
import { BucketQuiet } from "./bucket-quiet.ts";
import { concatenateParts } from "./part-concatenation.ts";
import { completeInPlace } from "./complete-in-place.ts";
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
  readonly #store: RoutedUploads;
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
    store: RoutedUploads,
    limits: () => MultipartLimits,
  ) {
    this.#objects = objects;
    this.#store = store;
    this.#limits = limits;
    // Per instance: the parts in this instance's state directory and the part bodies it is
    // receiving. Parts of backend-resident uploads are in the backend, not here (README).
    const local = store.local.store;
    this.#budget = new MultipartBudget({
      uploads: async () => (await local.list()).map((upload) => upload.uploadId),
      storedBytes: async (id) => (await local.listParts(id)).reduce((n, p) => n + p.size, 0),
    });
  }

  /** Bytes this instance holds for uploads in progress (local parts, parts being received). */
  inflightBytes(): Promise<number> {
    return this.#budget.heldBytes();
  }

  async create(bucket: string, key: string, metadata: ClientMetadata): Promise<UploadRecord> {
    await this.#objects.headBucket(bucket);
    this.#objects.checkDeclaredSize(undefined);
    // Count and create as one step, so concurrent Creates cannot overshoot the cap.
    return await this.#createLock.run("create", async () => {
      const max = this.#limits().maxUploads;
      if (await this.#store.count(bucket) >= max) {
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
    const record = await this.#store.get(bucket, uploadId);
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
    const local = await this.#store.isLocal(bucket, uploadId);
    // Only local parts count as held here: a backend-resident upload's are in the backend.
    const others = !local ? 0 : (await this.#store.listParts(bucket, uploadId))
      .filter((part) => part.partNumber !== partNumber)
      .reduce((sum, part) => sum + part.size, 0);
    // A body shorter than its Content-Length errors in the HTTP layer (or the aws-chunked
    // decoder) before the part is committed; a longer one is cut off here.
    const reservation = await this.#budget.reserve(
      uploadId,
      others,
      options.contentLength,
      this.#limits().maxTotalBytes,
    );
    let stored: number | null = null;
    try {
      const checked = options.replayCheck?.stage(body) ?? body;
      const part = await this.#store.putPart(bucket, uploadId, partNumber, checked, {
        sealer: await this.#sealer(bucket),
        signal: options.signal,
        maxBytes: Math.min(maxObjectSize, options.contentLength ?? Infinity, reservation.maxBytes),
        expectedMd5: options.expectedMd5,
        expectedSha256: options.expectedSha256,
      });
      if (!local) return part; // any instance may complete it, by streaming (which hashes)
      stored = part.size;
      // Nor is a sealed part (the chain would read ciphertext): it completes by streaming too.
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
      const local = this.#store.local.store;
      chain = new PartHashChain((partNumber) => local.partPath(uploadId, partNumber)!);
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
      const earlier = await this.#store.completed(bucket, uploadId);
      if (earlier !== null) return await this.#repeat(earlier, key, requested);
      // Fleet-wide: one Complete writes the object; one elsewhere waits for its answer.
      const outcome = await claimCompletion(this.#store, bucket, uploadId, signal);
      if (outcome.done) return await this.#repeat(outcome.done, key, requested);
      // Released at the end whatever happened: after a success the claim went with the upload.
      try {
        const info = await this.#quiet.whileCompleting(
          bucket,
          () => this.#completeOnce(bucket, key, uploadId, requested, precondition, signal, context),
        );
        const storage = info.debug?.decision ?? info.meta.storage;
        await this.#store.recordCompleted({
          uploadId,
          bucket,
          key,
          parts: requested.map(({ partNumber, etag }) => ({ partNumber, etag })),
          etag: info.meta.etag,
          storage,
          completedAt: Date.now(),
        });
        await this.#store.remove(bucket, uploadId);
        this.#forget(uploadId);
        return { etag: info.meta.etag, storage, info };
      } finally {
        await outcome.claim.release().catch(() => {});
      }
    });
  }

  /** A Complete of an upload completed before: the same answer for the same part list. */
  async #repeat(
    done: CompletedUpload,
    key: string,
    requested: CompletedPart[],
  ): Promise<CompletionAnswer> {
    if (done.key !== key || !sameParts(done, requested)) throw noSuchUpload(done.uploadId);
    // A crash between the record and the removal leaves the upload behind: finish that.
    await this.#store.remove(done.bucket, done.uploadId);
    this.#forget(done.uploadId);
    return { etag: done.etag, storage: done.storage, repeated: true };
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
    const stored = new Map(
      (await this.#store.listParts(bucket, uploadId)).map((p) => [p.partNumber, p]),
    );
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
    const body = concatenateParts(this.#store, bucket, uploadId, parts, sealer);
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

  /** The fast completion (complete-in-place.ts) of a local upload; null when it must stream. */
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
    if (!await this.#store.isLocal(bucket, uploadId)) return null; // parts in the backend: stream
    const local = this.#store.local.store;
    return await completeInPlace(this.#objects, {
      bucket,
      key,
      uploadId,
      parts,
      partPath: (partNumber) => local.partPath(uploadId, partNumber)!,
      digest: () => this.#chain(uploadId).digest(parts),
      metadata,
      plan,
      precondition,
      signal,
      context,
    });
  }

  async abort(bucket: string, key: string, uploadId: string): Promise<void> {
    await this.upload(bucket, key, uploadId);
    await this.#store.remove(bucket, uploadId);
    this.#forget(uploadId);
  }

  async listParts(bucket: string, key: string, uploadId: string) {
    const record = await this.upload(bucket, key, uploadId);
    return { record, parts: await this.#store.listParts(bucket, uploadId) };
  }

  async listUploads(bucket: string): Promise<UploadRecord[]> {
    await this.#objects.headBucket(bucket);
    return await this.#store.list(bucket);
  }

  /**
   * Runs `work` (a DeleteBucket) once no completion is writing into the bucket; completions that
   * start meanwhile wait for it, so none can stage into a bucket while it is being removed.
   */
  whileBucketQuiet<T>(bucket: string, work: () => Promise<T>): Promise<T> {
    return this.#quiet.whileDeleting(bucket, work);
  }

  /**
   * Removes every upload of a deleted bucket, and the records of its completed ones (of an S3
   * bucket, the backend-resident state went with the bucket: internal-keys-guard.ts).
   */
  async purgeBucket(bucket: string): Promise<number> {
    const local = this.#store.local;
    const uploads = await local.list(bucket);
    for (const upload of uploads) {
      await local.remove(bucket, upload.uploadId);
      this.#forget(upload.uploadId);
    }
    await local.pruneCompleted({ bucket });
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
    await this.#store.pruneCompleted({ olderThanMs: ttlMs, now });
    return result;
  }
}
