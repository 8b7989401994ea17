/**
 * Stored frames → plaintext. A FrameDecryptor reads the sealed frames `first..last` of an
 * object from a stream positioned at frame `first`, a batch (pipeline.ts) at a time, the next
 * batch's read running while the current one is opened and sent. It opens every
 * frame of the batch into one plaintext chunk and hands the chunk out, cut to the asked byte
 * range, only once all its frames verified. A short stream, an extra byte after the object's
 * last frame or a frame that fails authentication throws EncryptionError instead of yielding
 * anything; the chunk being opened is wiped first.
 */
import { EncryptionError } from "./encryption-error.ts";
import {
  FRAME_SIZE,
  frameCount,
  type FrameHeader,
  framePlainSize,
  HEADER_SIZE,
  parseHeader,
  SEALED_FRAME_SIZE,
  TAG_SIZE,
} from "./frame-format.ts";
import type { ObjectCipher } from "./gcm-engine.ts";
import { BATCH_FRAMES, type ExactReader, settleInOrder } from "./pipeline.ts";

export interface DecryptPlan {
  /** The object's cipher; the decryptor owns it from here (disposed when done or failed). */
  cipher: ObjectCipher;
  /** Plaintext size of the whole object (fixes the frame count, hence the final frame). */
  size: number;
  /** Plaintext byte range wanted, inclusive. */
  start: number;
  end: number;
}

export class FrameDecryptor {
  #next: number;
  readonly #last: number;
  readonly #lastOfObject: number;
  #finished = false;
  /** The read of the batch starting at #next, started while the batch before it is opened. */
  #ahead: Promise<Uint8Array> | null = null;

  constructor(private readonly reader: ExactReader, private readonly plan: DecryptPlan) {
    this.#next = Math.floor(plan.start / FRAME_SIZE);
    this.#last = plan.size === 0 ? 0 : Math.floor(plan.end / FRAME_SIZE);
    this.#lastOfObject = frameCount(plan.size) - 1;
  }

  /**
   * The next verified plaintext (one batch, cut to the range, never empty); null at the end of
   * the range.
   */
  async next(): Promise<Uint8Array | null> {
    try {
      while (!this.#finished && this.#next <= this.#last) {
        const chunk = await this.#openBatch();
        if (chunk.length > 0) return chunk;
      }
      if (!this.#finished) {
        this.#finished = true;
        if (this.#last === this.#lastOfObject && !(await this.reader.atEnd())) {
          throw new EncryptionError(
            "truncated",
            "Encrypted object has bytes after its final frame",
          );
        }
        this.plan.cipher.dispose();
        this.reader.release(); // every view of its buffers was opened into chunks already
      }
      return null;
    } catch (err) {
      await this.cancel(err);
      throw err;
    }
  }

  cancel(reason?: unknown): Promise<void> {
    this.#finished = true;
    this.plan.cipher.dispose();
    return this.reader.cancel(reason);
  }

  /**
   * Reads, opens and cuts the next batch of frames into one fresh array, the chunk handed to the
   * HTTP layer. Fresh, never pooled: the HTTP layer keeps a chunk, without copying it, after the
   * stream has moved past it (HTTP/2 until the client's window takes it; see
   * tests/encryption_lifetime_test.ts), and gives no signal when it lets go. One chunk per batch
   * instead of one per frame: each chunk costs a pass through the stream, the response pump and
   * an op (64 KiB chunks: up to ~0.8 CPU-s per GiB more, docs/BENCHMARKS.md). Arrays this
   * size stay cheap only with malloc's thresholds raised (malloc-tuning.ts).
   */
  async #openBatch(): Promise<Uint8Array> {
    const { cipher, size, start, end } = this.plan;
    const first = this.#next;
    const last = Math.min(this.#last, first + BATCH_FRAMES - 1);
    this.#next = last + 1;
    const plainStart = first * FRAME_SIZE;
    const plainEnd = size === 0 ? 0 : Math.min(size, (last + 1) * FRAME_SIZE);
    const sealedBytes = plainEnd - plainStart + (last - first + 1) * TAG_SIZE;
    const sealed = await (this.#ahead ?? this.reader.readView(sealedBytes));
    this.#ahead = null;
    if (this.#next <= this.#last) {
      // Read the next batch (into the reader's other buffer) while this one is opened and sent.
      const end = Math.min(this.#last, this.#next + BATCH_FRAMES - 1);
      const bytes = Math.min(size, (end + 1) * FRAME_SIZE) - this.#next * FRAME_SIZE +
        (end - this.#next + 1) * TAG_SIZE;
      this.#ahead = this.reader.readView(bytes);
      this.#ahead.catch(() => {}); // awaited at its turn; a failure then is reported there
    }
    if (sealed.length < sealedBytes) {
      const index = first + Math.floor(sealed.length / SEALED_FRAME_SIZE);
      const expected = (size === 0 ? 0 : framePlainSize(index, size)) + TAG_SIZE;
      throw new EncryptionError(
        "truncated",
        `Encrypted object is truncated in frame ${index} (${
          sealed.length % SEALED_FRAME_SIZE
        } of ${expected} bytes)`,
      );
    }
    const plain = new Uint8Array(plainEnd - plainStart);
    const pending: Promise<void>[] = [];
    try {
      for (let index = first; index <= last; index++) {
        const plainSize = size === 0 ? 0 : framePlainSize(index, size);
        const sealedAt = (index - first) * SEALED_FRAME_SIZE;
        const plainAt = (index - first) * FRAME_SIZE;
        const opened = cipher.open(
          index,
          index === this.#lastOfObject,
          sealed.subarray(sealedAt, sealedAt + plainSize + TAG_SIZE),
          plain.subarray(plainAt, plainAt + plainSize),
        );
        if (opened) pending.push(opened);
      }
      if (pending.length > 0) await settleInOrder(pending);
    } catch (err) {
      await Promise.allSettled(pending); // nothing may still write into the chunk
      plain.fill(0);
      throw err;
    }
    // Cut to the range: only the first and last frames of a range can be partial.
    return plain.subarray(
      Math.max(start, plainStart) - plainStart,
      Math.min(end + 1, plainEnd) - plainStart,
    );
  }
}

/**
 * A stream of the decryptor's output that starts with the already-verified `prefetched` chunk
 * (see EncryptingBackend: the first batch is checked before the answer's headers go out). One
 * chunk per batch; the next batch is opened once the queued one is taken, so about one batch
 * waits for the socket while the reader fetches the next.
 */
export function decryptedStream(
  decryptor: FrameDecryptor,
  prefetched: Uint8Array | null,
  onError: (err: unknown) => void,
): ReadableStream<Uint8Array> {
  let first = prefetched;
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      try {
        const chunk = first ?? await decryptor.next();
        first = null;
        if (chunk === null) controller.close();
        else controller.enqueue(chunk);
      } catch (err) {
        onError(err);
        throw err;
      }
    },
    cancel(reason) {
      return decryptor.cancel(reason);
    },
  }, { highWaterMark: 1 });
}

/** The header in `bytes`, or the EncryptionError (truncated or damaged header) it is not. */
export function parseHeaderOrFail(bytes: Uint8Array): FrameHeader {
  try {
    return parseHeader(bytes);
  } catch (err) {
    const truncated = bytes.length < HEADER_SIZE;
    throw new EncryptionError(
      truncated ? "truncated" : "header",
      err instanceof Error ? `Encrypted object unreadable: ${err.message}` : String(err),
    );
  }
}
