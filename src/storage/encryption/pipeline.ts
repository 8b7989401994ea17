/**
 * Moving sealed bytes in batches. Frames are sealed and opened BATCH_FRAMES at a time: one read
 * of the stored bytes and one plaintext chunk per batch, instead of a read, a promise and a
 * chunk per 64 KiB frame (those per-frame costs made a full GET cost several times the CPU of
 * its cipher). A batch is also the unit of verification: every frame of a chunk is
 * authenticated before the chunk is handed out.
 */
import { lendChunk, READ_BUFFER_BYTES, recycleChunk, takeReadBuffer } from "../../lib/mod.ts";
import { FRAME_SIZE, SEALED_FRAME_SIZE } from "./frame-format.ts";

/**
 * Frames per batch: as many sealed frames as fit in one pooled 1 MiB read buffer
 * (http/read-buffers.ts): 15, 983,280 stored bytes, 960 KiB of plaintext. Batches then move
 * through recycled buffers instead of a fresh megabyte each (a fresh 1 MiB array costs ~256 page
 * faults; on ranged reads that was most of their extra CPU).
 */
export const BATCH_FRAMES = Math.floor(READ_BUFFER_BYTES / SEALED_FRAME_SIZE);
export const BATCH_BYTES = BATCH_FRAMES * FRAME_SIZE;

/** Gives a pooled buffer back (the lend-then-recycle of read-buffers.ts, by its owner). */
function giveBack(buffer: ArrayBuffer): void {
  if (buffer.detached || buffer.byteLength !== READ_BUFFER_BYTES) return;
  const whole = new Uint8Array(buffer);
  lendChunk(whole);
  recycleChunk(whole);
}

/**
 * Waits for every operation of a batch (WebCrypto runs them in parallel off the JS thread),
 * then throws the first failure in frame order, so a caller wiping the batch's buffer on error
 * knows nothing still writes into it.
 */
export async function settleInOrder(pending: Promise<void>[]): Promise<void> {
  const outcomes = await Promise.allSettled(pending);
  for (const outcome of outcomes) if (outcome.status === "rejected") throw outcome.reason;
}

/**
 * Reads exactly the asked number of bytes from a stream, whatever its chunking. A byte stream
 * (a file's, a fetch body's) is read with a BYOB reader straight into one reused buffer: large
 * reads, no copy, no buffer per chunk; any other stream is copied from its chunks.
 */
export class ExactReader {
  #byob: ReadableStreamBYOBReader | null = null;
  #default: ReadableStreamDefaultReader<Uint8Array> | null = null;
  /** Two buffers, used in turn, so a caller can read the next batch while using this one. */
  readonly #buffers = [new ArrayBuffer(0), new ArrayBuffer(0)];
  #turn = 0;
  #buffer: ArrayBuffer = this.#buffers[0];
  #chunk: Uint8Array | null = null;
  #offset = 0;
  #ended = false;
  /** A read is filling a buffer: it may not go back to the pool now. */
  #reading = false;
  #released = false;

  constructor(stream: ReadableStream<Uint8Array>) {
    try {
      this.#byob = stream.getReader({ mode: "byob" });
    } catch {
      // Not a byte stream: read its chunks.
      this.#default = stream.getReader();
    }
  }

  /** `n` bytes in a fresh array, or fewer when the stream ends first (the caller judges). */
  async read(n: number): Promise<Uint8Array<ArrayBuffer>> {
    return (await this.readView(n)).slice();
  }

  /**
   * `n` bytes (fewer when the stream ends first) as a view of one of this reader's two buffers:
   * valid until the second call after this one, which overwrites it. Calls must not overlap.
   */
  async readView(n: number): Promise<Uint8Array> {
    if (this.#released) throw new Error("ExactReader used after release");
    const turn = this.#turn;
    this.#turn ^= 1;
    this.#buffer = this.#buffers[turn];
    if (this.#buffer.byteLength < n) {
      // A pooled megabyte when it is big enough (a batch always is), else a buffer of its own.
      giveBack(this.#buffer);
      this.#buffer = n <= READ_BUFFER_BYTES ? takeReadBuffer().buffer : new ArrayBuffer(n);
    }
    let filled = 0;
    this.#reading = true;
    try {
      while (filled < n && !this.#ended) {
        filled += this.#byob ? await this.#readByob(filled, n) : await this.#copyChunk(filled, n);
      }
    } finally {
      this.#reading = false;
      this.#buffers[turn] = this.#buffer; // a BYOB read hands the buffer back transferred
    }
    return new Uint8Array(this.#buffer, 0, filled);
  }

  /**
   * Gives the pooled buffers back: no view of them may be used afterwards. Kept when a read is
   * still filling one (a cancelled read); the garbage collector takes them then.
   */
  release(): void {
    if (this.#released) return;
    this.#released = true;
    if (this.#reading) return;
    for (const buffer of this.#buffers) giveBack(buffer);
    this.#buffers[0] = this.#buffers[1] = this.#buffer = new ArrayBuffer(0);
  }

  /** Whether the stream has no byte left (reads ahead when it has). */
  async atEnd(): Promise<boolean> {
    if (this.#byob) {
      if (this.#ended) return true;
      const { done } = await this.#byob.read(new Uint8Array(1));
      this.#ended = done;
      return done;
    }
    while (this.#chunk === null || this.#offset >= this.#chunk.length) {
      if (!(await this.#nextChunk())) return true;
    }
    return false;
  }

  /** Cancels the stream; the buffers are released (see release). */
  cancel(reason?: unknown): Promise<void> {
    this.#ended = true;
    this.release();
    return (this.#byob ?? this.#default)!.cancel(reason).catch(() => {});
  }

  /** One BYOB read into the buffer at `filled`; the buffer comes back (transferred) with it. */
  async #readByob(filled: number, n: number): Promise<number> {
    const { done, value } = await this.#byob!.read(
      new Uint8Array(this.#buffer, filled, n - filled),
    );
    // The read transferred the buffer: keep the new one (or a fresh one if none came back).
    this.#buffer = value ? value.buffer as ArrayBuffer : new ArrayBuffer(n);
    if (done) {
      this.#ended = true;
      return 0;
    }
    return value!.byteLength;
  }

  async #copyChunk(filled: number, n: number): Promise<number> {
    if (this.#chunk === null || this.#offset >= this.#chunk.length) {
      return (await this.#nextChunk()) ? 0 : (this.#ended = true, 0);
    }
    const take = Math.min(n - filled, this.#chunk.length - this.#offset);
    new Uint8Array(this.#buffer, filled, take).set(
      this.#chunk.subarray(this.#offset, this.#offset + take),
    );
    this.#offset += take;
    return take;
  }

  async #nextChunk(): Promise<boolean> {
    const { done, value } = await this.#default!.read();
    if (done) return false;
    this.#chunk = value;
    this.#offset = 0;
    return true;
  }
}
