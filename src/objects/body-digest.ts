/**
 * A pass-through stream that hashes and counts an object body on its way to the backend, so the
 * ETag (md5) and the sha256 are known the moment the last byte is written, without a second read.
 */
import { createHash, type Hash } from "node:crypto";
import { SvcError } from "../errors.ts";

export class BodyDigest {
  readonly #md5: Hash = createHash("md5");
  readonly #sha256: Hash = createHash("sha256");
  #bytes = 0;
  #done: { md5: string; sha256: string } | undefined;
  readonly transform: TransformStream<Uint8Array, Uint8Array>;

  /** @param maxBytes the body errors with EntityTooLarge once it passes this many bytes. */
  constructor(maxBytes: number) {
    this.transform = new TransformStream({
      transform: (chunk, controller) => {
        this.#bytes += chunk.byteLength;
        if (this.#bytes > maxBytes) {
          controller.error(tooLarge(maxBytes));
          return;
        }
        this.#md5.update(chunk);
        this.#sha256.update(chunk);
        controller.enqueue(chunk);
      },
    });
  }

  get bytes(): number {
    return this.#bytes;
  }

  /** Hex digests; call once the body is fully consumed. */
  result(): { md5: string; sha256: string } {
    this.#done ??= { md5: this.#md5.digest("hex"), sha256: this.#sha256.digest("hex") };
    return this.#done;
  }
}

export function tooLarge(maxBytes: number): SvcError {
  return maxBytes === 0
    ? new SvcError("EntityTooLarge", "Uploads are disabled on this server (max_object_size is 0)")
    : new SvcError(
      "EntityTooLarge",
      `Your proposed upload exceeds the maximum allowed object size of ${maxBytes} bytes`,
      { MaxSizeAllowed: String(maxBytes) },
    );
}
