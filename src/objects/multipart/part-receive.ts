/**
 * One part's bytes on their way into its staging file, hashed as they arrive and judged against
 * the client's limits and digests before the multipart store lets the part appear
 * (multipart-store.ts renames the file into place only once the stream ended and passed).
 */
import { createHash } from "node:crypto";
import { SvcError } from "../../lib/mod.ts";

export interface PutPartOptions {
  signal?: AbortSignal;
  /** EntityTooLarge once the body passes this many bytes. */
  maxBytes?: number;
  /** md5 hex from Content-MD5; BadDigest on mismatch. */
  expectedMd5?: string | null;
  /** sha256 hex from x-amz-content-sha256; XAmzContentSHA256Mismatch on mismatch. */
  expectedSha256?: string;
}

export interface ReceivedPart {
  /** md5 hex of the plaintext: the part's ETag. */
  etag: string;
  /** Plaintext bytes. */
  size: number;
}

/**
 * The body as a stream that hashes its bytes and judges them as they pass. A failed judgement
 * (EntityTooLarge, BadDigest, XAmzContentSHA256Mismatch, the signal's reason) errors the stream
 * instead of ending it, so whatever consumes it (the part file, or the cipher sealing the part on
 * its way there) fails too and the part never appears. Hashing happens before a chunk is passed
 * on, so a consumer may recycle the chunk's buffer once it took the bytes. `received()` is the
 * part's md5 and size, once the stream ended.
 */
export function checkedPart(
  reader: ReadableStreamDefaultReader<Uint8Array>,
  options: PutPartOptions,
): { body: ReadableStream<Uint8Array>; received(): ReceivedPart } {
  const { signal, maxBytes, expectedSha256 } = options;
  const hash = createHash("md5");
  const sha256 = expectedSha256 ? createHash("sha256") : undefined;
  let size = 0;
  let result: ReceivedPart | undefined;
  const body = new ReadableStream<Uint8Array>({
    async pull(controller) {
      const { done, value } = await reader.read();
      signal?.throwIfAborted();
      if (done) {
        result = judged(hash.digest("hex"), sha256?.digest("hex"), size, options);
        return controller.close();
      }
      size += value.byteLength;
      if (maxBytes !== undefined && size > maxBytes) {
        throw new SvcError(
          "EntityTooLarge",
          `Your proposed upload exceeds the maximum allowed size of ${maxBytes} bytes.`,
          { MaxSizeAllowed: String(maxBytes) },
        );
      }
      hash.update(value);
      sha256?.update(value);
      controller.enqueue(value);
    },
    cancel(reason) {
      return reader.cancel(reason);
    },
  }, { highWaterMark: 0 });
  return {
    body,
    received() {
      if (result === undefined) throw new Error("the part's body has not ended");
      return result;
    },
  };
}

/** The received part, or the error its digests call for. */
function judged(
  etag: string,
  computedSha256: string | undefined,
  size: number,
  { expectedMd5, expectedSha256 }: PutPartOptions,
): ReceivedPart {
  if (expectedMd5 && expectedMd5.toLowerCase() !== etag) {
    throw new SvcError(
      "BadDigest",
      `The Content-MD5 you specified did not match what we received: expected ` +
        `"${expectedMd5}", got "${etag}".`,
      { ExpectedDigest: expectedMd5, CalculatedDigest: etag },
    );
  }
  if (computedSha256 !== undefined && computedSha256 !== expectedSha256) {
    throw new SvcError(
      "XAmzContentSHA256Mismatch",
      "The provided 'x-amz-content-sha256' header does not match what was computed",
      { ClientComputedContentSHA256: expectedSha256!, S3ComputedContentSHA256: computedSha256 },
    );
  }
  return { etag, size };
}
