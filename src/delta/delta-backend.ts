/**
 * A Backend decorator that stores eligible objects as deltas against a per-deltaspace baseline
 * (DESIGN "Storage format", SPEC items 4-6, 11-12) and presents logical objects, so the object
 * service can use it like any backend.
 *
 * - In a bucket with compression off every call is delegated verbatim: `reference.bin` and
 *   `x.delta` are ordinary keys there (see layout.ts). Deltas written while compression was on
 *   are then visible under their stored names; turning compression off does not rewrite them.
 * - In a bucket with compression on, internal names (`reference.bin`, `*.delta`, `.dg/…`) are
 *   never client keys: head/get answer null, delete false, stage refuses them (400).
 * - Which stored name holds a key: `key` (passthrough) or `key.delta`; when both exist (an
 *   overwrite that changed kind, before its cleanup) the later lastModified wins, as in listings.
 * - Delta metadata is the logical ObjectMeta plus `referenceSha256`, `deltaspace` (where its
 *   baseline is: a policy change never moves it) and `deltaGroup` (see DeltaMeta), so HEAD and
 *   LIST report the logical size and ETag without touching the codec; `storedSize` is the delta's.
 * - Listings: see delta-list.ts (exact pagination; common prefixes exact for "/").
 */

import { KeyLock, SvcError } from "../lib/mod.ts";
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
  ScratchSealer,
  StagedObject,
} from "../storage/mod.ts";
import { CodecSet } from "./codec/codec-choice.ts";
import { isInternalName, validateClientKey, withSourceTime } from "./layout.ts";
import { ReferenceCache } from "./cache/reference-cache.ts";
import { StreamMemos } from "./archive/archive-codec.ts";
import { isDeltaEligible } from "./eligibility.ts";
import {
  baselineCacheKey,
  baselineFolderOf,
  type DeltaBackendOptions,
  type DeltaContext,
  type DeltaMeta,
  type DeltaSettings,
  rebuiltOwner,
} from "./delta-context.ts";
import { readDelta } from "./delta-read.ts";
import { listLogicalPage, onlyArtifacts } from "./delta-list.ts";
import { StoredLocator } from "./stored-locator.ts";
import { stagedDelta } from "./delta-write.ts";
import { plainMeta, storeOwnFields } from "./delta-stored.ts";
import { deleteDelta, removeLeftoverArtifacts } from "./delta-cleanup.ts";
import { settleForms } from "./fleet/stored-forms.ts";
import { commitStreamed } from "./fleet/ordered-commit.ts";
import { deltaspaceLabel, policyFor, resolveDeltaspace } from "./groups/deltaspace-policy.ts";
import { planLiveEncode, spoolBody, spoolWhileEncoding } from "./live-encode.ts";
import { hintedFolder } from "./groups/generations.ts";
import { isArchiveKey } from "./archive-form.ts";
import { ArchiveBacklog, type BacklogHooks } from "./background/archive-backlog.ts";
import {
  convertArchive,
  type ConvertOutcome,
  type PendingArchive,
  pendingOf,
} from "./background/archive-convert.ts";
import { getLogger } from "../observability/mod.ts";

const log = getLogger("svc::delta");

export type { DeltaBackendOptions, DeltaMeta, DeltaSettings } from "./delta-context.ts";

/** Inner listing page size while collecting one logical page (hidden names need headroom). */
const INNER_PAGE_KEYS = 1000;
type Check = (info: ObjectInfo) => void;

export class DeltaBackend implements Backend {
  readonly #ctx: DeltaContext;
  readonly #settings: () => DeltaSettings;
  readonly #innerPageKeys: number;
  readonly #stored: StoredLocator;
  #backlog: ArchiveBacklog | undefined;

  constructor(options: DeltaBackendOptions) {
    this.#ctx = {
      inner: options.inner,
      codec: options.codec,
      codecs: new CodecSet({
        xdelta3: options.codec,
        zstd: options.zstd,
        zstdMemoryBytes: options.zstdMemoryBytes,
      }),
      pool: options.pool,
      spoolDir: options.spoolDir,
      referenceCache: options.referenceCache ??
        new ReferenceCache({ dir: options.spoolDir, maxBytes: 0 }),
      rebuiltCache: options.rebuiltCache ??
        new ReferenceCache({ dir: options.spoolDir, maxBytes: 0, label: "rebuilt object" }),
      streamMemos: new StreamMemos(),
      observer: options.observer,
      codecUnavailable: options.codecUnavailable,
      deltaspaceLocks: new KeyLock(),
      bucketIdentity: options.bucketIdentity,
    };
    this.#settings = options.settings;
    this.#innerPageKeys = options.innerPageKeys ?? INNER_PAGE_KEYS;
    this.#stored = new StoredLocator(this.#ctx, options.metadataCache);
  }

  /**
   * Starts converting archives stored as they came (`archive_deltas: background`), queued in
   * `dir` (background/archive-backlog.ts; what a previous run left is resumed). Without it every
   * archive is converted during its PUT.
   */
  async startBacklog(dir: string, hooks?: BacklogHooks): Promise<ArchiveBacklog> {
    const convert = async (pending: PendingArchive): Promise<ConvertOutcome> => {
      const leave = hooks?.admit ? hooks.admit(pending.bucket) : () => {};
      if (leave === null) return "retry"; // a maintenance job holds the bucket
      try {
        return await convertArchive(this.#ctx, this.#settings(), pending, {
          forget: () => this.#stored.forget(pending.bucket, pending.key),
          converted: (stored, source) => hooks?.converted?.(pending.bucket, stored, source),
        });
      } finally {
        leave();
      }
    };
    this.#backlog = await ArchiveBacklog.open(dir, convert, hooks);
    this.#backlog.start();
    return this.#backlog;
  }

  /** The codec choice, shared with the scrub and verify (one zstd memory budget). */
  get codecs(): CodecSet {
    return this.#ctx.codecs;
  }

  get kind(): Backend["kind"] {
    return this.#ctx.inner.kind;
  }

  get #inner(): Backend {
    return this.#ctx.inner;
  }

  // ---- buckets -------------------------------------------------------------------------------

  listBuckets(): Promise<BucketEntry[]> {
    return this.#inner.listBuckets();
  }

  headBucket(bucket: string): Promise<BucketEntry | null> {
    return this.#inner.headBucket(bucket);
  }

  createBucket(bucket: string): Promise<void> {
    return this.#inner.createBucket(bucket);
  }

  /** Leftover baselines and markers with no deltas (compression on) do not keep it alive. */
  async deleteBucket(bucket: string): Promise<void> {
    if (this.#settings().bucketCompression(bucket)) {
      // Any other object (a delta included) makes the bucket non-empty: leave everything.
      const artifacts = await onlyArtifacts(this.#inner, bucket, INNER_PAGE_KEYS);
      if (artifacts) await removeLeftoverArtifacts(this.#ctx, bucket, artifacts);
    }
    await this.#inner.deleteBucket(bucket);
    this.#ctx.referenceCache.evictPrefix(baselineCacheKey(this.#ctx, bucket, ""));
    this.#ctx.rebuiltCache.evictPrefix(rebuiltOwner(this.#ctx, bucket, ""));
    this.#stored.invalidateBucket(bucket);
  }

  // ---- objects -------------------------------------------------------------------------------

  async headObject(bucket: string, key: string): Promise<ObjectInfo | null> {
    if (!this.#settings().bucketCompression(bucket)) return this.#inner.headObject(bucket, key);
    if (isInternalName(key)) return this.#nullIfBucket(bucket);
    const info = await this.#stored.head(bucket, key);
    return info && this.#labelled(bucket, key, info);
  }

  /** `info` with the deltaspace it is in (or would join) for the debug headers. */
  #labelled(bucket: string, key: string, info: ObjectInfo): ObjectInfo {
    const deltaspace = deltaspaceLabel(policyFor(this.#settings(), bucket), key, info.meta);
    return { ...withSourceTime(info), debug: { ...info.debug, deltaspace } };
  }

  async getObject(
    bucket: string,
    key: string,
    range?: ByteRange,
    check?: (info: ObjectInfo) => void,
  ): Promise<ObjectBody | null> {
    const settings = this.#settings();
    if (!settings.bucketCompression(bucket)) return this.#inner.getObject(bucket, key, range);
    if (isInternalName(key)) return this.#nullIfBucket(bucket);
    const rebuild = (found: ObjectBody) => this.#rebuilt(bucket, key, found, range, check);
    const read = await this.#stored.read(bucket, key, range, rebuild);
    return read && { ...read, info: this.#labelled(bucket, key, read.info) };
  }

  /** The delta object `found` of `key` rebuilt (getObject; `check` as there). */
  async #rebuilt(bucket: string, key: string, found: ObjectBody, range?: ByteRange, check?: Check) {
    const info = { ...found.info, key };
    try {
      check?.(info); // judged before the rebuild: a 304 or 412 costs no decode
    } catch (err) {
      await found.body.cancel().catch(() => {});
      throw err;
    }
    const rebuilt = await readDelta(
      this.#ctx,
      bucket,
      baselineFolderOf(key, found.info.meta),
      found.info,
      found.body,
      this.#settings().codecTimeoutMs,
      range,
      async () => {
        const again = await this.#inner.getObject(bucket, found.info.key);
        if (!again) throw new SvcError("NoSuchKey", `Key "${key}" was deleted while being read`);
        return again.body;
      },
    );
    return {
      info: this.#labelled(bucket, key, {
        ...info,
        debug: { referenceCache: rebuilt.cacheHit ? "hit" : "miss" },
      }),
      body: rebuilt.body,
    };
  }

  async stageObject(
    bucket: string,
    key: string,
    body: ReadableStream<Uint8Array>,
    signal?: AbortSignal,
    expectedSize?: number,
  ): Promise<StagedObject> {
    const settings = this.#settings();
    const compression = settings.bucketCompression(bucket);
    validateClientKey(key, compression);
    const nameEligible = isDeltaEligible(key, {
      size: expectedSize ?? 1,
      maxObjectSize: settings.maxObjectSize,
      compression,
    }).eligible;
    if (!nameEligible || this.#ctx.codecUnavailable) {
      // Never a delta: stream straight to the inner backend, no spool.
      const staged = await this.#inner.stageObject(bucket, key, body, signal, expectedSize);
      return compression ? this.#cleaningUp(staged, bucket, key) : staged;
    }
    // The inner backend's refusals (NoSuchBucket, bad key, path conflict) before any byte is
    // read: stage an empty body under the key and drop it.
    const probe = await this.#inner.stageObject(bucket, key, new Blob([]).stream(), signal);
    await probe.abort();
    const space = resolveDeltaspace(policyFor(settings, bucket), key);
    // Whether the commit succeeds or not, what was remembered of the key goes.
    const forget = () => this.#stored.forget(bucket, key);
    // An archive is encoded in its token form, made from the whole spool at commit: no encode of
    // its raw bytes while they arrive. A group's live encode uses its last known generation.
    const liveFolder = hintedFolder(this.#ctx, bucket, space.folder);
    const plan = isArchiveKey(key)
      ? undefined
      : await planLiveEncode(this.#ctx, settings, bucket, liveFolder, expectedSize, signal);
    if (plan === undefined || plan === "codec_busy") {
      const spool = await spoolBody(this.#ctx, body, signal);
      const busy = plan === "codec_busy";
      const convertLater = isArchiveKey(key) ? this.#laterFor(bucket, key, settings) : undefined;
      const options = { bucket, key, space, spool, codecBusy: busy, forget, convertLater };
      return stagedDelta(this.#ctx, settings, options);
    }
    const { spool, live } = await spoolWhileEncoding(this.#ctx, body, plan, signal);
    return stagedDelta(this.#ctx, settings, { bucket, key, space, spool, live, forget });
  }

  /** Where an archive PUT is queued for conversion instead of converted during the PUT. */
  #laterFor(bucket: string, key: string, settings: DeltaSettings) {
    const backlog = this.#backlog;
    if (!backlog || settings.bucketArchiveDeltas?.(bucket) === "inline") return undefined;
    return async (stored: ObjectInfo) => {
      await backlog.add(pendingOf(bucket, key, stored)).catch((err) => {
        log.warn("Cannot queue an archive for conversion; it stays as it came", {
          key,
          error: String(err),
        });
      });
    };
  }

  /**
   * A multipart object's parts kept as they are (no copy) when the key is stored passthrough; an
   * eligible key goes through stageObject (null), whose encode reads the bytes anyway.
   */
  async stageExtents(
    bucket: string,
    key: string,
    extents: LocalExtent[],
    signal?: AbortSignal,
  ): Promise<StagedObject | null> {
    if (!this.#inner.stageExtents) return null;
    const settings = this.#settings();
    const compression = settings.bucketCompression(bucket);
    validateClientKey(key, compression);
    const size = extents.reduce((sum, extent) => sum + extent.size, 0);
    const eligible = isDeltaEligible(key, {
      size,
      maxObjectSize: settings.maxObjectSize,
      compression,
    }).eligible;
    if (eligible && !this.#ctx.codecUnavailable) return null;
    const staged = await this.#inner.stageExtents(bucket, key, extents, signal);
    return staged && compression ? this.#cleaningUp(staged, bucket, key) : staged;
  }

  /** Parts in flight are kept as the backend below keeps its objects (sealed when encrypted). */
  scratchSealer(bucket: string): Promise<ScratchSealer | null> {
    return this.#inner.scratchSealer?.(bucket) ?? Promise.resolve(null);
  }

  /** Wraps a passthrough commit so it also removes the key's old delta, if any. */
  #cleaningUp(staged: StagedObject, bucket: string, key: string): StagedObject {
    return {
      size: staged.size,
      commit: async (meta) => {
        this.#stored.forget(bucket, key);
        const storageReason = this.#ctx.codecUnavailable ? "codec_unavailable" : "not_eligible";
        const stored: DeltaMeta = { ...plainMeta(meta), storage: "passthrough", storageReason };
        // Ordered like every write of a key that may also be stored as `key.delta`.
        const deltaName = isDeltaEligible(key, { size: 1, maxObjectSize: 1 }).eligible;
        const info = await commitStreamed(this.#inner, bucket, key, staged, stored, deltaName);
        this.#stored.forget(bucket, key);
        await settleForms(this.#ctx, bucket, key, key);
        // The key is now stored under its own name: the next GET or HEAD opens it directly
        // instead of also looking for a `.delta` twin (under the key lock, after the twin went).
        this.#stored.remember(bucket, key, info);
        this.#ctx.observer?.decision("passthrough", meta.size, info.storedSize, storageReason);
        return this.#labelled(bucket, key, info);
      },
      abort: () => staged.abort(),
    };
  }

  /**
   * The logical metadata lives on the stored object that holds the key (`key` or `key.delta`):
   * that record is updated, keeping the delta's own fields (`storage`, `referenceSha256`).
   */
  async updateObjectMeta(
    bucket: string,
    key: string,
    update: (meta: ObjectMeta) => ObjectMeta,
  ): Promise<ObjectInfo | null> {
    if (!this.#settings().bucketCompression(bucket)) {
      return this.#inner.updateObjectMeta(bucket, key, update);
    }
    if (isInternalName(key)) return this.#nullIfBucket(bucket);
    this.#stored.invalidate(bucket, key);
    const stored = await this.#stored.locate(bucket, key);
    if (!stored) return null;
    const updated = await this.#inner.updateObjectMeta(
      bucket,
      stored.key,
      (meta) => ({ ...update(meta), ...storeOwnFields(meta) }),
    );
    this.#stored.invalidate(bucket, key);
    return updated ? { ...updated, key } : null;
  }

  async deleteObject(bucket: string, key: string): Promise<boolean> {
    if (!this.#settings().bucketCompression(bucket)) return this.#inner.deleteObject(bucket, key);
    if (isInternalName(key)) {
      await this.#nullIfBucket(bucket);
      return false;
    }
    this.#stored.forget(bucket, key);
    const remove = async () => {
      const plainDeleted = await this.#inner.deleteObject(bucket, key);
      // The delta's own metadata says where its baseline is (the policy may have changed since).
      return (await deleteDelta(this.#ctx, bucket, key)) || plainDeleted;
    };
    return await (this.#backlog?.guard(bucket, key, remove) ?? remove());
  }

  async listObjects(bucket: string, options: ListOptions): Promise<ListPage> {
    if (!this.#settings().bucketCompression(bucket)) {
      return this.#inner.listObjects(bucket, options);
    }
    return await listLogicalPage(this.#inner, bucket, options, this.#innerPageKeys);
  }

  /** null for an existing bucket; NoSuchBucket otherwise (as the inner backend would answer). */
  async #nullIfBucket(bucket: string): Promise<null> {
    if (!(await this.#inner.headBucket(bucket))) {
      throw new SvcError("NoSuchBucket", `Bucket "${bucket}" does not exist`, {
        BucketName: bucket,
      });
    }
    return null;
  }
}
