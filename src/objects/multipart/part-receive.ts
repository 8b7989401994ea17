/**
 * One part's bytes received into its staging file, hashed as they arrive and judged against the
 * client's limits and digests before the multipart store lets the part appear (multipart-store.ts
 * renames the file into place only once this returns).
 */
import { createHash } from "node:crypto";
import { SvcError, writeAll } from "../../lib/mod.ts";

export interface PutPartOptions {
  signal?: AbortSignal;
  /** EntityTooLarge once the body passes this many bytes. */
  maxBytes?: number;
  /** md5 hex from Content-MD5; BadDigest on mismatch. */
  expectedMd5?: string | null;
  /** sha256 hex from x-amz-content-sha256; XAmzContentSHA256Mismatch on mismatch. */
  expectedSha256?: string;
}

/**
 * Copies the body into `file` and returns the part's md5 (its ETag) and size. Throws
 * EntityTooLarge, BadDigest, XAmzContentSHA256Mismatch or the signal's reason; the caller removes
 * the file then.
 */
export async function receivePart(
  reader: ReadableStreamDefaultReader<Uint8Array>,
  file: Deno.FsFile,
  options: PutPartOptions,
): Promise<{ etag: string; size: number }> {
  const { signal, maxBytes, expectedMd5, expectedSha256 } = options;
  const hash = createHash("md5");
  const sha256 = expectedSha256 ? createHash("sha256") : undefined;
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    signal?.throwIfAborted();
    if (done) break;
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
    await writeAll(file, value);
  }
  const etag = hash.digest("hex");
  if (expectedMd5 && expectedMd5.toLowerCase() !== etag) {
    throw new SvcError(
      "BadDigest",
      `The Content-MD5 you specified did not match what we received: expected ` +
        `"${expectedMd5}", got "${etag}".`,
      { ExpectedDigest: expectedMd5, CalculatedDigest: etag },
    );
  }
  const computed = sha256?.digest("hex");
  if (computed !== undefined && computed !== expectedSha256) {
    throw new SvcError(
      "XAmzContentSHA256Mismatch",
      "The provided 'x-amz-content-sha256' header does not match what was computed",
      { ClientComputedContentSHA256: expectedSha256!, S3ComputedContentSHA256: computed },
    );
  }
  return { etag, size };
}
