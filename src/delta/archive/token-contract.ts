/**
 * One token record back to its deflate stream (contraction): the recorded block headers and
 * tokens are Huffman-coded again with the block's own codes (fixed, or the canonical codes of the
 * recorded dynamic header), which gives back the producer's exact bits. No compressor runs.
 */
import { type ByteSink, type ByteSource, formatProblem, truncated } from "./byte-io.ts";
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
import {
  MAX_RUN,
  RUN_END,
  RUN_MATCH,
  RUN_MATCH_284,
  RUN_MORE,
  SEGMENT_BREAK,
  SEGMENT_BYTES,
  SEGMENT_MATCHES,
} from "./token-format.ts";

function damaged(what: string): never {
  throw formatProblem(`The token form is damaged: ${what}`);
}

function byteOf(src: ByteSource): number {
  const byte = src.byte();
  if (byte < 0) throw truncated("a deflate record");
  return byte;
}

export function readVarint(src: ByteSource): number {
  let value = 0;
  let scale = 1;
  for (;;) {
    const byte = byteOf(src);
    value += (byte & 0x7f) * scale;
    if (byte < 0x80) return value;
    scale *= 0x80;
    if (scale > 2 ** 49) damaged("a varint is too long");
  }
}

/** Deflate's bit order into a ByteSink: whole bytes go out at once (bitCount stays below 8). */
export class BitOutput {
  bitBuf = 0;
  bitCount = 0;
  readonly out: ByteSink;

  constructor(out: ByteSink) {
    this.out = out;
  }

  /** Appends `n` <= 16 bits; the caller made room in the sink. */
  put(value: number, n: number): void {
    this.bitBuf |= value << this.bitCount;
    this.bitCount += n;
    while (this.bitCount >= 8) {
      this.out.buf[this.out.pos++] = this.bitBuf & 255;
      this.bitBuf >>>= 8;
      this.bitCount -= 8;
    }
  }
}

const header = new Uint8Array(512);

/** Writes the deflate stream of the record at the source's position (after its tag). */
export function contractDeflate(src: ByteSource, out: ByteSink): void {
  const bits = new BitOutput(out);
  let final = 0;
  do {
    out.room(64);
    const head = byteOf(src);
    if (head > 7) damaged(`block header ${head}`);
    final = head & 1;
    const type = head >> 1;
    bits.put(head, 3);
    if (type === 0) {
      const pad = (8 - bits.bitCount) & 7;
      const padValue = byteOf(src);
      if (padValue >> pad) damaged(`padding ${padValue} of ${pad} bits`);
      bits.put(padValue, pad);
      let len = 0;
      for (let i = 0; i < 4; i++) {
        const byte = byteOf(src);
        if (i < 2) len |= byte << (8 * i);
        out.buf[out.pos++] = byte;
      }
      while (len > 0) {
        const part = src.chunk(len);
        if (part.length === 0) throw truncated("a stored block");
        out.bytes(part);
        len -= part.length;
      }
      continue;
    }
    if (type === 3) damaged("block type 3");
    if (type === 1) {
      const { literalOut, distanceOut } = fixedCodes();
      writeTokens(src, bits, literalOut, distanceOut);
      continue;
    }
    const count = readVarint(src);
    const size = (count + 7) >> 3;
    if (size > header.length) damaged(`dynamic header of ${count} bits`);
    src.read(header, size, "a dynamic header");
    const lengths = readDynamicHeader(bitReader(header, count));
    const replay = bitReader(header, count);
    for (let left = count; left > 0; left -= 16) {
      const n = Math.min(16, left);
      out.room(4);
      bits.put(replay(n), n);
    }
    writeTokens(src, bits, buildEncoder(lengths.literal), buildEncoder(lengths.distance));
  } while (!final);
  const pad = (8 - bits.bitCount) & 7;
  const padValue = byteOf(src);
  if (padValue >> pad) damaged(`final padding ${padValue} of ${pad} bits`);
  out.room(4);
  bits.put(padValue, pad);
}

/** One segment's runs (at most SEGMENT_BYTES plus one run) and its distances. */
const segment = new Uint8Array(SEGMENT_BYTES + MAX_RUN + 64);
const distances = new Uint8Array(2 * SEGMENT_MATCHES);

/**
 * Copies the runs of one segment into `segment` (through its end-of-block run or break) and its
 * distances into `distances`; returns the runs' length and whether the block ended.
 */
function readSegment(src: ByteSource): { length: number; ended: boolean } {
  // Hot path: bytes straight from the source's buffer, the source's methods at its end only.
  const buf = src.buf;
  let pos = src.pos;
  let len = src.len;
  const next = (): number => {
    src.pos = pos;
    const byte = byteOf(src);
    pos = src.pos;
    len = src.len;
    return byte;
  };
  let n = 0;
  let matches = 0;
  let ended = false;
  for (;;) {
    let head = 0;
    for (let scale = 1;; scale *= 0x80) {
      const byte = pos < len ? buf[pos++] : next();
      segment[n++] = byte;
      head += (byte & 0x7f) * scale;
      if (byte < 0x80) break;
      if (scale > 2 ** 21) damaged("a run header is too long");
    }
    if (head === SEGMENT_BREAK) {
      n--;
      break;
    }
    const kind = head & 3;
    const run = (head - kind) / 4;
    if (run > MAX_RUN || n + run + 16 > segment.length) damaged(`a segment past its size (${n})`);
    if (pos + run <= len) {
      if (run > 32) segment.set(buf.subarray(pos, pos + run), n);
      else for (let i = 0; i < run; i++) segment[n + i] = buf[pos + i];
      pos += run;
    } else {
      src.pos = pos;
      src.read(segment.subarray(n), run, "a literal run");
      pos = src.pos;
      len = src.len;
    }
    n += run;
    if (kind === RUN_MATCH) segment[n++] = pos < len ? buf[pos++] : next();
    if (kind === RUN_MATCH || kind === RUN_MATCH_284) matches++;
    if (matches > SEGMENT_MATCHES) damaged(`a segment of more than ${SEGMENT_MATCHES} matches`);
    if (kind === RUN_END) {
      ended = true;
      break;
    }
  }
  src.pos = pos;
  src.read(distances, 2 * matches, "a segment's distances");
  return { length: n, ended };
}

/**
 * The segments of one Huffman-coded block, through its end-of-block code. Hot loop: each segment
 * is coded from memory (its runs, then its distances, read first), the bit buffer in locals.
 */
function writeTokens(src: ByteSource, bits: BitOutput, literal: Encoder, distance: Encoder): void {
  const out = bits.out;
  const litCodes = literal.codes;
  const litLengths = literal.lengths;
  const distCodes = distance.codes;
  const distLengths = distance.lengths;
  for (;;) {
    const { length, ended } = readSegment(src);
    let p = 0;
    let d = 0;
    while (p < length) {
      let head = 0;
      for (let scale = 1;; scale *= 0x80) {
        const byte = segment[p++];
        head += (byte & 0x7f) * scale;
        if (byte < 0x80) break;
      }
      const kind = head & 3;
      const run = (head - kind) / 4;
      out.room(2 * run + 16);
      const outBuf = out.buf;
      let o = out.pos;
      let bitBuf = bits.bitBuf;
      let bitCount = bits.bitCount;
      for (const end = p + run; p < end; p++) {
        const symbol = segment[p];
        const n = litLengths[symbol];
        if (n === 0) damaged(`literal ${symbol} has no code`);
        bitBuf |= litCodes[symbol] << bitCount;
        bitCount += n;
        if (bitCount >= 16) {
          outBuf[o++] = bitBuf & 255;
          outBuf[o++] = (bitBuf >>> 8) & 255;
          bitBuf >>>= 16;
          bitCount -= 16;
        }
      }
      // Back to whole bytes out, fewer than 8 bits held, for the put() calls below.
      while (bitCount >= 8) {
        outBuf[o++] = bitBuf & 255;
        bitBuf >>>= 8;
        bitCount -= 8;
      }
      out.pos = o;
      bits.bitBuf = bitBuf;
      bits.bitCount = bitCount;
      if (kind === RUN_MORE) continue;
      if (kind === RUN_END) {
        if (litLengths[256] === 0) damaged("no end-of-block code");
        bits.put(litCodes[256], litLengths[256]);
        return;
      }
      let code: number;
      let extra: number;
      if (kind === RUN_MATCH) {
        const matchLength = segment[p++];
        code = LENGTH_CODE[matchLength];
        extra = matchLength + 3 - LENGTH_BASE[code];
      } else if (kind === RUN_MATCH_284) {
        code = 27;
        extra = 31;
      } else damaged(`run kind ${kind}`);
      const symbol = 257 + code;
      if (litLengths[symbol] === 0) damaged(`length code ${symbol} has no code`);
      bits.put(litCodes[symbol], litLengths[symbol]);
      bits.put(extra, LENGTH_EXTRA[code]);
      const dist = distances[d] | (distances[d + 1] << 8);
      d += 2;
      if (dist > 32767) damaged(`distance ${dist + 1}`);
      const distCode = DIST_CODE[dist];
      if (distLengths[distCode] === 0) damaged(`distance code ${distCode} has no code`);
      bits.put(distCodes[distCode], distLengths[distCode]);
      bits.put(dist + 1 - DIST_BASE[distCode], DIST_EXTRA[distCode]);
    }
    if (ended) damaged("a block ends without its end-of-block run");
  }
}
