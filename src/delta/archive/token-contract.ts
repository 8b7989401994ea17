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
import { MAX_RUN, RUN_END, RUN_MATCH, RUN_MATCH_284, RUN_MORE } from "./token-format.ts";

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

/** Writes the deflate stream of the record at the source's position (after its tag). */
export function contractDeflate(src: ByteSource, out: ByteSink): void {
  let bitBuf = 0;
  let bitCount = 0;
  /** Appends `n` <= 16 bits; whole bytes go out at once (bitCount stays below 8). */
  const put = (value: number, n: number): void => {
    bitBuf |= value << bitCount;
    bitCount += n;
    while (bitCount >= 8) {
      out.buf[out.pos++] = bitBuf & 255;
      bitBuf >>>= 8;
      bitCount -= 8;
    }
  };
  const header = new Uint8Array(512);
  let final = 0;
  do {
    out.room(64);
    const head = byteOf(src);
    if (head > 7) damaged(`block header ${head}`);
    final = head & 1;
    const type = head >> 1;
    put(head, 3);
    if (type === 0) {
      const pad = (8 - bitCount) & 7;
      const padValue = byteOf(src);
      if (padValue >> pad) damaged(`padding ${padValue} of ${pad} bits`);
      put(padValue, pad);
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
    let literal: Encoder;
    let distance: Encoder;
    if (type === 1) ({ literalOut: literal, distanceOut: distance } = fixedCodes());
    else {
      const count = readVarint(src);
      const size = (count + 7) >> 3;
      if (size > header.length) damaged(`dynamic header of ${count} bits`);
      src.read(header, size, "a dynamic header");
      const lengths = readDynamicHeader(bitReader(header, count));
      const replay = bitReader(header, count);
      for (let left = count; left > 0; left -= 16) {
        const n = Math.min(16, left);
        out.room(4);
        put(replay(n), n);
      }
      literal = buildEncoder(lengths.literal);
      distance = buildEncoder(lengths.distance);
    }
    writeTokens(src, out, literal, distance, put);
  } while (!final);
  const pad = (8 - bitCount) & 7;
  const padValue = byteOf(src);
  if (padValue >> pad) damaged(`final padding ${padValue} of ${pad} bits`);
  out.room(4);
  put(padValue, pad);
}

/** The runs of one Huffman-coded block, through its end-of-block code. */
function writeTokens(
  src: ByteSource,
  out: ByteSink,
  literal: Encoder,
  distance: Encoder,
  put: (value: number, n: number) => void,
): void {
  const litCodes = literal.codes;
  const litLengths = literal.lengths;
  const distCodes = distance.codes;
  const distLengths = distance.lengths;
  for (;;) {
    const head = readVarint(src);
    const kind = head & 3;
    let run = (head - kind) / 4;
    if (run > MAX_RUN) damaged(`a literal run of ${run}`);
    out.room(2 * run + 16);
    while (run > 0) {
      const part = src.chunk(run);
      if (part.length === 0) throw truncated("a literal run");
      for (let i = 0; i < part.length; i++) {
        const symbol = part[i];
        const n = litLengths[symbol];
        if (n === 0) damaged(`literal ${symbol} has no code`);
        put(litCodes[symbol], n);
      }
      run -= part.length;
    }
    if (kind === RUN_MORE) continue;
    if (kind === RUN_END) {
      if (litLengths[256] === 0) damaged("no end-of-block code");
      put(litCodes[256], litLengths[256]);
      return;
    }
    let code: number;
    let extra: number;
    if (kind === RUN_MATCH) {
      const length = byteOf(src);
      code = LENGTH_CODE[length];
      extra = length + 3 - LENGTH_BASE[code];
    } else {
      code = 27;
      extra = 31;
    }
    const symbol = 257 + code;
    if (litLengths[symbol] === 0) damaged(`length code ${symbol} has no code`);
    put(litCodes[symbol], litLengths[symbol]);
    put(extra, LENGTH_EXTRA[code]);
    const dist = byteOf(src) | (byteOf(src) << 8);
    if (dist > 32767) damaged(`distance ${dist + 1}`);
    const distCode = DIST_CODE[dist];
    if (distLengths[distCode] === 0) damaged(`distance code ${distCode} has no code`);
    put(distCodes[distCode], distLengths[distCode]);
    put(dist + 1 - DIST_BASE[distCode], DIST_EXTRA[distCode]);
  }
}
