/**
 * The read side: logical bytes start..end of a compressed object from a stream of its stored
 * frames (beginning at the first frame the range needs) and its index, read in batches as the
 * frames go by (a full read of a huge object never holds its whole index). Every frame is
 * decoded whole, checked (zstd checksum, exact length) and only then cut to the range.
 */
import { CompressionError } from "./zstd-codec.ts";
import { decodeFrame } from "./frame-decoder.ts";
import { type CompressionMarker, decodeIndex, frameLength, indexRange } from "./zstd-format.ts";
import type { ByteRange } from "../backend.ts";

/** Index entries fetched per read: 4096 entries = 32 KiB of index, 1 GiB of 256 KiB frames. */
export const INDEX_BATCH = 4096;

/** Reads exactly the asked number of bytes from a stream, whatever its chunking. */
export class ChunkReader {
  readonly #reader: ReadableStreamDefaultReader<Uint8Array>;
  #chunk: Uint8Array = new Uint8Array(0);

  constructor(stream: ReadableStream<Uint8Array>) {
    this.#reader = stream.getReader();
  }

  /** `n` bytes, or fewer when the stream ends first (the caller judges). */
  async read(n: number): Promise<Uint8Array> {
    if (this.#chunk.length >= n) {
      const out = this.#chunk.subarray(0, n);
      this.#chunk = this.#chunk.subarray(n);
      return out;
    }
    const out = new Uint8Array(n);
    let filled = 0;
    while (filled < n) {
      if (this.#chunk.length === 0) {
        const read = await this.#reader.read();
        if (read.done) return out.subarray(0, filled);
        this.#chunk = read.value;
      }
      const take = Math.min(n - filled, this.#chunk.length);
      out.set(this.#chunk.subarray(0, take), filled);
      this.#chunk = this.#chunk.subarray(take);
      filled += take;
    }
    return out;
  }

  async cancel(reason?: unknown): Promise<void> {
    await this.#reader.cancel(reason).catch(() => {});
  }
}

/** Reads index entries of frames in order, a batch at a time. */
export class IndexCursor {
  #ends: number[] = [];
  #base = 0;
  /** The stored offset where frame `first` starts (from the entry before it), once known. */
  start = 0;

  constructor(
    private readonly marker: CompressionMarker,
    private readonly readRange: (range: ByteRange) => Promise<Uint8Array>,
    private readonly first: number,
    private readonly last: number,
  ) {}

  /** Reads the first batch (and the entry before `first`); returns the first frame's start. */
  async open(): Promise<number> {
    const from = this.first - 1;
    const to = Math.min(this.last, from + INDEX_BATCH);
    const entries = await this.#read(from, to);
    if (from >= 0) this.start = entries.shift()!;
    this.#ends = entries;
    this.#base = this.first;
    return this.start;
  }

  /** The stored end of the last frame the range needs, when the first batch already has it. */
  knownEnd(): number | undefined {
    const at = this.last - this.#base;
    return at < this.#ends.length ? this.#ends[at] : undefined;
  }

  /** The stored end of frame `i` (frames asked in order). */
  async endOf(i: number): Promise<number> {
    if (i - this.#base >= this.#ends.length) {
      const floor = this.#ends.at(-1) ?? this.start;
      this.#base += this.#ends.length;
      this.#ends = await this.#read(this.#base, Math.min(this.last, this.#base + INDEX_BATCH - 1));
      if ((this.#ends[0] ?? floor) < floor) throw new CompressionError("Index entries decrease");
    }
    return this.#ends[i - this.#base];
  }

  async #read(from: number, to: number): Promise<number[]> {
    const range = indexRange(this.marker, from, to);
    const bytes = await this.readRange(range);
    if (bytes.length !== range.end - range.start + 1) {
      throw new CompressionError(
        `Compressed object's index is truncated: ${bytes.length} bytes of ${
          range.end - range.start + 1
        }`,
      );
    }
    try {
      return decodeIndex(bytes, 0, this.marker.indexOffset);
    } catch (err) {
      throw new CompressionError(err instanceof Error ? err.message : String(err));
    }
  }
}

/**
 * Logical bytes `range` of the object as a stream, from `frames` (its stored bytes from the start
 * of frame `first` on). The first chunk is decoded before this returns, so damage at the start
 * is an error here, not a broken body; `onError` maps a later failure before the body errors.
 */
export async function decodedBody(
  marker: CompressionMarker,
  range: ByteRange,
  cursor: IndexCursor,
  frames: ChunkReader,
  what: string,
  onError: (err: unknown) => unknown,
): Promise<ReadableStream<Uint8Array>> {
  const first = Math.floor(range.start / marker.frameSize);
  const last = Math.floor(range.end / marker.frameSize);
  let frame = first;
  let offset = cursor.start;

  const decodeNext = async (): Promise<Uint8Array> => {
    const end = await cursor.endOf(frame);
    const stored = end < offset ? new Uint8Array(0) : await frames.read(end - offset);
    if (end <= offset || stored.length !== end - offset) {
      throw new CompressionError(`Compressed object ${what} is truncated at frame ${frame}`);
    }
    const plain = await decodeFrame(stored, frameLength(marker, frame), `${what} frame ${frame}`);
    const base = frame * marker.frameSize;
    const from = Math.max(0, range.start - base);
    const to = Math.min(plain.length, range.end - base + 1);
    offset = end;
    frame++;
    return plain.subarray(from, to);
  };

  let firstChunk: Uint8Array | undefined;
  try {
    firstChunk = await decodeNext();
  } catch (err) {
    await frames.cancel(err);
    throw onError(err);
  }
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      if (firstChunk !== undefined) {
        controller.enqueue(firstChunk);
        firstChunk = undefined;
        if (frame > last) {
          await frames.cancel();
          controller.close();
        }
        return;
      }
      try {
        controller.enqueue(await decodeNext());
      } catch (err) {
        await frames.cancel(err);
        throw onError(err);
      }
      if (frame > last) {
        await frames.cancel();
        controller.close();
      }
    },
    cancel: (reason) => frames.cancel(reason),
  }, { highWaterMark: 1 });
}
