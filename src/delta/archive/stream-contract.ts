/**
 * One deflate stream in memory (a predicted record's rebuilt tokens, token-stream.ts) back to its
 * exact bits: the blocks' recorded headers, then each token Huffman-coded with its block's codes,
 * as token-contract.ts does for a `D` record read from a file. Contraction of a predicted form
 * (form-contract.ts) codes the model's tokens straight from memory instead of writing them as a
 * `D` record and reading that back.
 */
import { type ByteSink, formatProblem } from "./byte-io.ts";
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
import { LENGTH_258_AS_284, type TokenStream } from "./token-stream.ts";
import { BitOutput } from "./token-contract.ts";

/** Tokens coded between two checks of the sink's room (a token takes at most 48 bits). */
const TOKENS_PER_ROOM = 2048;

function damaged(what: string): never {
  throw formatProblem(`The token form is damaged: ${what}`);
}

/** Writes the deflate stream of `stream` (blocks of BTYPE 1 or 2) to `out`. */
export function contractStream(stream: TokenStream, out: ByteSink): void {
  const bits = new BitOutput(out);
  let k = 0;
  let pos = 0;
  for (const block of stream.blocks) {
    out.room(64);
    bits.put(block.head, 3);
    let literal: Encoder;
    let distance: Encoder;
    if (block.head >> 1 === 1) {
      ({ literalOut: literal, distanceOut: distance } = fixedCodes());
    } else if (block.head >> 1 === 2 && block.header && block.headerBits !== undefined) {
      const count = block.headerBits;
      const lengths = readDynamicHeader(bitReader(block.header, count));
      const replay = bitReader(block.header, count);
      for (let left = count; left > 0; left -= 16) {
        const n = Math.min(16, left);
        out.room(4);
        bits.put(replay(n), n);
      }
      literal = buildEncoder(lengths.literal);
      distance = buildEncoder(lengths.distance);
    } else damaged(`block byte ${block.head}`);
    const end = k + block.tokens;
    if (end > stream.tokenCount) damaged("the blocks count more tokens than the stream");
    pos = writeTokens(stream, k, end, pos, bits, literal, distance);
    k = end;
    out.room(4);
    if (literal.lengths[256] === 0) damaged("no end-of-block code");
    bits.put(literal.codes[256], literal.lengths[256]);
  }
  if (k !== stream.tokenCount || pos !== stream.content.length) {
    damaged("the blocks do not cover the stream");
  }
  out.room(4);
  bits.put(0, 0); // whole bytes out: fewer than 8 bits held
  const pad = (8 - bits.bitCount) & 7;
  if (stream.finalPadding >> pad) damaged(`final padding ${stream.finalPadding} of ${pad} bits`);
  bits.put(stream.finalPadding, pad);
}

/** Codes tokens `from`..`to`-1; returns the content position after them. */
function writeTokens(
  stream: TokenStream,
  from: number,
  to: number,
  start: number,
  bits: BitOutput,
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
