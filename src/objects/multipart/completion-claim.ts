/**
 * Who completes an upload when Completes of it arrive on several instances at once: the one that
 * claims it (upload-store.ts `claim`; always the caller for a local upload). Another waits for
 * the claimant's completed-upload record and answers from it, so a fleet writes one object per
 * upload, never two, and never deletes parts under a completion that is still reading them.
 */
import { SvcError } from "../../lib/mod.ts";
import type { CompletedUpload } from "./completed-uploads.ts";
import { noSuchUpload } from "./multipart-completion.ts";
import type { CompletionClaim, UploadStore } from "./upload-store.ts";

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
