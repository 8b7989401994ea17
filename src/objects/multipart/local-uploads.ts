/**
 * The local upload store: multipart state in svc's state directory (multipart-store.ts) and
 * completed-upload records beside it (completed-uploads.ts), for buckets on a filesystem backend.
 * One instance owns it (the data-directory lock), so completion needs no fleet-wide claim: the
 * multipart service's in-process lock keeps two Completes of one upload apart.
 */
import type { ScratchSealer } from "../../storage/mod.ts";
import type { CompletedUpload, CompletedUploads } from "./completed-uploads.ts";
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
