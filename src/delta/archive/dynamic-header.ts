/**
 * The header of a dynamic-Huffman block (RFC 1951 3.2.7): HLIT, HDIST, HCLEN, the code length
 * code, then the literal/length and distance code lengths run-length coded with it. Expansion
 * records these bits verbatim (a producer's header can be coded many ways for the same lengths)
 * and contraction both writes them back and decodes them again to learn the block's codes.
 */
import { formatProblem } from "./byte-io.ts";
import { buildDecoder, decoderFor } from "./huffman.ts";

/** Order of the code length code's lengths in the header. */
const ORDER = [16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15];

export interface DynamicLengths {
  literal: Uint8Array;
  distance: Uint8Array;
}

/** The code length code's decoder, rebuilt for every header. */
const lengthCode = decoderFor(19);

/** Reads the header through `bits(n)` (the next n bits, first bit lowest). */
export function readDynamicHeader(bits: (n: number) => number): DynamicLengths {
  const nlit = bits(5) + 257;
  const ndist = bits(5) + 1;
  const nclen = bits(4) + 4;
  // zlib refuses more than 286 literal/length or 30 distance codes; so do we (the extra symbols
  // are invalid in the data anyway).
  if (nlit > 286 || ndist > 30) {
    throw formatProblem(`A dynamic block declares ${nlit}/${ndist} codes`);
  }
  const clen = new Uint8Array(19);
  for (let i = 0; i < nclen; i++) clen[ORDER[i]] = bits(3);
  const { counts, sorted } = buildDecoder(clen, lengthCode);
  const lengths = new Uint8Array(nlit + ndist);
  let i = 0;
  while (i < lengths.length) {
    // Bit by bit along the canonical code (at most 7 bits, once per length): the header's bits
    // are recorded one by one anyway.
    let entry = -1;
    for (let length = 1, code = 0, first = 0, index = 0; length <= 7; length++) {
      code |= bits(1);
      const count = counts[length];
      if (code - first < count) {
        entry = sorted[index + code - first];
        break;
      }
      index += count;
      first = (first + count) << 1;
      code <<= 1;
    }
    if (entry < 0) throw formatProblem("A dynamic block's code lengths are not decodable");
    if (entry < 16) {
      lengths[i++] = entry;
      continue;
    }
    let repeat: number;
    let value = 0;
    if (entry === 16) {
      if (i === 0) throw formatProblem("A dynamic block repeats a code length before the first");
      value = lengths[i - 1];
      repeat = 3 + bits(2);
    } else if (entry === 17) repeat = 3 + bits(3);
    else repeat = 11 + bits(7);
    if (i + repeat > lengths.length) {
      throw formatProblem("A dynamic block's code lengths overrun their count");
    }
    lengths.fill(value, i, i + repeat);
    i += repeat;
  }
  const literal = new Uint8Array(288);
  literal.set(lengths.subarray(0, nlit));
  if (literal[256] === 0) throw formatProblem("A dynamic block has no end-of-block code");
  const distance = new Uint8Array(32);
  distance.set(lengths.subarray(nlit));
  return { literal, distance };
}

/** Collects bits (first bit lowest in each byte) as a header is read, to store them verbatim. */
export class BitRecorder {
  bytes = new Uint8Array(512);
  count = 0;

  push(value: number, n: number): void {
    for (let i = 0; i < n; i++) {
      const byte = this.count >> 3;
      if (byte === this.bytes.length) {
        const grown = new Uint8Array(this.bytes.length * 2);
        grown.set(this.bytes);
        this.bytes = grown;
      }
      if ((value >> i) & 1) this.bytes[byte] |= 1 << (this.count & 7);
      this.count++;
    }
  }

  reset(): void {
    this.bytes.fill(0, 0, (this.count + 7) >> 3);
    this.count = 0;
  }
}

/** Reads bits back from recorded bytes. */
export function bitReader(bytes: Uint8Array, count: number): (n: number) => number {
  let at = 0;
  return (n) => {
    if (at + n > count) throw formatProblem("A recorded dynamic header ends early");
    let value = 0;
    for (let done = 0; done < n;) {
      const shift = at & 7;
      const take = Math.min(8 - shift, n - done);
      value |= ((bytes[at >> 3] >> shift) & ((1 << take) - 1)) << done;
      done += take;
      at += take;
    }
    return value;
  };
}
