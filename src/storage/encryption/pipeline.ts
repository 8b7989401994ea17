/**
 * An ordered window of in-flight frame operations. WebCrypto runs AES-GCM off the JS thread,
 * so awaiting one 64 KiB frame at a time leaves the cipher idle while JS waits (measured on the
 * 2-core box: ~130 MB/s with one frame in flight, ~500 MB/s with four). Results come out in the
 * order they went in. A failure is reported when its turn comes; the ones behind it never
 * surface as unhandled rejections.
 */
export const PIPELINE_DEPTH = 4;

export class FrameWindow<T> {
  #queue: Promise<T>[] = [];

  get size(): number {
    return this.#queue.length;
  }

  get full(): boolean {
    return this.#queue.length >= PIPELINE_DEPTH;
  }

  push(work: Promise<T>): void {
    work.catch(() => {}); // observed at its turn in shift(); never an unhandled rejection
    this.#queue.push(work);
  }

  /** The oldest result; undefined when nothing is in flight. */
  shift(): Promise<T> | undefined {
    return this.#queue.shift();
  }

  clear(): void {
    this.#queue = [];
  }
}

/** Reads exactly the asked number of bytes from a stream, whatever its chunking. */
export class ExactReader {
  #reader: ReadableStreamDefaultReader<Uint8Array>;
  #chunk: Uint8Array | null = null;
  #offset = 0;

  constructor(stream: ReadableStream<Uint8Array>) {
    this.#reader = stream.getReader();
  }

  /** `n` bytes, or fewer when the stream ends first (the caller judges a short read). */
  async read(n: number): Promise<Uint8Array<ArrayBuffer>> {
    const out = new Uint8Array(n);
    let filled = 0;
    while (filled < n) {
      if (this.#chunk === null || this.#offset >= this.#chunk.length) {
        const { done, value } = await this.#reader.read();
        if (done) return out.subarray(0, filled);
        this.#chunk = value;
        this.#offset = 0;
        continue;
      }
      const take = Math.min(n - filled, this.#chunk.length - this.#offset);
      out.set(this.#chunk.subarray(this.#offset, this.#offset + take), filled);
      this.#offset += take;
      filled += take;
    }
    return out;
  }

  /** Whether the stream has no byte left (reads ahead by one chunk when it has). */
  async atEnd(): Promise<boolean> {
    while (this.#chunk === null || this.#offset >= this.#chunk.length) {
      const { done, value } = await this.#reader.read();
      if (done) return true;
      this.#chunk = value;
      this.#offset = 0;
    }
    return false;
  }

  cancel(reason?: unknown): Promise<void> {
    return this.#reader.cancel(reason).catch(() => {});
  }
}
