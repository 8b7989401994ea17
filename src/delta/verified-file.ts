/**
 * Streaming a byte range of a cached file whose chunk digests are known (cache-entry.ts): every
 * chunk the range touches is read whole, hashed and compared before any of its bytes is enqueued,
 * so a damaged cache file never sends a wrong byte. One chunk is held at a time: memory does not
 * grow with the object.
 *
 * The first chunk is checked before the stream is handed out, so damage there is reported while
 * nothing has been sent and the caller can rebuild instead; damage further on errors the stream
 * (the response is cut short, never completed with wrong bytes).
 */

import { Buffer } from "node:buffer";
import { createHash } from "node:crypto";
import { CHUNK_BYTES } from "./cache-entry.ts";

export interface VerifiedRangeOptions {
  /** Open on the cached file; closed by this function in every case. */
  file: Deno.FsFile;
  chunks: readonly Uint8Array[];
  size: number;
  /** Inclusive byte range to send. */
  start: number;
  end: number;
  /** Called once for a chunk that does not match (evict, count); its error ends the stream. */
  damaged(chunk: number): Error;
}

/** The verified range as a stream, or null when its first chunk is damaged (nothing was read out). */
export async function openVerifiedRange(
  options: VerifiedRangeOptions,
): Promise<ReadableStream<Uint8Array> | null> {
  const { file, chunks, size, start, end } = options;
  let closed = false;
  const close = () => {
    if (closed) return;
    closed = true;
    file.close();
  };
  const readChunk = async (index: number): Promise<Uint8Array | Error> => {
    const from = index * CHUNK_BYTES;
    const bytes = new Uint8Array(Math.min(CHUNK_BYTES, size - from));
    await file.seek(from, Deno.SeekMode.Start);
    let filled = 0;
    while (filled < bytes.length) {
      const n = await file.read(bytes.subarray(filled));
      if (n === null) break;
      filled += n;
    }
    const digest = createHash("sha256").update(bytes.subarray(0, filled)).digest();
    const expected = chunks[index];
    if (
      filled !== bytes.length || expected === undefined || !Buffer.from(expected).equals(digest)
    ) {
      return options.damaged(index);
    }
    // Only the part of the chunk inside the range leaves.
    return bytes.subarray(Math.max(0, start - from), Math.min(bytes.length, end + 1 - from));
  };

  const last = Math.floor(end / CHUNK_BYTES);
  let next = Math.floor(start / CHUNK_BYTES);
  let first: Uint8Array | Error;
  try {
    first = size === 0 ? new Uint8Array(0) : await readChunk(next);
  } catch (err) {
    close();
    throw err;
  }
  if (first instanceof Error) {
    close();
    return null;
  }
  next++;
  let pending: Uint8Array | undefined = first;
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      try {
        if (pending !== undefined) {
          const bytes = pending;
          pending = undefined;
          if (bytes.byteLength > 0) controller.enqueue(bytes);
        } else {
          const bytes = await readChunk(next++);
          if (bytes instanceof Error) throw bytes;
          controller.enqueue(bytes);
        }
        if (next > last || size === 0) {
          close();
          controller.close();
        }
      } catch (err) {
        close();
        controller.error(err);
      }
    },
    cancel() {
      close();
    },
  }); // the default queue of one chunk: the next chunk is read and hashed while this one is sent
}
