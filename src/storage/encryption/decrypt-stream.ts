/**
 * Stored frames → plaintext. A FrameDecryptor reads the sealed frames `first..last` of an
 * object from a stream positioned at frame `first`, opens up to PIPELINE_DEPTH of them at once
 * and hands out the plaintext in order, cut to the asked byte range. A frame's bytes are handed
 * out only after its tag verified; a short stream, an extra byte after the object's last frame
 * or a frame that fails authentication throws EncryptionError instead of yielding anything.
 */
import { EncryptionError } from "./encryption-error.ts";
import { openFrame } from "./frame-crypto.ts";
import {
  FRAME_SIZE,
  frameCount,
  type FrameHeader,
  framePlainSize,
  TAG_SIZE,
} from "./frame-format.ts";
import { ExactReader, FrameWindow } from "./pipeline.ts";

export interface DecryptPlan {
  key: CryptoKey;
  header: FrameHeader;
  /** Plaintext size of the whole object (fixes the frame count, hence the final frame). */
  size: number;
  /** Plaintext byte range wanted, inclusive. */
  start: number;
  end: number;
}

export class FrameDecryptor {
  readonly #window = new FrameWindow<Uint8Array>();
  #next: number;
  readonly #last: number;
  readonly #lastOfObject: number;

  constructor(private readonly reader: ExactReader, private readonly plan: DecryptPlan) {
    this.#next = Math.floor(plan.start / FRAME_SIZE);
    this.#last = plan.size === 0 ? 0 : Math.floor(plan.end / FRAME_SIZE);
    this.#lastOfObject = frameCount(plan.size) - 1;
  }

  /** The next piece of plaintext; null at the end of the range. */
  async next(): Promise<Uint8Array | null> {
    try {
      for (;;) {
        while (!this.#window.full && this.#next <= this.#last) await this.#launch(this.#next++);
        const pending = this.#window.shift();
        if (pending === undefined) break;
        const piece = await pending;
        if (piece.length > 0) return piece;
      }
      if (this.#last === this.#lastOfObject && !(await this.reader.atEnd())) {
        throw new EncryptionError("truncated", "Encrypted object has bytes after its final frame");
      }
      return null;
    } catch (err) {
      this.#window.clear();
      await this.reader.cancel(err);
      throw err;
    }
  }

  cancel(reason?: unknown): Promise<void> {
    this.#window.clear();
    return this.reader.cancel(reason);
  }

  async #launch(index: number): Promise<void> {
    const { key, header, size, start, end } = this.plan;
    const plainSize = size === 0 ? 0 : framePlainSize(index, size);
    const sealed = await this.reader.read(plainSize + TAG_SIZE);
    if (sealed.length < plainSize + TAG_SIZE) {
      throw new EncryptionError(
        "truncated",
        `Encrypted object is truncated in frame ${index} (${sealed.length} of ` +
          `${plainSize + TAG_SIZE} bytes)`,
      );
    }
    const frameStart = index * FRAME_SIZE;
    const from = Math.max(start, frameStart) - frameStart;
    const to = Math.min(end + 1, frameStart + plainSize) - frameStart;
    this.#window.push(
      openFrame(key, header, index, index === this.#lastOfObject, sealed).then((plain) =>
        from === 0 && to === plain.length ? plain : plain.subarray(from, to)
      ),
    );
  }
}

/**
 * Plaintext handed to the HTTP layer per chunk, at most: frames are joined up to this size, since
 * each chunk costs the response writer a round trip through JS (64 KiB chunks made full GETs
 * markedly slower than the 256 KiB ones a plaintext file read gives).
 */
export const OUTPUT_CHUNK_BYTES = 256 * 1024;

/**
 * A stream of the decryptor's output that starts with the already-verified `prefetched` pieces
 * (see EncryptingBackend: the first frames are checked before the answer's headers go out).
 */
export function decryptedStream(
  decryptor: FrameDecryptor,
  prefetched: Uint8Array[],
  onError: (err: unknown) => void,
): ReadableStream<Uint8Array> {
  let ended = false;
  const nextPiece = async () => prefetched.shift() ?? (ended ? null : await decryptor.next());
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      try {
        const pieces: Uint8Array[] = [];
        let total = 0;
        while (total < OUTPUT_CHUNK_BYTES) {
          const piece = await nextPiece();
          if (piece === null) {
            ended = true;
            break;
          }
          pieces.push(piece);
          total += piece.length;
        }
        if (pieces.length === 1) controller.enqueue(pieces[0]);
        else if (pieces.length > 1) controller.enqueue(joined(pieces, total));
        if (ended) controller.close();
      } catch (err) {
        onError(err);
        throw err;
      }
    },
    cancel(reason) {
      return decryptor.cancel(reason);
    },
  }, { highWaterMark: 0 });
}

function joined(pieces: Uint8Array[], total: number): Uint8Array {
  const out = new Uint8Array(total);
  let at = 0;
  for (const piece of pieces) {
    out.set(piece, at);
    at += piece.length;
  }
  return out;
}

/** Reads up to `maxPieces` pieces ahead; the array ends with null when the range is done. */
export async function prefetch(
  decryptor: FrameDecryptor,
  maxPieces: number,
): Promise<{ pieces: Uint8Array[]; done: boolean }> {
  const pieces: Uint8Array[] = [];
  while (pieces.length < maxPieces) {
    const piece = await decryptor.next();
    if (piece === null) return { pieces, done: true };
    pieces.push(piece);
  }
  return { pieces, done: false };
}
