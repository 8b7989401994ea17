/**
 * One stored object copied as stored: below the delta store, so baselines (`reference.bin`),
 * deltas (`*.delta`) and passthrough objects move byte for byte with their metadata record, and
 * nothing is re-encoded. Used by migrate (another backend) and re-encrypt (the same backend and
 * key: the backend's write path applies its current encryption).
 *
 * The bytes stream through a SHA-256 (memory does not grow with the object); the staged size
 * must equal the bytes read, and the written copy is read back and must hash the same before the
 * copy counts as done. A failed check aborts the staged write (nothing visible changes) or, once
 * committed, throws so the caller records the object as failed.
 */
import { createHash } from "node:crypto";
import type { Backend } from "../../storage/mod.ts";

export interface StoredPlace {
  backend: Backend;
  /** The bucket name on that backend. */
  bucket: string;
}

export interface CopyResult {
  /** Bytes copied (as the backend hands them out). */
  bytes: number;
  sha256: string;
}

/** A stream that passes `body` through while hashing and counting it. */
function hashing(body: ReadableStream<Uint8Array>) {
  const hash = createHash("sha256");
  const tally = { bytes: 0, digest: () => hash.digest("hex") };
  const stream = body.pipeThrough(
    new TransformStream<Uint8Array, Uint8Array>({
      transform(chunk, controller) {
        hash.update(chunk);
        tally.bytes += chunk.length;
        controller.enqueue(chunk);
      },
    }),
  );
  return { stream, tally };
}

/** SHA-256 and length of what `place` holds under `key`; null when it is absent. */
export async function storedDigest(
  place: StoredPlace,
  key: string,
  signal?: AbortSignal,
): Promise<CopyResult | null> {
  const object = await place.backend.getObject(place.bucket, key);
  if (object === null) return null;
  const { stream, tally } = hashing(object.body);
  const reader = stream.getReader();
  try {
    while (true) {
      signal?.throwIfAborted();
      const { done } = await reader.read();
      if (done) break;
    }
  } catch (err) {
    await reader.cancel().catch(() => {});
    throw err;
  }
  return { bytes: tally.bytes, sha256: tally.digest() };
}

/**
 * Copies `key` from `from` to `to` with its metadata record and verifies it. null when the
 * source object is gone (nothing to copy). Throws with a reason on any mismatch.
 */
export async function copyStoredObject(
  from: StoredPlace,
  to: StoredPlace,
  key: string,
  signal?: AbortSignal,
): Promise<CopyResult | null> {
  signal?.throwIfAborted();
  const source = await from.backend.getObject(from.bucket, key);
  if (source === null) return null;
  const { stream, tally } = hashing(source.body);
  const staged = await to.backend.stageObject(to.bucket, key, stream, signal);
  try {
    if (staged.size !== tally.bytes) {
      throw new Error(`Wrote ${staged.size} bytes of ${tally.bytes} read`);
    }
    signal?.throwIfAborted();
    await staged.commit(source.info.meta);
  } catch (err) {
    await staged.abort().catch(() => {});
    throw err;
  }
  const written = { bytes: tally.bytes, sha256: tally.digest() };
  const check = await storedDigest(to, key);
  if (check === null) throw new Error("The copy is missing after commit");
  if (check.bytes !== written.bytes || check.sha256 !== written.sha256) {
    throw new Error(
      `The copy does not verify: ${check.bytes} bytes, sha256 ${check.sha256}; ` +
        `expected ${written.bytes} bytes, sha256 ${written.sha256}`,
    );
  }
  const head = await to.backend.headObject(to.bucket, key);
  const meta = source.info.meta;
  if (
    head === null || head.meta.etag !== meta.etag || head.meta.size !== meta.size ||
    head.meta.sha256 !== meta.sha256 || head.meta.storage !== meta.storage
  ) {
    throw new Error("The copy's metadata record differs from the source's");
  }
  return written;
}
