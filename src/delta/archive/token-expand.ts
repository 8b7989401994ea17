/**
 * One deflate stream to its token record (expansion). The stream is parsed block by block and
 * written as it goes: the block header byte, the stored block's bytes or the dynamic header bits,
 * then runs of literals each followed by a match or the end of the block. No window is kept: a
 * match is written as its length and distance, exactly as coded.
 */
import { type ByteSink, type ByteSource, formatProblem, truncated } from "./byte-io.ts";
import { BitRecorder, readDynamicHeader } from "./dynamic-header.ts";
import {
  buildDecoder,
  type Decoder,
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
  TAG_DEFLATE,
} from "./token-format.ts";

const literals = new Uint8Array(MAX_RUN);
const recorder = new BitRecorder();

/** Parses the deflate stream at the source's position and writes its record to `out`. */
export function expandDeflate(src: ByteSource, out: ByteSink): void {
  let bitBuf = 0;
  let bitCount = 0;
  /** Zero bytes added past the end of the input so a lookahead can always be served. */
  let ghostBits = 0;
  const need = (n: number): void => {
    while (bitCount < n) {
      let byte = src.byte();
      if (byte < 0) {
        byte = 0;
        ghostBits += 8;
      }
      bitBuf = (bitBuf | (byte << bitCount)) >>> 0;
      bitCount += 8;
    }
  };
  const drop = (n: number): void => {
    bitBuf >>>= n;
    bitCount -= n;
    if (bitCount < ghostBits) throw truncated("a deflate stream");
  };
  const bits = (n: number): number => {
    need(n);
    const value = bitBuf & ((1 << n) - 1);
    drop(n);
    return value;
  };
  const decode = (decoder: Decoder): number => {
    need(15);
    let entry = decoder.fast[bitBuf & FAST_MASK];
    if (entry === 0) {
      entry = slowDecode(decoder, bitBuf);
      if (entry < 0) throw formatProblem("A deflate stream uses a code its block does not define");
    }
    drop(entry & 15);
    return entry >>> 4;
  };
  const recordedBits = (n: number): number => {
    const value = bits(n);
    recorder.push(value, n);
    return value;
  };

  out.byte(TAG_DEFLATE);
  let final = 0;
  do {
    final = bits(1);
    const type = bits(2);
    out.byte(final | (type << 1));
    if (type === 0) {
      const pad = bitCount & 7;
      out.byte(bits(pad));
      const len = bits(16);
      const nlen = bits(16);
      out.byte(len & 255);
      out.byte(len >> 8);
      out.byte(nlen & 255);
      out.byte(nlen >> 8);
      if (bitCount !== 0 || ghostBits !== 0) throw truncated("a stored block");
      let left = len;
      while (left > 0) {
        const part = src.chunk(left);
        if (part.length === 0) throw truncated("a stored block");
        out.bytes(part);
        left -= part.length;
      }
      continue;
    }
    if (type === 3) throw formatProblem("A deflate stream has a block of reserved type 3");
    let literal: Decoder;
    let distance: Decoder;
    if (type === 1) ({ literal, distance } = fixedCodes());
    else {
      recorder.reset();
      const lengths = readDynamicHeader(recordedBits);
      out.varint(recorder.count);
      out.bytes(recorder.bytes.subarray(0, (recorder.count + 7) >> 3));
      literal = buildDecoder(lengths.literal);
      distance = buildDecoder(lengths.distance);
    }
    let run = 0;
    for (;;) {
      const symbol = decode(literal);
      if (symbol < 256) {
        literals[run++] = symbol;
        if (run === MAX_RUN) {
          writeRun(out, run, RUN_MORE);
          run = 0;
        }
        continue;
      }
      if (symbol === 256) {
        writeRun(out, run, RUN_END);
        break;
      }
      const code = symbol - 257;
      if (code > 28) throw formatProblem(`A deflate stream uses invalid length code ${symbol}`);
      const extra = bits(LENGTH_EXTRA[code]);
      const length = LENGTH_BASE[code] + extra;
      const distCode = decode(distance);
      if (distCode > 29) throw formatProblem(`A deflate stream uses invalid distance code ${distCode}`);
      const dist = DIST_BASE[distCode] + bits(DIST_EXTRA[distCode]) - 1;
      if (code === 27 && extra === 31) {
        // 258 coded as 284 + 31 instead of 285: rare (some encoders), kept by its own run kind.
        writeRun(out, run, RUN_MATCH_284);
      } else {
        writeRun(out, run, RUN_MATCH);
        out.byte(length - 3);
      }
      out.byte(dist & 255);
      out.byte(dist >> 8);
      run = 0;
    }
  } while (!final);
  // The bits left in the last byte: padding, kept as they are.
  out.byte(bits(bitCount & 7));
  // Whole bytes the lookahead took belong to what follows the stream.
  src.unread((bitCount - ghostBits) >> 3);
}

function writeRun(out: ByteSink, run: number, kind: number): void {
  out.varint(run * 4 + kind);
  out.bytes(literals.subarray(0, run));
}
