/**
 * One deflate stream to its token record (expansion). The stream is parsed block by block and
 * written as it goes: the block header byte, the stored block's bytes or the dynamic header bits,
 * then runs of literals each followed by a match or the end of the block, in segments whose
 * matches' distances follow their runs. No window is kept: a match is written as its length and
 * distance, exactly as coded.
 */
import { type ByteSink, type ByteSource, formatProblem, truncated } from "./byte-io.ts";
import { BitInput } from "./bit-input.ts";
import { BitRecorder, readDynamicHeader } from "./dynamic-header.ts";
import {
  buildDecoder,
  type Decoder,
  decoderFor,
  DIST_BASE,
  DIST_EXTRA,
  FAST_MASK,
  fixedCodes,
  LENGTH_BASE,
  LENGTH_EXTRA,
  slowDecode,
} from "./huffman.ts";
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

const literals = new Uint8Array(MAX_RUN);
/** The decoders of the dynamic block being read (rebuilt in place for each block). */
const dynamicLiteral = decoderFor(288);
const dynamicDistance = decoderFor(32);
/**
 * The distances of the current segment: written after its runs, not beside each match, so the
 * runs of unchanged content stay byte-identical between two versions even where the matches'
 * distances differ (an edit within 32 KiB before them shifts them); measured ~20% smaller deltas
 * on a minor release with scattered edits.
 */
const distances = new Uint8Array(2 * SEGMENT_MATCHES);
let matches = 0;
/** Run bytes written in the current segment. */
let segmentBytes = 0;
const recorder = new BitRecorder();

/** Parses the deflate stream at the source's position and writes its record to `out`. */
export function expandDeflate(src: ByteSource, out: ByteSink): void {
  const input = new BitInput(src);
  const recordedBits = (n: number): number => {
    const value = input.bits(n);
    recorder.push(value, n);
    return value;
  };
  out.byte(TAG_DEFLATE);
  let final = 0;
  do {
    final = input.bits(1);
    const type = input.bits(2);
    out.byte(final | (type << 1));
    if (type === 0) {
      out.byte(input.bits(input.bitCount & 7));
      const len = input.bits(16);
      const nlen = input.bits(16);
      out.byte(len & 255);
      out.byte(len >> 8);
      out.byte(nlen & 255);
      out.byte(nlen >> 8);
      // Byte aligned now; give back whole bytes read ahead, then copy the block.
      src.unread((input.bitCount - input.ghostBits) >> 3);
      if (input.ghostBits !== 0) throw truncated("a stored block");
      input.bitBuf = 0;
      input.bitCount = 0;
      for (let left = len; left > 0;) {
        const part = src.chunk(left);
        if (part.length === 0) throw truncated("a stored block");
        out.bytes(part);
        left -= part.length;
      }
      continue;
    }
    if (type === 3) throw formatProblem("A deflate stream has a block of reserved type 3");
    if (type === 1) {
      const { literal, distance } = fixedCodes();
      expandTokens(input, out, literal, distance);
    } else {
      recorder.reset();
      const lengths = readDynamicHeader(recordedBits);
      out.varint(recorder.count);
      out.bytes(recorder.bytes.subarray(0, (recorder.count + 7) >> 3));
      const literal = buildDecoder(lengths.literal, dynamicLiteral);
      expandTokens(input, out, literal, buildDecoder(lengths.distance, dynamicDistance));
    }
  } while (!final);
  // The bits left in the last byte: padding, kept as they are.
  out.byte(input.finish());
}

function invalid(what: string): never {
  throw formatProblem(`A deflate stream uses ${what}`);
}

/**
 * The tokens of one Huffman-coded block through its end-of-block code. Hot loop: the bit buffer
 * lives in locals (refilled to 25..32 bits, enough for a literal/length code and its extra bits)
 * and bytes come straight from the source's buffer.
 */
function expandTokens(input: BitInput, out: ByteSink, literal: Decoder, distance: Decoder): void {
  const src = input.src;
  const buf = src.buf;
  let pos = src.pos;
  let len = src.len;
  let bitBuf = input.bitBuf;
  let bitCount = input.bitCount;
  let ghost = input.ghostBits;
  const litFast = literal.fast;
  const distFast = distance.fast;
  let run = 0;
  matches = 0;
  segmentBytes = 0;
  for (;;) {
    while (bitCount <= 24) {
      let byte: number;
      if (pos < len) byte = buf[pos++];
      else {
        src.pos = pos;
        byte = src.byte();
        pos = src.pos;
        len = src.len;
        if (byte < 0) {
          byte = 0;
          ghost += 8;
        }
      }
      bitBuf = (bitBuf | (byte << bitCount)) >>> 0;
      bitCount += 8;
    }
    let entry = litFast[bitBuf & FAST_MASK];
    if (entry === 0) {
      entry = slowDecode(literal, bitBuf);
      if (entry < 0) invalid("a code its block does not define");
    }
    bitBuf >>>= entry & 15;
    bitCount -= entry & 15;
    const symbol = entry >>> 4;
    if (symbol < 256) {
      literals[run++] = symbol;
      if (run === MAX_RUN) {
        writeRun(out, run, RUN_MORE);
        run = 0;
        if (segmentBytes >= SEGMENT_BYTES) endSegment(out, true);
      }
      if (bitCount < ghost) break;
      continue;
    }
    if (symbol === 256) {
      writeRun(out, run, RUN_END);
      endSegment(out, false);
      break;
    }
    const code = symbol - 257;
    if (code > 28) invalid(`length code ${symbol}`);
    const lengthBits = LENGTH_EXTRA[code];
    const extra = bitBuf & ((1 << lengthBits) - 1);
    bitBuf >>>= lengthBits;
    bitCount -= lengthBits;
    while (bitCount <= 24) {
      let byte: number;
      if (pos < len) byte = buf[pos++];
      else {
        src.pos = pos;
        byte = src.byte();
        pos = src.pos;
        len = src.len;
        if (byte < 0) {
          byte = 0;
          ghost += 8;
        }
      }
      bitBuf = (bitBuf | (byte << bitCount)) >>> 0;
      bitCount += 8;
    }
    let distEntry = distFast[bitBuf & FAST_MASK];
    if (distEntry === 0) {
      distEntry = slowDecode(distance, bitBuf);
      if (distEntry < 0) invalid("a distance code its block does not define");
    }
    bitBuf >>>= distEntry & 15;
    bitCount -= distEntry & 15;
    const distCode = distEntry >>> 4;
    if (distCode > 29) invalid(`distance code ${distCode}`);
    const distBits = DIST_EXTRA[distCode];
    if (bitCount < distBits) {
      // At most 13 extra bits after at most 15 code bits: one more byte pair may be needed.
      input.bitBuf = bitBuf;
      input.bitCount = bitCount;
      input.ghostBits = ghost;
      src.pos = pos;
      input.need(distBits);
      bitBuf = input.bitBuf;
      bitCount = input.bitCount;
      ghost = input.ghostBits;
      pos = src.pos;
      len = src.len;
    }
    const dist = DIST_BASE[distCode] + (bitBuf & ((1 << distBits) - 1)) - 1;
    bitBuf >>>= distBits;
    bitCount -= distBits;
    if (bitCount < ghost) break;
    if (code === 27 && extra === 31) {
      // 258 coded as 284 + 31 instead of 285 (some encoders): kept by its own run kind.
      writeRun(out, run, RUN_MATCH_284);
    } else {
      writeRun(out, run, RUN_MATCH);
      out.byte(LENGTH_BASE[code] + extra - 3);
    }
    distances[2 * matches] = dist & 255;
    distances[2 * matches + 1] = dist >> 8;
    run = 0;
    if (++matches === SEGMENT_MATCHES || segmentBytes >= SEGMENT_BYTES) endSegment(out, true);
  }
  src.pos = pos;
  input.bitBuf = bitBuf;
  input.bitCount = bitCount;
  input.ghostBits = ghost;
  if (bitCount < ghost) throw truncated("a deflate stream");
}

/** Ends the segment (with a break when the block goes on): its distances follow its runs. */
function endSegment(out: ByteSink, more: boolean): void {
  if (more) out.byte(SEGMENT_BREAK);
  out.bytes(distances.subarray(0, 2 * matches));
  matches = 0;
  segmentBytes = 0;
}

function writeRun(out: ByteSink, run: number, kind: number): void {
  out.room(run + 16);
  segmentBytes += run + 4;
  const buf = out.buf;
  let o = out.pos;
  let head = run * 4 + kind;
  while (head >= 0x80) {
    buf[o++] = (head & 0x7f) | 0x80;
    head >>>= 7;
  }
  buf[o++] = head;
  if (run > 32) buf.set(literals.subarray(0, run), o);
  else for (let i = 0; i < run; i++) buf[o + i] = literals[i];
  out.pos = o + run;
}
