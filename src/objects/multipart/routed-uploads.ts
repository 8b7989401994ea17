/**
 * Picks each bucket's upload store: buckets whose backend is S3 keep their uploads in the backend
 * (backend-uploads.ts: any instance of a fleet over it serves them), filesystem buckets in the
 * local state directory (LocalUploads below: one instance owns a data directory). Which backend a
 * bucket lives on comes from the bucket router, asked per call (a reload may move a bucket).
 * An upload an older svc started in the local store on an S3 bucket stays served from there.
 */
import { compareUtf8, SvcError } from "../../lib/mod.ts";
import type { Backend, BucketRouter, S3Client, ScratchSealer } from "../../storage/mod.ts";
import { BackendUploads } from "./backend-uploads.ts";
import type { CompletedUpload, CompletedUploads } from "./completed-uploads.ts";
import { InternalKeysGuard } from "./internal-keys-guard.ts";
import type {
  MultipartStore,
  NewUpload,
  PartInfo,
  SweepResult,
  UploadRecord,
} from "./multipart-store.ts";
import type { PutPartOptions } from "./part-receive.ts";
import type { CompletionClaim, UploadStore } from "./upload-store.ts";

const NO_CLAIM: CompletionClaim = { release: () => Promise.resolve() };

/**
 * The local upload store: multipart state in svc's state directory (multipart-store.ts) and
 * completed-upload records beside it (completed-uploads.ts), for buckets on a filesystem backend.
 * One instance owns it (the data-directory lock), so completion needs no fleet-wide claim: the
 * multipart service's in-process lock keeps two Completes of one upload apart.
 */

export class LocalUploads implements UploadStore {
  constructor(readonly store: MultipartStore, readonly done: CompletedUploads) {}

  create(input: NewUpload): Promise<UploadRecord> {
    return this.store.create(input);
  }

  async get(bucket: string, uploadId: string): Promise<UploadRecord | null> {
    const record = await this.store.get(uploadId);
    return record?.bucket === bucket ? record : null;
  }

  putPart(
    _bucket: string,
    uploadId: string,
    partNumber: number,
    body: ReadableStream<Uint8Array>,
    options: PutPartOptions & { sealer?: ScratchSealer | null },
  ): Promise<PartInfo> {
    return this.store.putPart(uploadId, partNumber, body, options);
  }

  listParts(_bucket: string, uploadId: string): Promise<PartInfo[]> {
    return this.store.listParts(uploadId);
  }

  openPart(
    _bucket: string,
    uploadId: string,
    part: PartInfo,
    sealer?: ScratchSealer | null,
  ): Promise<ReadableStream<Uint8Array> | null> {
    return this.store.openPart(uploadId, part.partNumber, sealer);
  }

  remove(_bucket: string, uploadId: string): Promise<boolean> {
    return this.store.remove(uploadId);
  }

  async list(bucket: string): Promise<UploadRecord[]> {
    return (await this.store.list()).filter((upload) => upload.bucket === bucket);
  }

  /** Every local upload counts: the cap guards this instance's state directory. */
  count(_bucket: string): Promise<number> {
    return this.store.count();
  }

  sweep(olderThanMs: number, now: number): Promise<SweepResult> {
    return this.store.sweep(olderThanMs, now);
  }

  async completed(bucket: string, uploadId: string): Promise<CompletedUpload | null> {
    const done = await this.done.get(uploadId);
    return done?.bucket === bucket ? done : null;
  }

  async recordCompleted(done: CompletedUpload): Promise<CompletedUpload> {
    await this.done.record(done);
    return done;
  }

  async pruneCompleted(
    options: { olderThanMs?: number; bucket?: string; now?: number },
  ): Promise<void> {
    await this.done.prune(options);
  }

  claim(): Promise<CompletionClaim> {
    return Promise.resolve(NO_CLAIM);
  }
}

export class RoutedUploads implements UploadStore {
  constructor(
    readonly local: LocalUploads,
    readonly backend: BackendUploads | null,
    /** Whether `bucket` lives on an S3 backend. */
    private readonly onS3: (bucket: string) => Promise<boolean>,
  ) {}

  /** Whether the upload is local (its parts are files of the local store). */
  async isLocal(bucket: string, uploadId?: string): Promise<boolean> {
    if (this.backend === null || !await this.onS3(bucket)) return true;
    return uploadId !== undefined && await this.local.get(bucket, uploadId) !== null;
  }

  async #of(bucket: string, uploadId?: string): Promise<UploadStore> {
    return await this.isLocal(bucket, uploadId) ? this.local : this.backend!;
  }

  async create(input: NewUpload): Promise<UploadRecord> {
    return (await this.#of(input.bucket)).create(input);
  }

  async get(bucket: string, uploadId: string): Promise<UploadRecord | null> {
    return (await this.#of(bucket, uploadId)).get(bucket, uploadId);
  }

  async putPart(
    bucket: string,
    uploadId: string,
    partNumber: number,
    body: ReadableStream<Uint8Array>,
    options: PutPartOptions & { sealer?: ScratchSealer | null },
  ): Promise<PartInfo> {
    return (await this.#of(bucket, uploadId)).putPart(bucket, uploadId, partNumber, body, options);
  }

  async listParts(bucket: string, uploadId: string): Promise<PartInfo[]> {
    return (await this.#of(bucket, uploadId)).listParts(bucket, uploadId);
  }

  async openPart(
    bucket: string,
    uploadId: string,
    part: PartInfo,
    sealer?: ScratchSealer | null,
  ): Promise<ReadableStream<Uint8Array> | null> {
    return (await this.#of(bucket, uploadId)).openPart(bucket, uploadId, part, sealer);
  }

  async remove(bucket: string, uploadId: string): Promise<boolean> {
    return (await this.#of(bucket, uploadId)).remove(bucket, uploadId);
  }

  async list(bucket: string): Promise<UploadRecord[]> {
    const local = await this.local.list(bucket);
    if (await this.isLocal(bucket)) return local;
    const remote = await this.backend!.list(bucket);
    return local.length === 0
      ? remote
      : [...local, ...remote].sort((a, b) =>
        compareUtf8(a.key, b.key) || a.initiated - b.initiated ||
        compareUtf8(a.uploadId, b.uploadId)
      );
  }

  async count(bucket: string): Promise<number> {
    return (await this.#of(bucket)).count(bucket);
  }

  /** Both stores; the backend's failure does not keep the local sweep from running. */
  async sweep(olderThanMs: number, now: number): Promise<SweepResult> {
    const local = await this.local.sweep(olderThanMs, now);
    if (this.backend === null) return local;
    const remote = await this.backend.sweep(olderThanMs, now);
    return {
      count: local.count + remote.count,
      bytes: local.bytes + remote.bytes,
      removed: [...local.removed, ...remote.removed],
    };
  }

  async completed(bucket: string, uploadId: string): Promise<CompletedUpload | null> {
    const local = await this.local.completed(bucket, uploadId);
    if (local !== null || await this.isLocal(bucket)) return local;
    return await this.backend!.completed(bucket, uploadId);
  }

  /** Kept where the upload was: call before the upload is removed. */
  async recordCompleted(done: CompletedUpload): Promise<CompletedUpload> {
    return (await this.#of(done.bucket, done.uploadId)).recordCompleted(done);
  }

  async pruneCompleted(
    options: { olderThanMs?: number; bucket?: string; now?: number },
  ): Promise<void> {
    await this.local.pruneCompleted(options);
    if (this.backend !== null && options.bucket === undefined) {
      await this.backend.pruneCompleted(options);
    }
  }

  async claim(bucket: string, uploadId: string): Promise<CompletionClaim | null> {
    return (await this.#of(bucket, uploadId)).claim(bucket, uploadId);
  }
}

/**
 * The stores over the bucket router, and the router as the delta layer must see it (with the
 * backend-resident state hidden from clients: internal-keys-guard.ts).
 */
export interface UploadStores {
  store: RoutedUploads;
  /** The router for the delta layer: with the backend-resident state hidden. */
  guarded: Backend & { identityOf(bucket: string): string };
}

export function uploadStores(
  router: BucketRouter,
  store: MultipartStore,
  completed: CompletedUploads,
  /** A raw client per S3 backend, by backend name, and what every write to it carries (SSE). */
  clients: ReadonlyMap<string, { client: S3Client; writeHeaders?: Record<string, string> }>,
): UploadStores {
  const local = new LocalUploads(store, completed);
  if (clients.size === 0) {
    return { store: new RoutedUploads(local, null, () => Promise.resolve(false)), guarded: router };
  }
  const onS3 = async (bucket: string) => (await router.route(bucket)).backend.kind === "s3";
  const backend = new BackendUploads({
    stack: router,
    locate: async (bucket) => {
      const route = await router.route(bucket);
      const raw = clients.get(route.name);
      if (raw === undefined) {
        throw new SvcError("InternalError", `Backend "${route.name}" of "${bucket}" is not S3`);
      }
      return { ...raw, real: route.real, bucket };
    },
    buckets: async () => {
      const names = (await router.listBuckets()).map((entry) => entry.name);
      const onS3Names: string[] = [];
      for (const name of names) if (await onS3(name).catch(() => false)) onS3Names.push(name);
      return onS3Names;
    },
  });
  return {
    store: new RoutedUploads(local, backend, onS3),
    guarded: new InternalKeysGuard(router, (bucket) => backend.purge(bucket)),
  };
}
