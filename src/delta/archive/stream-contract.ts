/**
 * One deflate stream in memory (a predicted record's rebuilt tokens, token-stream.ts) back to its
 * exact bits: the blocks' recorded headers, then each token Huffman-coded with its block's codes,
 * as token-contract.ts does for a `D` record read from a file. Contraction of a predicted form
 * (form-contract.ts) codes the model's tokens straight from memory instead of writing them as a
 * `D` record and reading that back.
 */
import { type BitSink, type ByteSink, formatProblem, MemorySink } from "./byte-io.ts";
import { bitReader, readDynamicHeader } from "./dynamic-header.ts";
import {
  buildEncoder,
  DIST_BASE,
  DIST_CODE,
  DIST_EXTRA,
  type Encoder,
  fixedCodes,
  LENGTH_BASE,
  LENGTH_CODE,
  LENGTH_EXTRA,
} from "./huffman.ts";
import { LENGTH_258_AS_284, type TokenBlock, type TokenStream } from "./token-stream.ts";
import { BitOutput } from "./token-contract.ts";

/** Tokens coded between two checks of the sink's room (a token takes at most 48 bits). */
const TOKENS_PER_ROOM = 2048;

function damaged(what: string): never {
  throw formatProblem(`The token form is damaged: ${what}`);
}

/** The Huffman codes of a block (BTYPE 1 or 2). */
function codesOf(block: TokenBlock): { literal: Encoder; distance: Encoder } {
  if (block.head >> 1 === 1) {
    const { literalOut, distanceOut } = fixedCodes();
    return { literal: literalOut, distance: distanceOut };
  }
  if (block.head >> 1 === 2 && block.header && block.headerBits !== undefined) {
    const lengths = readDynamicHeader(bitReader(block.header, block.headerBits));
    return { literal: buildEncoder(lengths.literal), distance: buildEncoder(lengths.distance) };
  }
  damaged(`block byte ${block.head}`);
}

/** A block's first bits: its BFINAL and BTYPE, and a dynamic block's header, verbatim. */
function writeBlockHeader(block: TokenBlock, bits: BitOutput<BitSink>): void {
  const out = bits.out;
  out.room(64);
  bits.put(block.head, 3);
  if (block.head >> 1 !== 2 || !block.header || block.headerBits === undefined) return;
  const replay = bitReader(block.header, block.headerBits);
  for (let left = block.headerBits; left > 0; left -= 16) {
    const n = Math.min(16, left);
    out.room(4);
    bits.put(replay(n), n);
  }
}

function writeEndOfBlock(literal: Encoder, bits: BitOutput<BitSink>): void {
  bits.out.room(4);
  if (literal.lengths[256] === 0) damaged("no end-of-block code");
  bits.put(literal.codes[256], literal.lengths[256]);
}

/** Whole bytes out, then the stream's recorded padding bits. */
function finishStream(bits: BitOutput<BitSink>, finalPadding: number): void {
  bits.out.room(4);
  bits.put(0, 0); // whole bytes out: fewer than 8 bits held
  const pad = (8 - bits.bitCount) & 7;
  if (finalPadding >> pad) damaged(`final padding ${finalPadding} of ${pad} bits`);
  bits.put(finalPadding, pad);
}

/** Writes the deflate stream of `stream` (blocks of BTYPE 1 or 2) to `out`. */
export function contractStream(stream: TokenStream, out: ByteSink): void {
  const bits = new BitOutput<BitSink>(out);
  let k = 0;
  let pos = 0;
  for (const block of stream.blocks) {
    writeBlockHeader(block, bits);
    const { literal, distance } = codesOf(block);
    const end = k + block.tokens;
    if (end > stream.tokenCount) damaged("the blocks count more tokens than the stream");
    pos = writeTokens(stream, k, end, pos, bits, literal, distance);
    k = end;
    writeEndOfBlock(literal, bits);
  }
  if (k !== stream.tokenCount || pos !== stream.content.length) {
    damaged("the blocks do not cover the stream");
  }
  finishStream(bits, stream.finalPadding);
}

/** A run of a stream's bits coded apart (codeRange): its bytes, the last one partly filled. */
export interface CodedBits {
  bytes: Uint8Array;
  bits: number;
}

/** Where a chunk's tokens sit in their stream, for codeRange. */
export interface RangeToCode {
  /** The stream's blocks, all of them. */
  blocks: TokenBlock[];
  /** The range's first token's index in the stream, and its end (exclusive). */
  from: number;
  to: number;
  /** Whether the range ends the stream (it codes an empty block left at its end). */
  last: boolean;
  /** The range's tokens (indexed from `from`), and the content they cover from `contentStart`. */
  lengths: Uint16Array;
  distances: Uint16Array;
  content: Uint8Array;
  contentStart: number;
}

/**
 * Codes one range of a stream's tokens into memory, with the block headers and end-of-block codes
 * that fall in it, so the chunks of a stream are Huffman-coded on the threads that rebuilt them
 * and joined in order by appendCoded. A block's header goes with the range holding its first
 * token (an empty block's with the range it starts at), its end code with the range holding its
 * last token (an empty block's with its header).
 */
export function codeRange(range: RangeToCode): CodedBits {
  const { blocks, from, to, last } = range;
  const sink = new MemorySink((range.content.length - range.contentStart) >> 2);
  const bits = new BitOutput<BitSink>(sink);
  const tokens = { lengths: range.lengths, distances: range.distances, content: range.content };
  let pos = range.contentStart;
  let start = 0;
  for (const block of blocks) {
    const end = start + block.tokens;
    const ownsHeader = (start >= from && start < to) || (last && start === to);
    const empty = end === start;
    if (end > from || ownsHeader) {
      if (start > to || (start === to && !ownsHeader)) break;
      if (ownsHeader) writeBlockHeader(block, bits);
      const { literal, distance } = codesOf(block);
      const a = Math.max(start, from);
      const b = Math.min(end, to);
      if (b > a) pos = writeTokens(tokens, a - from, b - from, pos, bits, literal, distance);
      if ((empty && ownsHeader) || (!empty && end > from && end <= to)) {
        writeEndOfBlock(literal, bits);
      }
    }
    start = end;
  }
  if (start < to) damaged("the blocks count fewer tokens than the stream");
  sink.room(4);
  bits.put(0, 0); // whole bytes out: writeTokens may leave up to 15 bits held
  const bitCount = sink.pos * 8 + bits.bitCount;
  if (bits.bitCount > 0) {
    sink.room(1);
    sink.buf[sink.pos++] = bits.bitBuf & 255;
  }
  return { bytes: sink.take(), bits: bitCount };
}

/**
 * Writes a stream coded in ranges (codeRange, in order) to `out`: their bits joined, then the
 * stream's padding. `tokenCount` and the blocks were checked to agree before the ranges were cut.
 */
export function contractCoded(parts: CodedBits[], finalPadding: number, out: ByteSink): void {
  const bits = new BitOutput<BitSink>(out);
  for (const part of parts) appendCoded(bits, part);
  finishStream(bits, finalPadding);
}

function appendCoded(bits: BitOutput<BitSink>, part: CodedBits): void {
  const out = bits.out as ByteSink;
  const whole = part.bits >> 3;
  const rest = part.bits & 7;
  if (bits.bitCount === 0) {
    out.bytes(part.bytes.subarray(0, whole));
  } else {
    // Every byte shifted by the bits already held: 8 bits in, 8 out.
    const shift = bits.bitCount;
    let held = bits.bitBuf;
    for (let i = 0; i < whole;) {
      const stop = Math.min(whole, i + 65536);
      out.room(stop - i);
      const buf = out.buf;
      let o = out.pos;
      for (; i < stop; i++) {
        held |= part.bytes[i] << shift;
        buf[o++] = held & 255;
        held >>>= 8;
      }
      out.pos = o;
    }
    bits.bitBuf = held;
  }
  if (rest > 0) {
    out.room(4);
    bits.put(part.bytes[whole] & ((1 << rest) - 1), rest);
  }
}

/** Checks that a stream's blocks count its tokens, before its ranges are coded apart. */
export function checkBlocks(blocks: TokenBlock[], tokenCount: number): void {
  let total = 0;
  for (const block of blocks) total += block.tokens;
  if (total !== tokenCount) damaged("the blocks do not cover the stream");
}

/** Codes tokens `from`..`to`-1; returns the content position after them. */
function writeTokens(
  stream: Pick<TokenStream, "lengths" | "distances" | "content">,
  from: number,
  to: number,
  start: number,
  bits: BitOutput<BitSink>,
  literal: Encoder,
  distance: Encoder,
): number {
  const { lengths, distances, content } = stream;
  const out = bits.out;
  const litCodes = literal.codes;
  const litLengths = literal.lengths;
  const distCodes = distance.codes;
  const distLengths = distance.lengths;
  let pos = start;
  for (let k = from; k < to;) {
    const stop = Math.min(to, k + TOKENS_PER_ROOM);
    out.room(6 * (stop - k) + 8);
    const buf = out.buf;
    let o = out.pos;
    let bitBuf = bits.bitBuf;
    let bitCount = bits.bitCount;
    for (; k < stop; k++) {
      const length = lengths[k];
      let symbol: number;
      if (length === 0) {
        symbol = content[pos++];
        if (litLengths[symbol] === 0) damaged(`literal ${symbol} has no code`);
        bitBuf |= litCodes[symbol] << bitCount;
        bitCount += litLengths[symbol];
      } else {
        let code: number;
        let extra: number;
        if (length === LENGTH_258_AS_284) {
          code = 27;
          extra = 31;
          pos += 258;
        } else {
          code = LENGTH_CODE[length - 3];
          extra = length - LENGTH_BASE[code];
          pos += length;
        }
        symbol = 257 + code;
        if (litLengths[symbol] === 0) damaged(`length code ${symbol} has no code`);
        bitBuf |= litCodes[symbol] << bitCount;
        bitCount += litLengths[symbol];
        if (bitCount >= 16) {
          buf[o++] = bitBuf & 255;
          buf[o++] = (bitBuf >>> 8) & 255;
          bitBuf >>>= 16;
          bitCount -= 16;
        }
        bitBuf |= extra << bitCount;
        bitCount += LENGTH_EXTRA[code];
        if (bitCount >= 16) {
          buf[o++] = bitBuf & 255;
          buf[o++] = (bitBuf >>> 8) & 255;
          bitBuf >>>= 16;
          bitCount -= 16;
        }
        const dist = distances[k] - 1;
        if (dist < 0 || dist > 32767) damaged(`distance ${dist + 1}`);
        const distCode = DIST_CODE[dist];
        if (distLengths[distCode] === 0) damaged(`distance code ${distCode} has no code`);
        bitBuf |= distCodes[distCode] << bitCount;
        bitCount += distLengths[distCode];
        if (bitCount >= 16) {
          buf[o++] = bitBuf & 255;
          buf[o++] = (bitBuf >>> 8) & 255;
          bitBuf >>>= 16;
          bitCount -= 16;
        }
        bitBuf |= (dist + 1 - DIST_BASE[distCode]) << bitCount;
        bitCount += DIST_EXTRA[distCode];
      }
      if (bitCount >= 16) {
        buf[o++] = bitBuf & 255;
        buf[o++] = (bitBuf >>> 8) & 255;
        bitBuf >>>= 16;
        bitCount -= 16;
      }
    }
    out.pos = o;
    // Up to 15 bits held: BitOutput.put takes that (it writes out whole bytes after adding).
    bits.bitBuf = bitBuf;
    bits.bitCount = bitCount;
  }
  if (pos > stream.content.length) damaged("the tokens run past the content");
  return pos;
}
