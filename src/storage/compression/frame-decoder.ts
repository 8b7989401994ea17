/**
 * Large frames (a baseline's, up to 16 MiB) decode off the event loop: zlib's synchronous zstd
 * takes 10-25 ms for such a frame here, which every other request would wait out. Frames under
 * 1 MiB (passthrough objects' 256 KiB ones, ~0.5 ms) decode inline as before. One worker,
 * started at the first large frame and ended after IDLE_MS without one; it decodes with the
 * synchronous form too, whose errors are catchable (docs/COMPRESSION.md: the asynchronous form
 * ends the process on a damaged frame in the pinned Deno). A worker failure fails the frames it
 * held, never the process.
 */
import { CompressionError, decompressFrame } from "./zstd-codec.ts";

/** Frames of this many logical bytes and more go to the worker. */
export const WORKER_FRAME_BYTES = 1 << 20;
const IDLE_MS = 30_000;

export type FrameRequest = { id: number; stored: Uint8Array; expected: number };
export type FrameReply = { id: number; plain: Uint8Array } | { id: number; error: string };

let worker: Worker | null = null;
let nextId = 0;
let idleTimer: ReturnType<typeof setTimeout> | undefined;
const waiting = new Map<number, (reply: FrameReply) => void>();

function failAll(message: string): void {
  for (const [id, settle] of waiting) settle({ id, error: message });
  waiting.clear();
}

function workerFor(): Worker {
  if (worker) return worker;
  const started = new Worker(new URL("./frame-worker.ts", import.meta.url).href, {
    type: "module",
  });
  started.onmessage = (event: MessageEvent<FrameReply>) => {
    const settle = waiting.get(event.data.id);
    waiting.delete(event.data.id);
    settle?.(event.data);
    if (waiting.size === 0) armIdle();
  };
  started.onerror = (event) => {
    event.preventDefault();
    stopFrameDecoder();
    failAll(`the decoding worker failed: ${event.message}`);
  };
  worker = started;
  return started;
}

function armIdle(): void {
  if (idleTimer !== undefined) clearTimeout(idleTimer);
  const timer = setTimeout(() => waiting.size === 0 && stopFrameDecoder(), IDLE_MS);
  Deno.unrefTimer(timer);
  idleTimer = timer;
}

/** Ends the decoding worker (the server's stop; it starts again when needed). */
export function stopFrameDecoder(): void {
  if (idleTimer !== undefined) clearTimeout(idleTimer);
  idleTimer = undefined;
  worker?.terminate();
  worker = null;
  failAll("the decoding worker was stopped");
}

/** Bytes that own their buffer, so they can be transferred (a view would post its whole buffer). */
function owned(bytes: Uint8Array): Uint8Array {
  return bytes.byteOffset === 0 && bytes.byteLength === bytes.buffer.byteLength
    ? bytes
    : bytes.slice();
}

/** `decompressFrame`, in the worker for large frames. */
export async function decodeFrame(
  stored: Uint8Array,
  expected: number,
  what: string,
): Promise<Uint8Array> {
  if (expected < WORKER_FRAME_BYTES) return decompressFrame(stored, expected, what);
  if (idleTimer !== undefined) clearTimeout(idleTimer);
  idleTimer = undefined;
  const target = workerFor();
  const id = nextId++;
  const { promise, resolve } = Promise.withResolvers<FrameReply>();
  waiting.set(id, resolve);
  const bytes = owned(stored);
  target.postMessage({ id, stored: bytes, expected } satisfies FrameRequest, [
    bytes.buffer as ArrayBuffer,
  ]);
  const reply = await promise;
  if ("error" in reply) {
    throw new CompressionError(`Compressed object ${what} is damaged: ${reply.error}`);
  }
  return reply.plain;
}
