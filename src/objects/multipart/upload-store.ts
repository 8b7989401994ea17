/**
 * Where a multipart upload's state lives: what the multipart service asks of it. Two kinds:
 *
 * - local (routed-uploads.ts `LocalUploads` over multipart-store.ts): svc's state directory, for buckets on a
 *   filesystem backend (one instance owns a data directory);
 * - backend-resident (backend-uploads.ts): the bucket's own S3 backend, under `.svc/multipart/`,
 *   so every svc instance over that backend sees every upload (uploads-anywhere in a fleet).
 *
 * routed-uploads.ts picks one per bucket. Every call names the bucket: a backend-resident upload
 * is found in its bucket, and a local one is checked against it.
 */
import type { ScratchSealer } from "../../storage/mod.ts";
import type { CompletedUpload } from "./completed-uploads.ts";
import type { NewUpload, PartInfo, SweepResult, UploadRecord } from "./multipart-store.ts";
import type { PutPartOptions } from "./part-receive.ts";
import { SvcError } from "../../lib/mod.ts";
import { noSuchUpload } from "./multipart-completion.ts";

/** The right to complete (or sweep) an upload, held by one caller in the whole fleet. */
export interface CompletionClaim {
  /** Gives the claim up (the completion failed): another Complete may try. */
  release(): Promise<void>;
}

export interface UploadStore {
  create(input: NewUpload): Promise<UploadRecord>;
  /** The upload's record; null when there is no such upload in this bucket. */
  get(bucket: string, uploadId: string): Promise<UploadRecord | null>;
  /** Stores one part (replacing an earlier one). Throws NoSuchUpload, EntityTooLarge, BadDigest … */
  putPart(
    bucket: string,
    uploadId: string,
    partNumber: number,
    body: ReadableStream<Uint8Array>,
    options: PutPartOptions & { sealer?: ScratchSealer | null },
  ): Promise<PartInfo>;
  /** Parts stored so far, by part number. Throws NoSuchUpload. */
  listParts(bucket: string, uploadId: string): Promise<PartInfo[]>;
  /** The plaintext of this stored part (as listParts gave it); null when it is gone. */
  openPart(
    bucket: string,
    uploadId: string,
    part: PartInfo,
    sealer?: ScratchSealer | null,
  ): Promise<ReadableStream<Uint8Array> | null>;
  /** Removes an upload and its parts; false when there was none. Idempotent. */
  remove(bucket: string, uploadId: string): Promise<boolean>;
  /** The bucket's uploads in progress. */
  list(bucket: string): Promise<UploadRecord[]>;
  /** Uploads that count against max_multipart_uploads for a new one in `bucket`. */
  count(bucket: string): Promise<number>;
  /** Removes uploads idle for longer than `olderThanMs`. */
  sweep(olderThanMs: number, now: number): Promise<SweepResult>;

  /** The record of a completed upload of `bucket`; null when there is none. */
  completed(bucket: string, uploadId: string): Promise<CompletedUpload | null>;
  /** Keeps the record; returns the one that stands (an earlier one wins over `done`). */
  recordCompleted(done: CompletedUpload): Promise<CompletedUpload>;
  /** Removes completed-upload records older than `olderThanMs`, or of `bucket`. */
  pruneCompleted(options: { olderThanMs?: number; bucket?: string; now?: number }): Promise<void>;
  /**
   * Claims the completion of an upload, fleet-wide; null while another caller holds it (a
   * Complete on another instance, or a sweep).
   */
  claim(bucket: string, uploadId: string): Promise<CompletionClaim | null>;
}

// Who completes an upload when Completes of it arrive on several instances at once: the one
// that claims it (`claim` above; always the caller for a local upload). Another waits for the
// claimant's completed-upload record and answers from it, so a fleet writes one object per
// upload, never two, and never deletes parts under a completion that is still reading them.

/** How long a Complete waits for another instance's completion before answering SlowDown. */
export const CLAIM_WAIT_MS = 60_000;
const POLL_MS = 250;

export type ClaimOutcome = { claim: CompletionClaim; done?: never } | {
  done: CompletedUpload;
  claim?: never;
};

/**
 * The claim, or the record of the completion another caller finished meanwhile. Throws
 * NoSuchUpload when the upload disappeared without one (aborted), SlowDown after `waitMs`.
 */
export async function claimCompletion(
  store: Pick<UploadStore, "claim" | "completed" | "get">,
  bucket: string,
  uploadId: string,
  signal?: AbortSignal,
  waitMs = CLAIM_WAIT_MS,
): Promise<ClaimOutcome> {
  const deadline = Date.now() + waitMs;
  for (;;) {
    const claim = await store.claim(bucket, uploadId);
    const done = await store.completed(bucket, uploadId);
    if (claim !== null && done === null) return { claim };
    // Claimed just after another Complete finished (and removed its claim): answer as it did.
    await claim?.release();
    if (done !== null) return { done };
    if (await store.get(bucket, uploadId) === null) {
      // The claimant records the completion before it removes the upload: look once more.
      const late = await store.completed(bucket, uploadId);
      if (late !== null) return { done: late };
      throw noSuchUpload(uploadId);
    }
    if (Date.now() >= deadline) {
      throw new SvcError(
        "SlowDown",
        `Upload "${uploadId}" is being completed by another request; retry to get its answer`,
      );
    }
    signal?.throwIfAborted();
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
  }
}
