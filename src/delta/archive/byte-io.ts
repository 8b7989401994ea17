/**
 * Synchronous buffered file reading and writing for the archive codec. The codec runs in a worker
 * (archive-worker.ts), where blocking file calls cost the server nothing, and byte-at-a-time
 * parsing is far cheaper against a plain buffer than through async streams. Memory is one fixed
 * buffer per file whatever the file's size.
 */
import { createHash } from "node:crypto";
import { SvcError } from "../../lib/mod.ts";

const BUFFER_BYTES = 1 << 20;

/** Reads a file front to back; `unread` steps back a few bytes a bit reader fetched too early. */
export class ByteSource {
  readonly #file: Deno.FsFile;
  /** The buffer and the bytes in it (`pos` the next one, `len` the end): a hot loop may read
   * `buf[pos++]` itself while `pos < len` and call `byte()` otherwise. */
  readonly buf = new Uint8Array(BUFFER_BYTES);
  /** File offset of `buf[0]`. */
  #bufStart = 0;
  pos = 0;
  len = 0;

  constructor(file: Deno.FsFile) {
    this.#file = file;
  }

  /** File offset of the next byte `byte()` returns. */
  get offset(): number {
    return this.#bufStart + this.pos;
  }

  /** Fills the buffer from the current offset; false at the end of the file. */
  #fill(): boolean {
    this.#bufStart += this.len;
    this.pos = 0;
    this.len = 0;
    this.#file.seekSync(this.#bufStart, Deno.SeekMode.Start);
    while (this.len < this.buf.length) {
      const n = this.#file.readSync(this.buf.subarray(this.len));
      if (n === null) break;
      this.len += n;
    }
    return this.len > 0;
  }

  /** The next byte, or -1 at the end of the file. */
  byte(): number {
    if (this.pos === this.len && !this.#fill()) return -1;
    return this.buf[this.pos++];
  }

  /** The byte `ahead` positions on without consuming anything (-1 past the end). */
  peek(ahead = 0): number {
    if (this.pos + ahead >= this.len) {
      // Keep the unread tail and refill behind it: move the window to the current offset.
      this.#seekTo(this.offset);
      if (ahead >= this.len) return -1;
    }
    return this.buf[this.pos + ahead];
  }

  #seekTo(offset: number): void {
    this.#bufStart = offset;
    this.len = 0;
    this.#fill();
  }

  /** Steps back `n` bytes already returned. */
  unread(n: number): void {
    if (this.pos >= n) this.pos -= n;
    else this.#seekTo(this.offset - n);
  }

  /** Moves to an absolute offset (a rollback). */
  seek(offset: number): void {
    if (offset >= this.#bufStart && offset <= this.#bufStart + this.len) {
      this.pos = offset - this.#bufStart;
    } else this.#seekTo(offset);
  }

  /**
   * Up to `max` bytes as a view of the internal buffer (valid until the next call), at least one
   * byte unless at the end of the file (then an empty view).
   */
  chunk(max: number): Uint8Array {
    if (this.pos === this.len && !this.#fill()) return this.buf.subarray(0, 0);
    const n = Math.min(max, this.len - this.pos);
    const view = this.buf.subarray(this.pos, this.pos + n);
    this.pos += n;
    return view;
  }

  /** Exactly `n` bytes into `out` (or throws: the input ended). */
  read(out: Uint8Array, n: number, what: string): void {
    let done = 0;
    while (done < n) {
      const part = this.chunk(n - done);
      if (part.length === 0) throw truncated(what);
      out.set(part, done);
      done += part.length;
    }
  }
}

/** `length` bytes of `file` from `offset`; a file that ends before them is `truncated(what)`. */
export function readAt(
  file: Deno.FsFile,
  offset: number,
  length: number,
  what: string,
): Uint8Array {
  const bytes = new Uint8Array(length);
  file.seekSync(offset, Deno.SeekMode.Start);
  for (let got = 0; got < length;) {
    const n = file.readSync(bytes.subarray(got));
    if (n === null) throw truncated(what);
    got += n;
  }
  return bytes;
}

/** Writes a file front to back; `mark`/`rollback` undo output written since a mark. */
export class ByteSink {
  readonly #file: Deno.FsFile;
  readonly buf = new Uint8Array(BUFFER_BYTES);
  pos = 0;
  #flushed = 0;
  readonly #onWrite?: (bytes: Uint8Array) => void;

  /** `onWrite` sees every byte written, in order (contraction hashes its output with it). */
  constructor(file: Deno.FsFile, onWrite?: (bytes: Uint8Array) => void) {
    this.#file = file;
    this.#onWrite = onWrite;
  }

  /** Bytes written so far (flushed or buffered). */
  get size(): number {
    return this.#flushed + this.pos;
  }

  flush(): void {
    this.#onWrite?.(this.buf.subarray(0, this.pos));
    let done = 0;
    while (done < this.pos) done += this.#file.writeSync(this.buf.subarray(done, this.pos));
    this.#flushed += this.pos;
    this.pos = 0;
  }

  /** Makes room for `n` bytes in `buf` at `pos` (n <= the buffer size). */
  room(n: number): void {
    if (this.pos + n > this.buf.length) this.flush();
  }

  byte(value: number): void {
    if (this.pos === this.buf.length) this.flush();
    this.buf[this.pos++] = value;
  }

  bytes(data: Uint8Array): void {
    if (data.length > this.buf.length - this.pos) {
      this.flush();
      if (data.length > this.buf.length) {
        this.#onWrite?.(data);
        let done = 0;
        while (done < data.length) done += this.#file.writeSync(data.subarray(done));
        this.#flushed += data.length;
        return;
      }
    }
    this.buf.set(data, this.pos);
    this.pos += data.length;
  }

  /** LEB128: seven bits a byte, low bits first. */
  varint(value: number): void {
    this.room(10);
    while (value >= 0x80) {
      this.buf[this.pos++] = (value % 0x80) | 0x80;
      value = Math.floor(value / 0x80);
    }
    this.buf[this.pos++] = value;
  }

  /** The current size, to come back to with `rollback`. */
  mark(): number {
    this.flush();
    return this.#flushed;
  }

  rollback(mark: number): void {
    this.flush();
    this.#file.truncateSync(mark);
    this.#file.seekSync(mark, Deno.SeekMode.Start);
    this.#flushed = mark;
  }
}

/**
 * The marker of a problem with the input's format (as opposed to an I/O failure): expansion
 * answers `{ ok: false, reason }` for it, contraction reports a damaged token form.
 */
export const FORMAT_PROBLEM = "archive-format";

export function formatProblem(message: string): SvcError {
  return new SvcError("InvalidArgument", message, { problem: FORMAT_PROBLEM });
}

export function isFormatProblem(err: unknown): err is SvcError {
  return err instanceof SvcError && err.details.problem === FORMAT_PROBLEM;
}

export function truncated(what: string): SvcError {
  return formatProblem(`The input ends inside ${what}`);
}

/** A sink into `file` that hashes what it writes: a contraction's output, checked at its END. */
export function hashingSink(file: Deno.FsFile): {
  out: ByteSink;
  digest(): { size: number; sha256: string };
} {
  const hash = createHash("sha256");
  let size = 0;
  const out = new ByteSink(file, (bytes) => {
    hash.update(bytes);
    size += bytes.length;
  });
  return { out, digest: () => ({ size, sha256: hash.digest("hex") }) };
}
