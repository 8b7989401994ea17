/**
 * The write side: a body read as fixed-size frames, each compressed on its own (several in
 * flight, so frames compress on zlib's thread pool while the next one fills), then the frame index.
 * `progress` tells the staged object how many logical bytes went in and where the index starts.
 */
import { compressFrame } from "./zstd-codec.ts";
import { encodeIndex } from "./zstd-format.ts";

/**
 * Frames compressing at once: enough to keep the pool busy, bounded memory (1 MiB of 256 KiB
 * frames; large frames, baselines', two at a time: 32 MiB of 16 MiB ones).
 */
const IN_FLIGHT = 4;
const IN_FLIGHT_LARGE = 2;
/** Frames from this size count as large. */
const LARGE_FRAME = 4 << 20;

export interface CompressProgress {
  /** Logical bytes read from the body. */
  plainBytes: number;
  /** Stored bytes of frame data, i.e. the index offset once the stream has ended. */
  storedBytes: number;
  /** Set when the whole body went through and the index was written. */
  done: boolean;
}

/**
 * `prefix` (bytes already read to sample the body) then the rest of `reader`, as compressed
 * frames of `frameSize` bytes followed by their index.
 */
export function compressStream(
  prefix: Uint8Array[],
  reader: ReadableStreamDefaultReader<Uint8Array>,
  options: { frameSize: number; level: number; long?: boolean },
  progress: CompressProgress,
): ReadableStream<Uint8Array> {
  const inFlight = options.frameSize >= LARGE_FRAME ? IN_FLIGHT_LARGE : IN_FLIGHT;
  const pending: Promise<Uint8Array>[] = [];
  const ends: number[] = [];
  const queued = [...prefix];
  let sourceDone = false;

  /** The next frame's bytes; shorter than a frame only at the end of the body. */
  async function nextFrame(): Promise<Uint8Array | null> {
    const frame = new Uint8Array(options.frameSize);
    let filled = 0;
    while (filled < frame.length) {
      let chunk = queued.shift();
      if (chunk === undefined) {
        if (sourceDone) break;
        const read = await reader.read();
        if (read.done) {
          sourceDone = true;
          break;
        }
        chunk = read.value;
      }
      const take = Math.min(chunk.length, frame.length - filled);
      frame.set(chunk.subarray(0, take), filled);
      filled += take;
      if (take < chunk.length) queued.unshift(chunk.subarray(take));
    }
    progress.plainBytes += filled;
    return filled === 0 ? null : frame.subarray(0, filled);
  }

  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      while (pending.length < inFlight && !sourceDone) {
        const frame = await nextFrame();
        if (frame === null) break;
        pending.push(compressFrame(frame, options.level, options.long));
      }
      const next = pending.shift();
      if (next === undefined) {
        controller.enqueue(encodeIndex(ends));
        progress.done = true;
        controller.close();
        return;
      }
      const stored = await next;
      progress.storedBytes += stored.length;
      ends.push(progress.storedBytes);
      controller.enqueue(stored);
    },
    async cancel(reason) {
      await Promise.allSettled(pending);
      await reader.cancel(reason).catch(() => {});
    },
  }, { highWaterMark: 0 });
}

/** `prefix` then the rest of `reader`, unchanged: a body that is stored raw after sampling. */
export function rawStream(
  prefix: Uint8Array[],
  reader: ReadableStreamDefaultReader<Uint8Array>,
  progress: { plainBytes: number },
): ReadableStream<Uint8Array> {
  const queued = [...prefix];
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      const chunk = queued.shift() ?? (await reader.read()).value;
      if (chunk === undefined) return controller.close();
      progress.plainBytes += chunk.length;
      controller.enqueue(chunk);
    },
    cancel: (reason) => reader.cancel(reason),
  }, { highWaterMark: 0 });
}

/** Up to `limit` bytes of `reader` as the chunks read; `ended` when the body ended first. */
export async function readSample(
  reader: ReadableStreamDefaultReader<Uint8Array>,
  limit: number,
): Promise<{ chunks: Uint8Array[]; bytes: number; ended: boolean }> {
  const chunks: Uint8Array[] = [];
  let bytes = 0;
  while (bytes < limit) {
    const read = await reader.read();
    if (read.done) return { chunks, bytes, ended: true };
    chunks.push(read.value);
    bytes += read.value.length;
  }
  return { chunks, bytes, ended: false };
}

/** The first `limit` bytes of `chunks` in one array. */
export function joinPrefix(chunks: Uint8Array[], limit: number): Uint8Array {
  const total = Math.min(limit, chunks.reduce((sum, chunk) => sum + chunk.length, 0));
  const out = new Uint8Array(total);
  let at = 0;
  for (const chunk of chunks) {
    if (at >= total) break;
    const take = Math.min(chunk.length, total - at);
    out.set(chunk.subarray(0, take), at);
    at += take;
  }
  return out;
}

/**
 * A stream that builds its real source (`open`, which reads the body's start) on its first pull,
 * then passes that source's chunks on.
 */
export function decidingStream(
  body: ReadableStreamDefaultReader<Uint8Array>,
  open: () => Promise<ReadableStream<Uint8Array>>,
): ReadableStream<Uint8Array> {
  let source: ReadableStreamDefaultReader<Uint8Array> | undefined;
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      source ??= (await open()).getReader();
      const read = await source.read();
      if (read.done) controller.close();
      else controller.enqueue(read.value);
    },
    cancel: (reason) => (source ?? body).cancel(reason),
  }, { highWaterMark: 0 });
}
