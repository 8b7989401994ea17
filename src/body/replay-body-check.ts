/**
 * The pre-commit check of a repeated PutObject/UploadPart whose body the signature does not pin
 * (UNSIGNED-PAYLOAD, unsigned trailer), built from what the replay guard decided
 * (auth/replay-decision.ts). The repeat's body is staged like any upload, hashed as it streams,
 * and compared with the first answer's ETag when it ends; either way the stream then errors, so
 * the staged bytes are discarded and nothing is committed. The verdict goes back on the
 * comparison, where the replay guard reads it.
 *
 * Why MD5 and not SHA-256: the ETag is what the first execution already computed and answered,
 * so the first execution of every unsigned upload costs nothing extra. To be answered, a
 * different body would need the MD5 of a body the replayer did not choose (a second preimage,
 * unknown for MD5); a client that wants SHA-256 strength signs its payload.
 *
 * The S3 operation builds the check and hands it to the object or multipart service as an
 * option of the upload; the service stages the body through it and skips the write
 * precondition (the first execution already satisfied it).
 */
import { createHash } from "node:crypto";
import { SvcError } from "../lib/mod.ts";
import type { ReplayBodyComparison } from "../auth/mod.ts";

export class ReplayBodyCheck {
  readonly #comparison: ReplayBodyComparison;

  constructor(comparison: ReplayBodyComparison) {
    this.#comparison = comparison;
  }

  /** The body as it must be staged: hashed as it streams, judged and failed when it ends. */
  stage(body: ReadableStream<Uint8Array>): ReadableStream<Uint8Array> {
    const md5 = createHash("md5");
    const comparison = this.#comparison;
    return body.pipeThrough(
      new TransformStream({
        transform: (chunk, controller) => {
          md5.update(chunk);
          controller.enqueue(chunk);
        },
        flush: () => {
          comparison.verdict = md5.digest("hex") === comparison.expectedMd5 ? "same" : "different";
          // Never let the staged copy commit: the first execution already did its work.
          throw new SvcError("InvalidRequest", "Request replay detected");
        },
      }),
    );
  }
}

/** The check of an upload the replay guard ordered compared, or undefined for a plain upload. */
export function replayBodyCheck(
  comparison: ReplayBodyComparison | undefined,
): ReplayBodyCheck | undefined {
  return comparison === undefined ? undefined : new ReplayBodyCheck(comparison);
}
