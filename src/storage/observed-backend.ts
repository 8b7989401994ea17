/**
 * A Backend wrapper that remembers when the backend last answered. Every call is delegated
 * unchanged; when one settles successfully its completion time becomes `lastSuccessAt()`. The
 * readiness probe uses this as a last-known-good signal (SVC_READY_CACHE_TTL_SECS).
 *
 * What counts as success: the call resolved. A clean "absent" answer (`null`, or `false` from
 * deleteObject) counts, since the backend answered. Any throw does not count, including S3-style
 * answers such as NoSuchBucket: being conservative keeps the last-known-good window honest.
 * getObject counts when the call returns, not when its body finishes; bodies pass through as the
 * same stream objects, with no buffering or teeing. A staged object is wrapped only so that its
 * commit and abort are observed too.
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
  ScratchSealer,
  StagedObject,
  WriteCondition,
} from "./backend.ts";

export class ObservedBackend implements Backend {
  #lastSuccessAt: number | null = null;

  /**
   * @param inner the backend every call goes to
   * @param now clock for the recorded times, epoch milliseconds (tests inject one)
   */
  constructor(readonly inner: Backend, private readonly now: () => number = Date.now) {}

  get kind(): Backend["kind"] {
    return this.inner.kind;
  }

  /** Epoch milliseconds at which the latest successful call completed; null before any. */
  lastSuccessAt(): number | null {
    return this.#lastSuccessAt;
  }

  async #observe<T>(call: () => Promise<T>): Promise<T> {
    const result = await call();
    this.#lastSuccessAt = this.now();
    return result;
  }

  listBuckets(): Promise<BucketEntry[]> {
    return this.#observe(() => this.inner.listBuckets());
  }

  headBucket(bucket: string): Promise<BucketEntry | null> {
    return this.#observe(() => this.inner.headBucket(bucket));
  }

  createBucket(bucket: string): Promise<void> {
    return this.#observe(() => this.inner.createBucket(bucket));
  }

  deleteBucket(bucket: string): Promise<void> {
    return this.#observe(() => this.inner.deleteBucket(bucket));
  }

  headObject(bucket: string, key: string): Promise<ObjectInfo | null> {
    return this.#observe(() => this.inner.headObject(bucket, key));
  }

  /** No `check` is passed down: a refusal it throws would be counted as a backend failure. */
  getObject(bucket: string, key: string, range?: ByteRange): Promise<ObjectBody | null> {
    return this.#observe(() => this.inner.getObject(bucket, key, range));
  }

  async stageObject(
    bucket: string,
    key: string,
    body: ReadableStream<Uint8Array>,
    signal?: AbortSignal,
    expectedSize?: number,
  ): Promise<StagedObject> {
    const staged = await this.#observe(() =>
      this.inner.stageObject(bucket, key, body, signal, expectedSize)
    );
    return new ObservedStagedObject(staged, (call) => this.#observe(call));
  }

  updateObjectMeta(
    bucket: string,
    key: string,
    update: (meta: ObjectMeta) => ObjectMeta,
  ): Promise<ObjectInfo | null> {
    return this.#observe(() => this.inner.updateObjectMeta(bucket, key, update));
  }

  async stageExtents(
    bucket: string,
    key: string,
    extents: LocalExtent[],
    signal?: AbortSignal,
  ): Promise<StagedObject | null> {
    if (!this.inner.stageExtents) return null;
    const staged = await this.#observe(() =>
      this.inner.stageExtents!(bucket, key, extents, signal)
    );
    return staged && new ObservedStagedObject(staged, (call) => this.#observe(call));
  }

  scratchSealer(bucket: string): Promise<ScratchSealer | null> {
    return this.inner.scratchSealer?.(bucket) ?? Promise.resolve(null);
  }

  deleteObject(bucket: string, key: string, condition?: DeleteCondition): Promise<boolean> {
    return this.#observe(() => this.inner.deleteObject(bucket, key, condition));
  }

  listObjects(bucket: string, options: ListOptions): Promise<ListPage> {
    return this.#observe(() => this.inner.listObjects(bucket, options));
  }
}

class ObservedStagedObject implements StagedObject {
  constructor(
    private readonly staged: StagedObject,
    private readonly observe: <T>(call: () => Promise<T>) => Promise<T>,
  ) {}

  get size(): number {
    return this.staged.size;
  }

  commit(meta: ObjectMeta, condition?: WriteCondition): Promise<ObjectInfo> {
    return this.observe(() => this.staged.commit(meta, condition));
  }

  abort(): Promise<void> {
    return this.observe(() => this.staged.abort());
  }
}
