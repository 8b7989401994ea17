/**
 * Streaming a byte range of a cached file whose chunk digests are known (cache-entry.ts): every
 * chunk the range touches is read whole, hashed and compared before any of its bytes is enqueued,
 * so a damaged cache file never sends a wrong byte. The next READ_AHEAD_CHUNKS are read and hashed
 * while one is sent (hashing runs off the JS thread); memory does not grow with the object.
 *
 * The first chunk is checked before the stream is handed out, so damage there is reported while
 * nothing has been sent and the caller can rebuild instead; damage further on goes on from what
 * `resume` gives for the rest (a rebuilt object), else errors the stream (the response is cut
 * short, never completed with wrong bytes).
 */

import {
  chunkAt,
  type ChunkCheck,
  chunkLength,
  chunkStart,
  PROCESS_CHUNK_CHECK,
  readFull,
} from "./cache-entry.ts";

/** Chunks read and hashed ahead of the one being sent: hashing overlaps sending (memory: 3 MiB). */
const READ_AHEAD_CHUNKS = 2;

export interface VerifiedRangeOptions {
  /** Open on the cached file, at its start; closed by this function in every case. */
  file: Deno.FsFile;
  chunks: readonly Uint8Array[];
  size: number;
  /** Inclusive byte range to send. */
  start: number;
  end: number;
  /** Called once for a chunk that does not match (evict, count); its error ends the stream. */
  damaged(chunk: number): Error;
  /**
   * For damage found after bytes were sent: the rest of the range from `offset` on, from bytes
   * known good (a rebuilt object), or null. The response then goes on instead of ending short.
   */
  resume?(offset: number): Promise<ReadableStream<Uint8Array> | null>;
  /** How chunks were sealed (the process's check by default). */
  check?: ChunkCheck;
}

/** The verified range as a stream, or null when its first chunk is damaged (nothing was read out). */
export async function openVerifiedRange(
  options: VerifiedRangeOptions,
): Promise<ReadableStream<Uint8Array> | null> {
  const { file, chunks, size, start, end } = options;
  const check = options.check ?? PROCESS_CHUNK_CHECK;
  let closed = false;
  let reads: Promise<unknown> = Promise.resolve();
  /** Where the file's position is (a fresh open is at 0): chunks read in order need no seek. */
  let position = 0;
  const close = () => {
    if (closed) return;
    closed = true;
    // After the reads already started: closing under one would fail it for nothing.
    reads.then(() => file.close()).catch(() => {});
  };
  /** The chunk's bytes inside the range, or its index when it does not match its digest. */
  const load = (index: number): Promise<Uint8Array | number> => {
    const from = chunkStart(index);
    const bytes = new Uint8Array(Math.min(chunkLength(index), size - from));
    // Reads go one after another (they share the file position); digests may overlap them.
    const read = reads.then(async () => {
      if (position !== from) await file.seek(from, Deno.SeekMode.Start);
      position = -1; // unknown until the read below ends
      const filled = await readFull(file, bytes);
      position = from + filled;
      return filled;
    });
    reads = read.catch(() => {});
    return read.then(async (filled) => {
      const expected = chunks[index];
      if (filled !== bytes.length || expected === undefined) return index;
      if (!await check.matches(bytes, expected)) return index;
      // Only the part of the chunk inside the range leaves.
      return bytes.subarray(Math.max(0, start - from), Math.min(bytes.length, end + 1 - from));
    });
  };

  const last = size === 0 ? -1 : chunkAt(end);
  let scheduled = chunkAt(start);
  const ahead: Promise<Uint8Array | number>[] = [];
  const fill = () => {
    while (!closed && ahead.length < READ_AHEAD_CHUNKS && scheduled <= last) {
      const loading = load(scheduled++);
      loading.catch(() => {}); // awaited in order below; a cancel may leave it unawaited
      ahead.push(loading);
    }
  };
  /** The next chunk to send (undefined at the end), or the index of a damaged one. */
  const take = async (): Promise<Uint8Array | number | undefined> => {
    fill();
    const loading = ahead.shift();
    if (loading === undefined) return undefined;
    const bytes = await loading;
    if (typeof bytes !== "number") fill();
    return bytes;
  };

  let first: Uint8Array | number | undefined;
  try {
    first = await take();
  } catch (err) {
    close();
    throw err;
  }
  if (typeof first === "number") {
    options.damaged(first);
    close();
    return null;
  }
  let pending = first;
  /** Where the next byte to send is. */
  let offset = start;
  /** The rest of the range from elsewhere, once this file was found damaged (`resume`). */
  let rest: ReadableStreamDefaultReader<Uint8Array> | undefined;
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      try {
        if (rest === undefined) {
          const bytes = pending ?? await take();
          pending = undefined;
          if (typeof bytes !== "number") {
            if (bytes === undefined) {
              close();
              controller.close();
              return;
            }
            offset += bytes.byteLength;
            if (bytes.byteLength > 0) controller.enqueue(bytes);
            return;
          }
          const error = options.damaged(bytes);
          close();
          const resumed = await options.resume?.(offset);
          if (!resumed) throw error;
          rest = resumed.getReader();
        }
        const { done, value } = await rest.read();
        if (done) controller.close();
        else controller.enqueue(value);
      } catch (err) {
        close();
        rest?.cancel().catch(() => {});
        controller.error(err);
      }
    },
    cancel() {
      close();
      rest?.cancel().catch(() => {});
    },
  }, { highWaterMark: 0 }); // the read-ahead above is the buffer
}
