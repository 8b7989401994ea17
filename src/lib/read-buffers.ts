/**
 * Recycled 1 MiB buffers for reading large request bodies. A fresh megabyte per socket read costs
 * the kernel 256 page faults and V8 a garbage-collected backing store: on a 512 MiB PUT that was
 * ~0.3 s of the main thread's system time, more than the baseline server's whole PUT.
 *
 * Ownership is explicit, because a recycled buffer is overwritten by the next read:
 * - the request body reader lends a chunk when it read into a pooled buffer (`lendChunk`);
 * - the chunk then passes stream stages that only look at it (hashes, checksums, counters); a
 *   stage that keeps a chunk after passing it on must keep a copy of a lent one (`isLent`);
 * - the one consumer that has copied the bytes elsewhere (the file writer, once the write
 *   returned) gives the buffer back (`recycleChunk`). A consumer that keeps chunks (a spool read
 *   by a subprocess, an HTTP upload to another server) simply never recycles: the buffer is then
 *   garbage like any other and the pool allocates a new one.
 *
 * A chunk is recycled at most once (the lent mark is dropped on recycling) and only as the very
 * view that was lent, so a stage that split a chunk cannot have its other part overwritten.
 */

/** Size of a pooled buffer: the upload path's largest socket read. */
export const READ_BUFFER_BYTES = 1 << 20;

/** Buffers kept for reuse: enough for the uploads in flight on a small server (~16 MiB). */
const POOL_LIMIT = 16;

const free: ArrayBuffer[] = [];
/** Buffers of chunks handed out and not yet given back, with the length of the lent view. */
const lent = new WeakMap<ArrayBufferLike, number>();

/** A buffer of READ_BUFFER_BYTES to read into, recycled when one is free. */
export function takeReadBuffer(): Uint8Array<ArrayBuffer> {
  const buffer = free.pop();
  return new Uint8Array(buffer ?? new ArrayBuffer(READ_BUFFER_BYTES));
}

/** Marks `chunk` (just read into a buffer of takeReadBuffer) as recyclable by its consumer. */
export function lendChunk(chunk: Uint8Array): void {
  if (chunk.buffer.byteLength === READ_BUFFER_BYTES && chunk.byteOffset === 0) {
    lent.set(chunk.buffer, chunk.byteLength);
  }
}

/** True when `chunk`'s bytes will be overwritten once its consumer recycles it. */
export function isLent(chunk: Uint8Array): boolean {
  return lent.has(chunk.buffer);
}

/** Gives `chunk`'s buffer back for the next read; only for lent chunks, once, by the consumer. */
export function recycleChunk(chunk: Uint8Array): void {
  const buffer = chunk.buffer;
  if (chunk.byteOffset !== 0 || lent.get(buffer) !== chunk.byteLength) return;
  lent.delete(buffer);
  if (free.length < POOL_LIMIT && buffer instanceof ArrayBuffer && !buffer.detached) {
    free.push(buffer);
  }
}

/** Buffers free for reuse now (tests). */
export function freeReadBuffers(): number {
  return free.length;
}
