/**
 * Routes each bucket to one of the named backends, under the bucket name the client uses
 * (virtual) or the one the backend knows (`alias`), so everything above storage sees a single
 * Backend. The storage section decides where a bucket lives:
 *
 * - a bucket policy with `backend` goes there; `alias` renames it on that backend;
 * - with one backend, everything goes there;
 * - otherwise an unrouted bucket is looked up with HEAD on the default backend, then the others
 *   in configuration order; the first that has it wins and is remembered (until the bucket is
 *   deleted through svc or a backend reports it missing). An error that is not a clean "absent"
 *   pins the bucket to that backend for this call instead of falling through, so an outage of
 *   the backend that holds a bucket never sends its writes to another backend. A bucket that no
 *   backend has belongs to the default backend (CreateBucket lands there).
 *
 * A backend marked unavailable (it failed its probe, see backend-health.ts) answers 503 for every
 * bucket it serves until a probe succeeds again. Errors naming the real bucket are renamed to the
 * virtual name, so a client never learns an alias.
 */

import { SvcError } from "../lib/mod.ts";
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
} from "./backend.ts";
import { BucketLister, type BucketListingSettings } from "./bucket-lister.ts";

/** A bucket's route from one config snapshot. */
export interface BucketRoutePolicy {
  backend?: string;
  alias?: string;
}

export interface RouterSettings extends BucketListingSettings {
  /** `storage.buckets`, keyed by virtual bucket name. */
  policies: Record<string, BucketRoutePolicy>;
}

export interface RoutedBackend {
  name: string;
  backend: Backend;
  /** false while the backend failed its last probe: its buckets answer 503. */
  available(): boolean;
}

export interface Route {
  name: string;
  backend: Backend;
  /** The bucket name on the backend. */
  real: string;
}

export class BucketRouter implements Backend {
  readonly #backends: Map<string, RoutedBackend>;
  readonly #defaultName: string;
  readonly #settings: () => RouterSettings;
  /** Unrouted buckets found by HEAD: virtual name -> backend name. */
  readonly #found = new Map<string, string>();
  readonly #lister: BucketLister;

  /** `backends` in configuration order; `defaultName` must be one of them. */
  constructor(backends: RoutedBackend[], defaultName: string, settings: () => RouterSettings) {
    this.#backends = new Map(backends.map((entry) => [entry.name, entry]));
    if (!this.#backends.has(defaultName)) {
      throw new RangeError(`Default backend "${defaultName}" is not among the backends`);
    }
    this.#defaultName = defaultName;
    this.#settings = settings;
    this.#lister = new BucketLister(backends, defaultName, settings);
  }

  get kind(): Backend["kind"] {
    return this.#entry(this.#defaultName).backend.kind;
  }

  get defaultName(): string {
    return this.#defaultName;
  }

  get names(): string[] {
    return [...this.#backends.keys()];
  }

  #entry(name: string): RoutedBackend {
    const entry = this.#backends.get(name);
    if (!entry) throw new SvcError("InternalError", `Backend "${name}" is not configured`);
    return entry;
  }

  #usable(name: string, bucket: string): RoutedBackend {
    const entry = this.#entry(name);
    if (!entry.available()) {
      throw new SvcError(
        "ServiceUnavailable",
        `The backend of bucket "${bucket}" is unavailable; try again later`,
        { BucketName: bucket },
      );
    }
    return entry;
  }

  /**
   * Where a bucket really lives, as `backend/real-name`, without asking any backend: two names
   * routed to one real bucket share it (the delta store serializes deltaspaces by it).
   */
  identityOf(bucket: string): string {
    const policy = this.#settings().policies[bucket];
    const name = policy?.backend ?? this.#found.get(bucket) ?? this.#defaultName;
    return `${name}/${policy?.alias ?? bucket}`;
  }

  /** Where `bucket` lives now. Throws 503 for a backend that failed its probe. */
  async route(bucket: string): Promise<Route> {
    const policy = this.#settings().policies[bucket];
    const real = policy?.alias ?? bucket;
    if (policy?.backend !== undefined || this.#backends.size === 1) {
      const name = policy?.backend ?? this.#defaultName;
      return { name, backend: this.#usable(name, bucket).backend, real };
    }
    const remembered = this.#found.get(bucket);
    if (remembered !== undefined && this.#backends.has(remembered)) {
      return { name: remembered, backend: this.#usable(remembered, bucket).backend, real };
    }
    let unavailable: string | undefined;
    for (const name of this.#lookupOrder()) {
      const entry = this.#entry(name);
      if (!entry.available()) {
        unavailable ??= name;
        continue;
      }
      let found: BucketEntry | null;
      try {
        found = await entry.backend.headBucket(real);
      } catch {
        // Not a clean "absent": the bucket may well live here. Pin, do not fall through.
        return { name, backend: entry.backend, real };
      }
      if (found) {
        this.#found.set(bucket, name);
        return { name, backend: entry.backend, real };
      }
    }
    // Absent everywhere we could ask: it may live on the backend we could not ask.
    if (unavailable !== undefined) this.#usable(unavailable, bucket);
    return {
      name: this.#defaultName,
      backend: this.#usable(this.#defaultName, bucket).backend,
      real,
    };
  }

  #lookupOrder(): string[] {
    return [this.#defaultName, ...this.names.filter((name) => name !== this.#defaultName)];
  }

  /** Runs `call` on the bucket's backend; errors about the real bucket name the virtual one. */
  async #on<T>(bucket: string, call: (route: Route) => Promise<T>): Promise<T> {
    const route = await this.route(bucket);
    try {
      return await call(route);
    } catch (err) {
      if (err instanceof SvcError && err.code === "NoSuchBucket") this.#found.delete(bucket);
      throw renamed(err, route.real, bucket);
    }
  }

  // ---- buckets -------------------------------------------------------------------------------

  listBuckets(): Promise<BucketEntry[]> {
    return this.#lister.list();
  }

  headBucket(bucket: string): Promise<BucketEntry | null> {
    return this.#on(bucket, async ({ backend, real }) => {
      const entry = await backend.headBucket(real);
      if (!entry) this.#found.delete(bucket);
      return entry ? { ...entry, name: bucket } : null;
    });
  }

  async createBucket(bucket: string): Promise<void> {
    await this.#on(bucket, ({ backend, real }) => backend.createBucket(real));
    this.#lister.invalidate();
  }

  /**
   * Creates `real` on the named backend, whatever routes to it now (the admin API creates a
   * bucket there before recording its route), and refreshes the merged listing.
   */
  async createBucketOn(backendName: string, real: string): Promise<void> {
    await this.#usable(backendName, real).backend.createBucket(real);
    this.#lister.invalidate();
  }

  /** Deletes `real` from the named backend (undoing createBucketOn); refreshes the listing. */
  async deleteBucketOn(backendName: string, real: string): Promise<void> {
    try {
      await this.#usable(backendName, real).backend.deleteBucket(real);
    } finally {
      this.#lister.invalidate();
    }
  }

  async deleteBucket(bucket: string): Promise<void> {
    try {
      await this.#on(bucket, ({ backend, real }) => backend.deleteBucket(real));
    } finally {
      this.#found.delete(bucket);
      this.#lister.invalidate();
    }
  }

  // ---- objects -------------------------------------------------------------------------------

  headObject(bucket: string, key: string): Promise<ObjectInfo | null> {
    return this.#on(bucket, ({ backend, real }) => backend.headObject(real, key));
  }

  getObject(
    bucket: string,
    key: string,
    range?: ByteRange,
    check?: (info: ObjectInfo) => void,
  ): Promise<ObjectBody | null> {
    return this.#on(bucket, ({ backend, real }) => backend.getObject(real, key, range, check));
  }

  stageObject(
    bucket: string,
    key: string,
    body: ReadableStream<Uint8Array>,
    signal?: AbortSignal,
    expectedSize?: number,
  ): Promise<StagedObject> {
    return this.#on(bucket, async ({ backend, real }) => {
      const staged = await backend.stageObject(real, key, body, signal, expectedSize);
      return {
        size: staged.size,
        commit: (meta, condition) =>
          staged.commit(meta, condition).catch((err) => Promise.reject(renamed(err, real, bucket))),
        abort: () => staged.abort(),
      };
    });
  }

  updateObjectMeta(
    bucket: string,
    key: string,
    update: (meta: ObjectMeta) => ObjectMeta,
  ): Promise<ObjectInfo | null> {
    return this.#on(bucket, ({ backend, real }) => backend.updateObjectMeta(real, key, update));
  }

  stageExtents(
    bucket: string,
    key: string,
    extents: LocalExtent[],
    signal?: AbortSignal,
  ): Promise<StagedObject | null> {
    return this.#on(bucket, async ({ backend, real }) => {
      const staged = await backend.stageExtents?.(real, key, extents, signal) ?? null;
      return staged && {
        size: staged.size,
        commit: (meta, condition) =>
          staged.commit(meta, condition).catch((err) => Promise.reject(renamed(err, real, bucket))),
        abort: () => staged.abort(),
      };
    });
  }

  scratchSealer(bucket: string): Promise<ScratchSealer | null> {
    return this.#on(
      bucket,
      async ({ backend, real }) => await backend.scratchSealer?.(real) ?? null,
    );
  }

  deleteObject(bucket: string, key: string, condition?: DeleteCondition): Promise<boolean> {
    return this.#on(bucket, ({ backend, real }) => backend.deleteObject(real, key, condition));
  }

  listObjects(bucket: string, options: ListOptions): Promise<ListPage> {
    return this.#on(bucket, ({ backend, real }) => backend.listObjects(real, options));
  }
}

/** The same error about `virtual` instead of `real` (messages and the BucketName detail). */
function renamed(err: unknown, real: string, virtual: string): unknown {
  if (real === virtual || !(err instanceof SvcError)) return err;
  if (err.details.BucketName !== real && !err.message.includes(`"${real}"`)) return err;
  const details = { ...err.details };
  if (details.BucketName === real) details.BucketName = virtual;
  return new SvcError(err.code, err.message.replaceAll(`"${real}"`, `"${virtual}"`), details, {
    cause: err,
  });
}
