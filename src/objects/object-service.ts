/**
 * The object service: the one place where PUT/GET/COPY/DELETE/LIST semantics are composed over a
 * backend. It hashes bodies on the way in, validates before anything becomes visible, runs write
 * preconditions and the commit under a per-key lock, and knows nothing of HTTP.
 */
import { KeyLock, SvcError } from "../lib/mod.ts";
import type {
  Backend,
  BucketEntry,
  ByteRange,
  ListOptions,
  ListPage,
  ObjectBody,
  ObjectInfo,
  ObjectMeta,
  StagedObject,
} from "../storage/mod.ts";
import { BodyDigest, tooLarge } from "../body/mod.ts";
import { ObjectChangedError, openPlannedRead } from "./planned-read.ts";
import {
  durable,
  needReplaced,
  type WriteContext,
  WriteObservers,
} from "./usage/write-observer.ts";
import {
  type ClientMetadata,
  type CommitPlan,
  type CopyOptions,
  DEFAULT_CONTENT_TYPE,
  maxCopyBytes,
  type ObjectLimits,
  type PutOptions,
  withTags,
  type WritePrecondition,
} from "./write-options.ts";
import { verifyCopy, verifyUpload } from "./write-verification.ts";

export { ObjectChangedError } from "./planned-read.ts";

export class ObjectService {
  readonly backend: Backend;
  readonly #limits: () => ObjectLimits;
  readonly #locks = new KeyLock();
  /** Told about every commit and removal (usage counters). */
  readonly observers = new WriteObservers();
  /**
   * The time objects are stamped with (Last-Modified, epoch ms). `Date.now` unless svc runs
   * with the test aid `SVC_TEST_CLOCK_OFFSET_SECS` (runtime/test-clock.ts).
   */
  readonly now: () => number;

  constructor(backend: Backend, limits: () => ObjectLimits, now: () => number = Date.now) {
    this.backend = backend;
    this.#limits = limits;
    this.now = now;
  }

  get limits(): ObjectLimits {
    return this.#limits();
  }

  // ── buckets ──────────────────────────────────────────────────────────────

  listBuckets(): Promise<BucketEntry[]> {
    return this.backend.listBuckets();
  }

  async headBucket(bucket: string): Promise<BucketEntry> {
    const entry = await this.backend.headBucket(bucket);
    if (entry === null) throw noSuchBucket(bucket);
    return entry;
  }

  createBucket(bucket: string): Promise<void> {
    return this.backend.createBucket(bucket);
  }

  deleteBucket(bucket: string): Promise<void> {
    return this.backend.deleteBucket(bucket);
  }

  // ── reads ────────────────────────────────────────────────────────────────

  async head(bucket: string, key: string): Promise<ObjectInfo> {
    const info = await this.backend.headObject(bucket, key);
    if (info === null) throw noSuchKey(key);
    return info;
  }

  /**
   * Opens the object's bytes. `expectedEtag` guards against a replacement between the caller's
   * HEAD (conditionals, range maths) and this open: the caller then re-plans on the new version.
   */
  async get(
    bucket: string,
    key: string,
    range?: ByteRange,
    expectedEtag?: string,
  ): Promise<ObjectBody> {
    const result = await this.backend.getObject(bucket, key, range);
    if (result === null) throw noSuchKey(key);
    if (expectedEtag !== undefined && result.info.meta.etag !== expectedEtag) {
      await result.body.cancel();
      throw new ObjectChangedError();
    }
    return result;
  }

  listObjects(bucket: string, options: ListOptions): Promise<ListPage> {
    return this.backend.listObjects(bucket, options);
  }

  // ── writes ───────────────────────────────────────────────────────────────

  /** Checks size limits that can be known before the body arrives. */
  checkDeclaredSize(length: number | undefined): void {
    const max = this.limits.maxObjectSize;
    if (max === 0 || (length !== undefined && length > max)) throw tooLarge(max);
  }

  async put(
    bucket: string,
    key: string,
    body: ReadableStream<Uint8Array>,
    options: PutOptions,
  ): Promise<ObjectInfo> {
    this.checkDeclaredSize(options.contentLength);
    // A replayed upload is compared with the first before its precondition: the first already
    // satisfied it, and an identical repeat gets the first answer (auth/replay/replay-guard.ts).
    if (options.precondition && options.replayCheck === undefined) {
      options.precondition(await this.backend.headObject(bucket, key));
    }
    const staged = options.replayCheck?.stage(body) ?? body;
    return await this.store(bucket, key, staged, {
      metadata: options.metadata,
      maxBytes: this.limits.maxObjectSize,
      expectedSize: options.contentLength,
      verify: (digest) => verifyUpload(digest, options),
      precondition: options.precondition,
      signal: options.signal,
      context: options.context,
    });
  }

  /**
   * Stages a body through the digest, lets `verify` judge it, then commits under the key lock
   * after the precondition. Anything thrown before the commit leaves no trace.
   */
  async store(
    bucket: string,
    key: string,
    body: ReadableStream<Uint8Array>,
    plan: {
      metadata: ClientMetadata;
      maxBytes: number;
      verify: (digest: BodyDigest) => CommitPlan;
      /** false when the ETag does not come from the body's md5 (multipart completion). */
      md5?: boolean;
      precondition?: WritePrecondition;
      signal?: AbortSignal;
      /** The body's length when known before it arrives (lets a delta encode stop early). */
      expectedSize?: number;
      context?: WriteContext;
    },
  ): Promise<ObjectInfo> {
    const digest = new BodyDigest(plan.maxBytes, { md5: plan.md5 });
    let staged: StagedObject;
    try {
      staged = await this.backend.stageObject(
        bucket,
        key,
        body.pipeThrough(digest.transform),
        plan.signal,
        plan.expectedSize,
      );
    } catch (err) {
      digest.discard();
      throw err;
    }
    try {
      await digest.finish();
      const { etag, partsCount, partSizes } = plan.verify(digest);
      const { md5, sha256 } = digest.result();
      const meta: ObjectMeta = {
        size: digest.bytes,
        etag: etag ?? md5,
        md5,
        sha256,
        contentType: plan.metadata.contentType || DEFAULT_CONTENT_TYPE,
        userMeta: plan.metadata.userMeta,
        headers: plan.metadata.headers,
        lastModified: this.now(),
        storage: "passthrough",
        ...(partsCount !== undefined ? { partsCount } : {}),
        ...withTags(plan.metadata.tags),
        ...(partSizes !== undefined ? { partSizes } : {}),
      };
      plan.signal?.throwIfAborted();
      return await this.commitStaged(bucket, key, staged, meta, plan.precondition, plan.context);
    } catch (err) {
      await staged.abort();
      throw err;
    }
  }

  /**
   * The precondition and the commit under the key lock; observers hear of the result. Public
   * for writes staged elsewhere (a multipart object's extents); the caller aborts on a throw.
   */
  async commitStaged(
    bucket: string,
    key: string,
    staged: StagedObject,
    meta: ObjectMeta,
    precondition: WritePrecondition | undefined,
    context?: WriteContext,
  ): Promise<ObjectInfo> {
    let recorded: Promise<void> | void = undefined;
    const info = await this.#locks.run(`${bucket}/${key}`, async () => {
      const observers = this.observers.of(bucket);
      // One metadata read serves the precondition and the observers' replaced object.
      const existing = precondition || needReplaced(observers)
        ? await this.backend.headObject(bucket, key)
        : null;
      if (precondition) precondition(existing);
      const info = await staged.commit(meta);
      recorded = durable(
        observers.map((observer) => observer.committed(bucket, info, existing, context)),
      );
      return info;
    });
    // Outside the key lock (the order per key is fixed when the observers heard it): the caller
    // answers only once the observers made the write durable (its event committed).
    await recorded;
    return info;
  }

  async copy(
    source: { bucket: string; key: string },
    target: { bucket: string; key: string },
    options: CopyOptions,
  ): Promise<ObjectInfo> {
    const { info, body } = await this.openCopySource(source, target, options);
    const metadata = {
      ...(options.metadata ?? {
        contentType: info.meta.contentType,
        userMeta: info.meta.userMeta,
        headers: info.meta.headers,
      }),
      tags: options.tags ?? info.meta.tags,
    };
    return await this.store(target.bucket, target.key, body, {
      metadata,
      maxBytes: maxCopyBytes(this.limits),
      expectedSize: info.meta.size,
      verify: (digest) => verifyCopy(digest, source.key, info),
      precondition: options.precondition,
      signal: options.signal,
      context: options.context,
    });
  }

  /**
   * Heads an object, lets `plan` judge it (conditionals, size, range; throw to refuse) and opens
   * the planned bytes. An object replaced between the HEAD and the open is judged again as the
   * new version, so a concurrent overwrite never fails a read.
   */
  async openPlanned(
    bucket: string,
    key: string,
    plan: (info: ObjectInfo) => ByteRange | undefined,
  ): Promise<ObjectBody & { range?: ByteRange }> {
    return await openPlannedRead(this, bucket, key, plan);
  }

  private openCopySource(
    source: { bucket: string; key: string },
    target: { bucket: string; key: string },
    options: CopyOptions,
  ): Promise<ObjectBody> {
    return this.openPlanned(source.bucket, source.key, (sourceInfo) => {
      options.sourceCheck?.(sourceInfo);
      const sameObject = source.bucket === target.bucket && source.key === target.key;
      if (sameObject && options.metadata === null) {
        throw new SvcError(
          "InvalidRequest",
          "This copy request is illegal because it is trying to copy an object to itself without changing the object's metadata, storage class, website redirect location or encryption attributes.",
        );
      }
      const max = maxCopyBytes(this.limits);
      if (max === 0 || sourceInfo.meta.size > max) throw tooLarge(max);
      return undefined;
    });
  }

  /**
   * Replaces an object's tags (empty: removes them), keeping its bytes and every other field,
   * under the key lock so no write of the key interleaves. NoSuchKey when it does not exist.
   */
  async setTags(bucket: string, key: string, tags: Record<string, string>): Promise<ObjectInfo> {
    const info = await this.#locks.run(
      `${bucket}/${key}`,
      () =>
        this.backend.updateObjectMeta(bucket, key, (meta) => {
          const { tags: _old, ...rest } = meta;
          return { ...rest, ...withTags(tags) };
        }),
    );
    if (info === null) throw noSuchKey(key);
    return info;
  }

  /**
   * Deletes one key; a key ending in `/` deletes every object under that prefix (the marker
   * itself included). A missing key is success. Returns how many objects were removed.
   */
  async delete(bucket: string, key: string, context?: WriteContext): Promise<number> {
    await this.headBucket(bucket);
    if (!key.endsWith("/")) return (await this.deleteOne(bucket, key, context)) ? 1 : 0;
    let removed = 0;
    const recorded: Promise<void>[] = [];
    let startAfter: string | undefined;
    for (;;) {
      const page = await this.backend.listObjects(bucket, {
        prefix: key,
        startAfter,
        maxKeys: 1000,
      });
      for (const object of page.objects) {
        if (await this.deleteOne(bucket, object.key, context, recorded)) removed++;
      }
      if (!page.isTruncated || page.nextStartAfter === undefined) {
        await Promise.all(recorded);
        return removed;
      }
      startAfter = page.nextStartAfter;
    }
  }

  /**
   * Deletes exactly one key (no prefix semantics); false when it did not exist. Returns once the
   * observers recorded it, unless `recorded` collects their promises (see WriteObservers.removal).
   */
  deleteOne(
    bucket: string,
    key: string,
    context?: WriteContext,
    recorded?: Promise<void>[],
  ): Promise<boolean> {
    return this.#locks.run(`${bucket}/${key}`, () =>
      this.observers.removal(
        bucket,
        () => this.backend.headObject(bucket, key),
        () => this.backend.deleteObject(bucket, key),
        context,
        recorded,
      ));
  }

  /**
   * Deletes one key only while `still` accepts the object there now, judged under the key lock
   * (a job that decided on a listing never removes a version written after it looked). False
   * when the key is gone or `still` refused. `still` may wait (a job journals its events there).
   */
  deleteIf(
    bucket: string,
    key: string,
    still: (current: ObjectInfo) => boolean | Promise<boolean>,
    context?: WriteContext,
  ): Promise<boolean> {
    return this.#locks.run(`${bucket}/${key}`, async () => {
      const current = await this.backend.headObject(bucket, key);
      if (current === null || !(await still(current))) return false;
      return await this.observers.removal(
        bucket,
        () => Promise.resolve(current),
        () => this.backend.deleteObject(bucket, key),
        context,
      );
    });
  }
}

export function noSuchBucket(bucket: string): SvcError {
  return new SvcError("NoSuchBucket", `The specified bucket "${bucket}" does not exist`, {
    BucketName: bucket,
  });
}

export function noSuchKey(key: string): SvcError {
  return new SvcError("NoSuchKey", `The specified key "${key}" does not exist`, { Key: key });
}
