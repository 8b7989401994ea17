/**
 * One deflate stream's token record (`D`, docs/DELTA.md "Format (version 1)") in memory: its
 * blocks, its tokens and the content they decode to. The predicted form (predicted-record.ts)
 * is made from it and rebuilds it; both directions go through here so the record bytes they read
 * and write follow one reading of the format.
 */
import { type ByteSink, type ByteSource, formatProblem, truncated } from "./byte-io.ts";
import { readVarint } from "./token-contract.ts";
import {
  MAX_RUN,
  RUN_END,
  RUN_MATCH,
  RUN_MATCH_284,
  RUN_MORE,
  SEGMENT_BREAK,
  SEGMENT_BYTES,
  SEGMENT_MATCHES,
  TAG_DEFLATE,
} from "./token-format.ts";

/** A token's length value for 258 coded as code 284 + 31 (some encoders) instead of 285. */
export const LENGTH_258_AS_284 = 259;

export interface TokenBlock {
  /** The record's block byte: bit 0 BFINAL, bits 1-2 BTYPE (1 fixed, 2 dynamic). */
  head: number;
  /** A dynamic block's header bits, verbatim, and their count. */
  header?: Uint8Array;
  headerBits?: number;
  /** Tokens in the block, its end-of-block code not counted. */
  tokens: number;
}

export interface TokenStream {
  blocks: TokenBlock[];
  /** Per token: 0 literal, 3..258 a match, LENGTH_258_AS_284. */
  lengths: Uint16Array;
  /** Per token: a match's distance (1..32768); 0 for literals. */
  distances: Uint16Array;
  tokenCount: number;
  content: Uint8Array;
  /** The padding bits after the stream's last bit (the record's final byte). */
  finalPadding: number;
}

/** Why a `D` record is kept as it is: too large for memory, or a block kind not modelled. */
export type NotModelled = { skip: string };

function damaged(what: string): never {
  throw formatProblem(`The token form is damaged: ${what}`);
}

function byteOf(src: ByteSource): number {
  const byte = src.byte();
  if (byte < 0) throw truncated("a deflate record");
  return byte;
}

class Growing {
  bytes: Uint8Array;
  lengths: Uint16Array;
  distances: Uint16Array;
  size = 0;
  tokens = 0;
  constructor() {
    this.bytes = new Uint8Array(1 << 16);
    this.lengths = new Uint16Array(1 << 14);
    this.distances = new Uint16Array(1 << 14);
  }
  room(bytes: number): void {
    if (this.size + bytes > this.bytes.length) {
      const next = new Uint8Array(Math.max(this.bytes.length * 2, this.size + bytes));
      next.set(this.bytes.subarray(0, this.size));
      this.bytes = next;
    }
    if (this.tokens + bytes + 1 > this.lengths.length) {
      const size = Math.max(this.lengths.length * 2, this.tokens + bytes + 1);
      const lengths = new Uint16Array(size);
      lengths.set(this.lengths.subarray(0, this.tokens));
      const distances = new Uint16Array(size);
      distances.set(this.distances.subarray(0, this.tokens));
      this.lengths = lengths;
      this.distances = distances;
    }
  }
}

/**
 * Reads the `D` record at the source's position (its tag already read) into memory, or says why
 * not (`maxContent` exceeded, a stored block). Either way the source ends after the record.
 */
export function readTokenStream(src: ByteSource, maxContent: number): TokenStream | NotModelled {
  const g = new Growing();
  const blocks: TokenBlock[] = [];
  let skip: string | undefined;
  const pendingMatches: number[] = []; // token indexes of the segment's matches
  for (;;) {
    const head = byteOf(src);
    if (head >= 8) damaged(`block byte ${head}`);
    const type = head >> 1;
    if (type === 0) {
      skip ??= "a stored block";
      byteOf(src);
      const len = byteOf(src) | (byteOf(src) << 8);
      for (let i = 0; i < 2; i++) byteOf(src);
      for (let left = len; left > 0;) {
        const part = src.chunk(left);
        if (part.length === 0) throw truncated("a stored block");
        left -= part.length;
      }
    } else {
      if (type === 3) damaged("block type 3");
      const block: TokenBlock = { head, tokens: 0 };
      if (type === 2) {
        const bits = readVarint(src);
        const header = new Uint8Array((bits + 7) >> 3);
        src.read(header, header.length, "a dynamic header");
        block.header = header;
        block.headerBits = bits;
      }
      const first = g.tokens;
      for (let ended = false; !ended;) {
        // One segment: runs, then the distances of its matches.
        for (;;) {
          const value = readVarint(src);
          const run = Math.floor(value / 4);
          const kind = value & 3;
          if (run > MAX_RUN) damaged("a literal run is too long");
          if (skip === undefined && g.size + run + 258 > maxContent) {
            skip = `its content is over ${maxContent} bytes`;
          }
          if (skip === undefined) g.room(run + 258);
          for (let left = run; left > 0;) {
            const part = src.chunk(left);
            if (part.length === 0) throw truncated("a literal run");
            if (skip === undefined) {
              g.bytes.set(part, g.size);
              g.size += part.length;
              g.lengths.fill(0, g.tokens, g.tokens + part.length);
              g.distances.fill(0, g.tokens, g.tokens + part.length);
              g.tokens += part.length;
            }
            left -= part.length;
          }
          if (kind === RUN_MATCH || kind === RUN_MATCH_284) {
            const length = kind === RUN_MATCH ? byteOf(src) + 3 : LENGTH_258_AS_284;
            if (skip === undefined) {
              g.lengths[g.tokens] = length;
              pendingMatches.push(g.tokens);
              g.tokens++;
              g.size += length === LENGTH_258_AS_284 ? 258 : length; // bytes filled in below
            } else pendingMatches.push(-1);
            continue;
          }
          if (kind === RUN_END) {
            ended = true;
            break;
          }
          if (kind === RUN_MORE && run === 0) break; // SEGMENT_BREAK
        }
        for (const at of pendingMatches) {
          const distance = (byteOf(src) | (byteOf(src) << 8)) + 1;
          if (at >= 0) g.distances[at] = distance;
        }
        pendingMatches.length = 0;
      }
      block.tokens = g.tokens - first;
      blocks.push(block);
    }
    if (head & 1) break;
  }
  const finalPadding = byteOf(src);
  if (skip !== undefined) return { skip };
  const stream: TokenStream = {
    blocks,
    lengths: g.lengths,
    distances: g.distances,
    tokenCount: g.tokens,
    content: g.bytes,
    finalPadding,
  };
  const content = fillMatches(stream, g.size);
  if (content === null) return { skip: "a match reaches before the stream's start" };
  stream.content = content;
  return stream;
}

/**
 * The content with every match's bytes copied from behind it (the literals are in place): the
 * record lists a match's distance only after its segment, so the copies wait until here. null
 * when a match reaches before the stream's start (valid tokens, but no content to model).
 */
function fillMatches(stream: TokenStream, size: number): Uint8Array | null {
  const { lengths, distances, content } = stream;
  let pos = 0;
  for (let k = 0; k < stream.tokenCount; k++) {
    const length = lengths[k];
    if (length === 0) {
      pos++;
      continue;
    }
    const n = length === LENGTH_258_AS_284 ? 258 : length;
    const from = pos - distances[k];
    if (from < 0) return null;
    for (let i = 0; i < n; i++) content[pos + i] = content[from + i];
    pos += n;
  }
  if (pos !== size) damaged("the tokens do not cover the content");
  return content.subarray(0, size);
}

/** Writes the stream as a `D` record (tag included), in the segments expansion would use. */
export function writeTokenStream(out: ByteSink, stream: TokenStream): void {
  const { lengths, distances, content } = stream;
  out.byte(TAG_DEFLATE);
  let k = 0;
  let pos = 0;
  const segment: number[] = [];
  let segmentBytes = 0;
  const endSegment = (more: boolean) => {
    if (more) out.byte(SEGMENT_BREAK);
    for (const distance of segment) {
      out.byte((distance - 1) & 255);
      out.byte((distance - 1) >> 8);
    }
    segment.length = 0;
    segmentBytes = 0;
  };
  const writeRun = (start: number, run: number, kind: number) => {
    out.varint(run * 4 + kind);
    out.bytes(content.subarray(start, start + run));
    segmentBytes += run + 4;
  };
  for (const block of stream.blocks) {
    out.byte(block.head);
    if (block.header !== undefined) {
      out.varint(block.headerBits!);
      out.bytes(block.header);
    }
    const end = k + block.tokens;
    let runStart = pos;
    let run = 0;
    for (; k < end; k++) {
      const length = lengths[k];
      if (length === 0) {
        run++;
        pos++;
        if (run === MAX_RUN) {
          writeRun(runStart, run, RUN_MORE);
          runStart = pos;
          run = 0;
          if (segmentBytes >= SEGMENT_BYTES) endSegment(true);
        }
        continue;
      }
      if (length === LENGTH_258_AS_284) writeRun(runStart, run, RUN_MATCH_284);
      else {
        writeRun(runStart, run, RUN_MATCH);
        out.byte(length - 3);
      }
      segment.push(distances[k]);
      pos += length === LENGTH_258_AS_284 ? 258 : length;
      runStart = pos;
      run = 0;
      if (segment.length === SEGMENT_MATCHES || segmentBytes >= SEGMENT_BYTES) endSegment(true);
    }
    writeRun(runStart, run, RUN_END);
    endSegment(false);
  }
  out.byte(stream.finalPadding);
}
