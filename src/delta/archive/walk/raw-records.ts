/**
 * RAW records: bytes outside deflate data, copied verbatim. Callers push bytes as they walk a
 * container; they are gathered and written as records of at most MAX_RAW bytes, so a long run of
 * headers or stored data costs one record header per MiB.
 */
import type { ByteSink, ByteSource } from "../byte-io.ts";
import { MAX_RAW, TAG_RAW } from "../token-format.ts";

export class RawRecords {
  readonly #out: ByteSink;
  readonly #pending = new Uint8Array(MAX_RAW);
  #length = 0;

  constructor(out: ByteSink) {
    this.#out = out;
  }

  bytes(data: Uint8Array): void {
    let done = 0;
    while (done < data.length) {
      const n = Math.min(data.length - done, MAX_RAW - this.#length);
      this.#pending.set(data.subarray(done, done + n), this.#length);
      this.#length += n;
      done += n;
      if (this.#length === MAX_RAW) this.flush();
    }
  }

  /** Copies up to `n` bytes from the source (fewer when it ends first); returns the count. */
  copy(src: ByteSource, n: number): number {
    let done = 0;
    while (done < n) {
      const part = src.chunk(Math.min(n - done, MAX_RAW));
      if (part.length === 0) break;
      this.bytes(part);
      done += part.length;
    }
    return done;
  }

  /** Copies everything left in the source. */
  rest(src: ByteSource): void {
    this.copy(src, Number.MAX_SAFE_INTEGER);
  }

  /** Writes the gathered bytes as one record (before any other record is written). */
  flush(): void {
    if (this.#length === 0) return;
    this.#out.byte(TAG_RAW);
    this.#out.varint(this.#length);
    this.#out.bytes(this.#pending.subarray(0, this.#length));
    this.#length = 0;
  }
}
