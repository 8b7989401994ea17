/**
 * The framing state machine of aws-chunked bodies: chunk-size lines with their signatures, chunk
 * data and its CRLF, trailer lines, the end. The wire format, the hooks' contract and the choice
 * of errors are described in aws-chunked.ts, which drives this parser over a body stream.
 */

import { SvcError } from "../lib/mod.ts";

/** How the body is framed, and the hook that sees each chunk before it is released. */
export interface ChunkedFraming {
  signed: boolean;
  trailer: boolean;
  ecdsa?: boolean;
  /** `x-amz-decoded-content-length`: the decoded total must equal it exactly. */
  decodedLength?: number;
  /** Largest chunk held in memory for `onChunk` (default 16 MiB); larger is refused. */
  maxBufferedChunk?: number;
  /** Sees each chunk (signature, exact bytes) before any of its bytes is released. */
  onChunk?: (signature: string | undefined, data: readonly Uint8Array[]) => void | Promise<void>;
}

/** A chunk-size or trailer line longer than this is refused (a real one is under 200 bytes). */
export const MAX_LINE = 4096;
const MAX_TRAILER_LINES = 32;
const DEFAULT_MAX_BUFFERED_CHUNK = 16 * 1024 * 1024;
/** 2^50 bytes: far above any object S3 accepts, and exact in a double. */
const MAX_CHUNK_SIZE = 2 ** 50;
const TRAILER_SIGNATURE = "x-amz-trailer-signature";
const SIGNATURE_PREFIX = ";chunk-signature=";
const HMAC_SIGNATURE = /^[0-9a-f]{64}$/;
/** DER ECDSA P-256 signature in hex (8..72 bytes), right-padded with '*' to 144 characters. */
const ECDSA_SIGNATURE = /^(?:[0-9a-f]{2}){8,72}\**$/;
const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
const FIELD_VALUE = /^[\t\x20-\x7e]*$/;
const CR = 13;
const LF = 10;

export function incomplete(detail: string): SvcError {
  return new SvcError("IncompleteBody", `The request body terminated unexpectedly: ${detail}`);
}

type State = "size" | "data" | "dataEnd" | "trailer" | "done";

/** The framing state machine. push() consumes one source piece; finish() checks the end. */
export class ChunkedParser {
  #state: State = "size";
  readonly #options: ChunkedFraming;
  readonly #hold: boolean;
  readonly #maxBuffered: number;
  /** Stitching buffer for a line split across pieces. */
  readonly #line = new Uint8Array(MAX_LINE + 2);
  #lineLength = 0;
  /** Where the line just returned by #takeLine ended in its piece. */
  #next = 0;
  #remaining = 0;
  #crlfSeen = 0;
  #signature: string | undefined;
  #held: Uint8Array[] = [];
  #total = 0;
  readonly trailers = new Map<string, string>();
  trailerSignature: string | undefined;

  constructor(options: ChunkedFraming) {
    this.#options = options;
    this.#hold = options.onChunk !== undefined;
    this.#maxBuffered = options.maxBufferedChunk ?? DEFAULT_MAX_BUFFERED_CHUNK;
    const length = options.decodedLength;
    if (length !== undefined && !(Number.isSafeInteger(length) && length >= 0)) {
      throw new TypeError(`decodedLength must be a non-negative integer, got ${length}`);
    }
  }

  async push(piece: Uint8Array, emit: (data: Uint8Array) => void): Promise<void> {
    let pos = 0;
    while (pos < piece.length) {
      switch (this.#state) {
        case "size":
        case "trailer": {
          const line = this.#takeLine(piece, pos);
          pos = this.#next;
          if (line === undefined) break;
          if (this.#state === "size") await this.#sizeLine(line);
          else this.#trailerLine(line);
          break;
        }
        case "data": {
          const n = Math.min(this.#remaining, piece.length - pos);
          const view = piece.subarray(pos, pos + n);
          pos += n;
          this.#remaining -= n;
          if (this.#hold) this.#held.push(view);
          else emit(view);
          if (this.#remaining === 0) this.#state = "dataEnd";
          break;
        }
        case "dataEnd": {
          if (piece[pos] !== (this.#crlfSeen === 0 ? CR : LF)) {
            throw incomplete("chunk data is not followed by CRLF (chunk size does not match)");
          }
          pos++;
          if (++this.#crlfSeen < 2) break;
          this.#crlfSeen = 0;
          this.#state = "size";
          if (this.#hold) {
            const held = this.#held;
            this.#held = [];
            // A synchronous hook (svc's are) costs no microtask per chunk.
            const checked = this.#options.onChunk!(this.#signature, held);
            if (checked instanceof Promise) await checked;
            for (const view of held) emit(view);
          }
          break;
        }
        case "done":
          throw incomplete("data after the end of the aws-chunked body");
      }
    }
  }

  /** Called at the source's end: the body must have ended exactly at the final CRLF. */
  finish(): void {
    if (this.#state !== "done") throw incomplete("the aws-chunked body ended before its end");
  }

  /**
   * Returns the next CRLF-terminated line (without CRLF), as a view of the piece when it lies in
   * one piece, else stitched in #line. Returns undefined when the piece ends mid-line.
   */
  #takeLine(piece: Uint8Array, pos: number): Uint8Array | undefined {
    const lf = piece.indexOf(LF, pos);
    const end = lf === -1 ? piece.length : lf;
    if (this.#lineLength + (end - pos) > MAX_LINE + 1) {
      throw incomplete(`a chunk header or trailer line is longer than ${MAX_LINE} bytes`);
    }
    let line: Uint8Array;
    if (this.#lineLength === 0 && lf !== -1) {
      line = piece.subarray(pos, lf);
    } else {
      this.#line.set(piece.subarray(pos, end), this.#lineLength);
      this.#lineLength += end - pos;
      if (lf === -1) {
        this.#next = piece.length;
        return undefined;
      }
      line = this.#line.subarray(0, this.#lineLength);
      this.#lineLength = 0;
    }
    this.#next = lf + 1;
    if (line.length === 0 || line[line.length - 1] !== CR) {
      throw incomplete("a chunk header or trailer line does not end with CRLF");
    }
    return line.subarray(0, line.length - 1);
  }

  async #sizeLine(line: Uint8Array): Promise<void> {
    let size = 0;
    let i = 0;
    for (; i < line.length; i++) {
      const digit = hexValue(line[i]);
      if (digit < 0) break;
      size = size * 16 + digit;
      if (size > MAX_CHUNK_SIZE) throw incomplete("chunk size is too large");
    }
    if (i === 0) throw incomplete("chunk size is not a hexadecimal number");
    let signature: string | undefined;
    if (i < line.length) {
      const extension = latin1(line.subarray(i));
      if (!extension.startsWith(SIGNATURE_PREFIX)) {
        throw incomplete("chunk size is followed by something other than ;chunk-signature=");
      }
      signature = this.#checkSignature(extension.slice(SIGNATURE_PREFIX.length), "chunk");
    }
    if (this.#options.signed && signature === undefined) {
      throw incomplete("chunk-signature is missing in a signed aws-chunked body");
    }
    if (!this.#options.signed && signature !== undefined) {
      throw incomplete("chunk-signature is present in an unsigned aws-chunked body");
    }
    const expected = this.#options.decodedLength;
    if (expected !== undefined && this.#total + size > expected) {
      throw incomplete("the body is longer than x-amz-decoded-content-length");
    }
    if (this.#hold && size > this.#maxBuffered) {
      throw incomplete(`chunk size ${size} exceeds the ${this.#maxBuffered} bytes svc buffers`);
    }
    this.#total += size;
    this.#signature = signature;
    if (size > 0) {
      this.#remaining = size;
      this.#state = "data";
      return;
    }
    if (expected !== undefined && this.#total !== expected) {
      throw incomplete("the body is shorter than x-amz-decoded-content-length");
    }
    this.#state = "trailer";
    const checked = this.#options.onChunk?.(signature, []);
    if (checked instanceof Promise) await checked;
  }

  #trailerLine(line: Uint8Array): void {
    if (line.length === 0) {
      if (this.#options.signed && this.trailers.size > 0 && this.trailerSignature === undefined) {
        throw incomplete("x-amz-trailer-signature is missing in a signed trailer");
      }
      this.#state = "done";
      return;
    }
    if (!this.#options.trailer) {
      throw incomplete("trailer lines in an aws-chunked body announced without trailer");
    }
    if (this.trailerSignature !== undefined) {
      throw incomplete("x-amz-trailer-signature is not the last trailer line");
    }
    const text = latin1(line);
    const colon = text.indexOf(":");
    const name = text.slice(0, colon).toLowerCase();
    const value = text.slice(colon + 1).replace(/^[\t ]+|[\t ]+$/g, "");
    if (colon <= 0 || !TOKEN.test(name) || !FIELD_VALUE.test(value)) {
      throw incomplete("a trailer line is not name:value");
    }
    if (name === TRAILER_SIGNATURE) {
      if (!this.#options.signed) {
        throw incomplete("x-amz-trailer-signature in an unsigned aws-chunked body");
      }
      this.trailerSignature = this.#checkSignature(value, "trailer");
      return;
    }
    if (this.trailers.has(name)) throw incomplete(`trailer ${name} appears twice`);
    if (this.trailers.size >= MAX_TRAILER_LINES) throw incomplete("too many trailer lines");
    this.trailers.set(name, value);
  }

  /** Validates a signature's shape; returns it without SigV4a's '*' padding. */
  #checkSignature(signature: string, what: string): string {
    const ecdsa = this.#options.ecdsa === true;
    const ok = ecdsa
      ? signature.length === 144 && ECDSA_SIGNATURE.test(signature)
      : HMAC_SIGNATURE.test(signature);
    if (!ok) throw incomplete(`${what} signature is malformed`);
    return ecdsa ? signature.replace(/\*+$/, "") : signature;
  }
}

function hexValue(byte: number): number {
  if (byte >= 48 && byte <= 57) return byte - 48; // 0-9
  if (byte >= 97 && byte <= 102) return byte - 87; // a-f
  if (byte >= 65 && byte <= 70) return byte - 55; // A-F
  return -1;
}

function latin1(bytes: Uint8Array): string {
  // Lines are at most MAX_LINE bytes, well within the argument limit of one call.
  return String.fromCharCode.apply(null, bytes as unknown as number[]);
}
