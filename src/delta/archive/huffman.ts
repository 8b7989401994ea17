/**
 * Deflate's Huffman codes (RFC 1951 section 3.2): canonical codes from code lengths, a table
 * decoder for expansion and per-symbol codes for contraction. A code is fully determined by its
 * lengths, so the codes recorded by expansion (the dynamic header bits) give back exactly the bit
 * patterns the producer wrote.
 */
import { formatProblem } from "./byte-io.ts";

export const MAX_BITS = 15;
/** Bits resolved by one table lookup; longer codes (rare symbols) take the canonical walk. */
export const FAST_BITS = 10;
export const FAST_MASK = (1 << FAST_BITS) - 1;

/** Symbol base lengths and extra bits of length codes 257..285. */
export const LENGTH_BASE = new Uint16Array([
  3,
  4,
  5,
  6,
  7,
  8,
  9,
  10,
  11,
  13,
  15,
  17,
  19,
  23,
  27,
  31,
  35,
  43,
  51,
  59,
  67,
  83,
  99,
  115,
  131,
  163,
  195,
  227,
  258,
]);
export const LENGTH_EXTRA = new Uint8Array([
  0,
  0,
  0,
  0,
  0,
  0,
  0,
  0,
  1,
  1,
  1,
  1,
  2,
  2,
  2,
  2,
  3,
  3,
  3,
  3,
  4,
  4,
  4,
  4,
  5,
  5,
  5,
  5,
  0,
]);
/** Base distances and extra bits of distance codes 0..29. */
export const DIST_BASE = new Uint16Array([
  1,
  2,
  3,
  4,
  5,
  7,
  9,
  13,
  17,
  25,
  33,
  49,
  65,
  97,
  129,
  193,
  257,
  385,
  513,
  769,
  1025,
  1537,
  2049,
  3073,
  4097,
  6145,
  8193,
  12289,
  16385,
  24577,
]);
export const DIST_EXTRA = new Uint8Array([
  0,
  0,
  0,
  0,
  1,
  1,
  2,
  2,
  3,
  3,
  4,
  4,
  5,
  5,
  6,
  6,
  7,
  7,
  8,
  8,
  9,
  9,
  10,
  10,
  11,
  11,
  12,
  12,
  13,
  13,
]);

/** Length code index (symbol - 257) of each match length 3..258, as deflate assigns it. */
export const LENGTH_CODE = new Uint8Array(256);
/** Distance code of each distance - 1 (0..32767). */
export const DIST_CODE = new Uint8Array(32768);
for (let code = 0; code < 29; code++) {
  for (let i = 0; i < 1 << LENGTH_EXTRA[code]; i++) {
    const length = LENGTH_BASE[code] + i;
    if (length <= 258) LENGTH_CODE[length - 3] = code;
  }
}
LENGTH_CODE[255] = 28;
for (let code = 0; code < 30; code++) {
  for (let i = 0; i < 1 << DIST_EXTRA[code]; i++) DIST_CODE[DIST_BASE[code] - 1 + i] = code;
}

/** Bit reversal of every 15-bit value (deflate sends Huffman codes most significant bit first). */
const REVERSED = new Uint16Array(1 << MAX_BITS);
for (let i = 1; i < REVERSED.length; i++) {
  REVERSED[i] = (REVERSED[i >> 1] >> 1) | ((i & 1) << (MAX_BITS - 1));
}

/**
 * Canonical codes of `lengths` (RFC 1951 3.2.2), bit-reversed, into `codes`, and the count of
 * codes of each length into `counts`; throws when the lengths over-subscribe.
 */
function canonical(lengths: Uint8Array, counts: Uint16Array, codes: Uint16Array): void {
  counts.fill(0);
  for (let symbol = 0; symbol < lengths.length; symbol++) counts[lengths[symbol]]++;
  counts[0] = 0;
  let left = 1;
  for (let bits = 1; bits <= MAX_BITS; bits++) {
    left = (left << 1) - counts[bits];
    if (left < 0) throw formatProblem("A Huffman code is over-subscribed");
  }
  const next = new Uint16Array(MAX_BITS + 2);
  let code = 0;
  for (let bits = 1; bits <= MAX_BITS; bits++) {
    code = (code + counts[bits - 1]) << 1;
    next[bits] = code;
  }
  for (let symbol = 0; symbol < lengths.length; symbol++) {
    const length = lengths[symbol];
    codes[symbol] = length === 0 ? 0 : REVERSED[next[length]++] >> (MAX_BITS - length);
  }
}

/**
 * A decoder: `fast[bits & FAST_MASK]` is `symbol << 4 | length` for codes of up to FAST_BITS bits
 * and 0 otherwise; then `slowDecode` walks the canonical code bit by bit.
 */
export interface Decoder {
  fast: Int32Array;
  counts: Uint16Array;
  /** Symbols ordered by code length, then value (the canonical order). */
  sorted: Uint16Array;
  /** Scratch: each symbol's reversed code. */
  codes: Uint16Array;
}

/** An empty decoder for up to `symbols` symbols, for `buildDecoder` to fill again and again. */
export function decoderFor(symbols: number): Decoder {
  return {
    fast: new Int32Array(1 << FAST_BITS),
    counts: new Uint16Array(MAX_BITS + 1),
    sorted: new Uint16Array(symbols),
    codes: new Uint16Array(symbols),
  };
}

/** The decoder of `lengths`, built into `into` (reused: a block's decoder dies with the block). */
export function buildDecoder(lengths: Uint8Array, into = decoderFor(lengths.length)): Decoder {
  const { fast, counts, sorted, codes } = into;
  canonical(lengths, counts, codes);
  fast.fill(0);
  const offsets = new Uint16Array(MAX_BITS + 2);
  for (let bits = 1; bits <= MAX_BITS; bits++) offsets[bits + 1] = offsets[bits] + counts[bits];
  for (let symbol = 0; symbol < lengths.length; symbol++) {
    const length = lengths[symbol];
    if (length === 0) continue;
    sorted[offsets[length]++] = symbol;
    if (length <= FAST_BITS) {
      const entry = (symbol << 4) | length;
      for (let i = codes[symbol]; i < 1 << FAST_BITS; i += 1 << length) fast[i] = entry;
    }
  }
  return into;
}

/**
 * Decodes one symbol from the low bits of `bits` (at least MAX_BITS valid) the long way:
 * `symbol << 4 | length`, or -1 when no code matches (an incomplete code's unused pattern).
 */
export function slowDecode(decoder: Decoder, bits: number): number {
  let code = 0;
  let first = 0;
  let index = 0;
  for (let length = 1; length <= MAX_BITS; length++) {
    code |= (bits >>> (length - 1)) & 1;
    const count = decoder.counts[length];
    if (code - first < count) return (decoder.sorted[index + code - first] << 4) | length;
    index += count;
    first = (first + count) << 1;
    code <<= 1;
  }
  return -1;
}

/** An encoder: the bit-reversed code and the length of each symbol (length 0: not in the code). */
export interface Encoder {
  codes: Uint16Array;
  lengths: Uint8Array;
}

export function buildEncoder(lengths: Uint8Array): Encoder {
  const codes = new Uint16Array(lengths.length);
  canonical(lengths, new Uint16Array(MAX_BITS + 1), codes);
  return { codes, lengths };
}

/** The fixed code of block type 1 (RFC 1951 3.2.6). */
export const FIXED_LITERAL_LENGTHS = new Uint8Array(288).fill(8, 0, 144).fill(9, 144, 256)
  .fill(7, 256, 280).fill(8, 280, 288);
export const FIXED_DISTANCE_LENGTHS = new Uint8Array(32).fill(5);

/** Lazily built fixed decoders/encoders (one per worker). */
let fixed: { literal: Decoder; distance: Decoder; literalOut: Encoder; distanceOut: Encoder };
export function fixedCodes(): typeof fixed {
  fixed ??= {
    literal: buildDecoder(FIXED_LITERAL_LENGTHS),
    distance: buildDecoder(FIXED_DISTANCE_LENGTHS),
    literalOut: buildEncoder(FIXED_LITERAL_LENGTHS),
    distanceOut: buildEncoder(FIXED_DISTANCE_LENGTHS),
  };
  return fixed;
}
