/**
 * Picks each bucket's upload store: buckets whose backend is S3 keep their uploads in the backend
 * (backend-uploads.ts: any instance of a fleet over it serves them), filesystem buckets in the
 * local state directory (local-uploads.ts: one instance owns a data directory). Which backend a
 * bucket lives on comes from the bucket router, asked per call (a reload may move a bucket).
 * An upload an older svc started in the local store on an S3 bucket stays served from there.
 */
import { compareUtf8, SvcError } from "../../lib/mod.ts";
import type { Backend, BucketRouter, S3Client, ScratchSealer } from "../../storage/mod.ts";
import { BackendUploads } from "./backend-uploads.ts";
import type { CompletedUpload, CompletedUploads } from "./completed-uploads.ts";
import { InternalKeysGuard } from "./internal-keys-guard.ts";
import { LocalUploads } from "./local-uploads.ts";
import type {
  MultipartStore,
  NewUpload,
  PartInfo,
  SweepResult,
  UploadRecord,
} from "./multipart-store.ts";
import type { PutPartOptions } from "./part-receive.ts";
import type { CompletionClaim, UploadStore } from "./upload-store.ts";

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
  /** A raw client per S3 backend, by backend name. */
  clients: ReadonlyMap<string, S3Client>,
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
      const client = clients.get(route.name);
      if (client === undefined) {
        throw new SvcError("InternalError", `Backend "${route.name}" of "${bucket}" is not S3`);
      }
      return { client, real: route.real, bucket };
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
