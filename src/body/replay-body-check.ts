/**
 * The pre-commit check of a repeated PutObject/UploadPart whose body the signature does not pin
 * (UNSIGNED-PAYLOAD, unsigned trailer). The repeat's body is staged like any upload, hashed as it
 * streams, and compared with the first answer's ETag when it ends; either way the stream then
 * errors, so the staged bytes are discarded and nothing is committed. The replay guard reads the
 * verdict, whatever error the storage layers made of the abort.
 *
 * Why MD5 and not SHA-256: the ETag is what the first execution already computed and answered,
 * so the first execution of every unsigned upload costs nothing extra. To be answered, a
 * different body would need the MD5 of a body the replayer did not choose (a second preimage,
 * unknown for MD5); a client that wants SHA-256 strength signs its payload.
 *
 * The object and multipart services find the check by the request's AbortSignal, so the S3
 * operations in between need not know about replays.
 */
import { createHash } from "node:crypto";
import { SvcError } from "../lib/errors.ts";

export type BodyVerdict = "pending" | "same" | "different";

export class ReplayBodyCheck {
  verdict: BodyVerdict = "pending";
  readonly #expectedMd5: string;

  constructor(expectedMd5: string) {
    this.#expectedMd5 = expectedMd5;
  }

  transform(): TransformStream<Uint8Array, Uint8Array> {
    const md5 = createHash("md5");
    return new TransformStream({
      transform: (chunk, controller) => {
        md5.update(chunk);
        controller.enqueue(chunk);
      },
      flush: () => {
        this.verdict = md5.digest("hex") === this.#expectedMd5 ? "same" : "different";
        // Never let the staged copy commit: the first execution already did its work.
        throw new SvcError("InvalidRequest", "Request replay detected");
      },
    });
  }
}

const checks = new WeakMap<AbortSignal, ReplayBodyCheck>();

export function registerBodyCheck(signal: AbortSignal, check: ReplayBodyCheck): void {
  checks.set(signal, check);
}

export function hasBodyCheck(signal: AbortSignal | undefined): boolean {
  return signal !== undefined && checks.has(signal);
}

/** The body as it must be staged: through the replay check when the request carries one. */
export function replayCheckedBody(
  body: ReadableStream<Uint8Array>,
  signal: AbortSignal | undefined,
): ReadableStream<Uint8Array> {
  const check = signal === undefined ? undefined : checks.get(signal);
  return check === undefined ? body : body.pipeThrough(check.transform());
}
