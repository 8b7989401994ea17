/**
 * The gzip container (RFC 1952) around deflate streams: members one after another, each a header
 * (with the optional FEXTRA, FNAME, FCOMMENT and FHCRC fields), a deflate stream and an 8-byte
 * trailer. Headers and trailers become RAW records; whatever follows the last member that does not
 * start like one (zero padding, garbage) is RAW too.
 */
import type { ByteSink, ByteSource } from "../byte-io.ts";
import type { RawRecords } from "./raw-records.ts";
import { expandDeflate } from "../token-expand.ts";

const FHCRC = 2;
const FEXTRA = 4;
const FNAME = 8;
const FCOMMENT = 16;
const RESERVED = 0xe0;

/**
 * Walks every member; returns the number of deflate streams expanded. `ranges` gets each
 * expanded stream's start and end offset in the input.
 */
export function walkGzip(
  src: ByteSource,
  out: ByteSink,
  raw: RawRecords,
  ranges: number[] = [],
): number {
  let streams = 0;
  while (
    src.peek(0) === 0x1f && src.peek(1) === 0x8b && src.peek(2) === 8 &&
    (src.peek(3) & RESERVED) === 0 && src.peek(9) >= 0
  ) {
    const flags = src.peek(3);
    raw.copy(src, 10);
    if (flags & FEXTRA) {
      const xlen = src.peek(0) | (src.peek(1) << 8);
      raw.copy(src, 2 + xlen);
    }
    if (flags & FNAME) copyZeroTerminated(src, raw);
    if (flags & FCOMMENT) copyZeroTerminated(src, raw);
    if (flags & FHCRC) raw.copy(src, 2);
    if (src.peek(0) < 0) break;
    raw.flush();
    const dataStart = src.offset;
    expandDeflate(src, out);
    ranges.push(dataStart, src.offset);
    streams++;
    raw.copy(src, 8);
  }
  raw.rest(src);
  return streams;
}

function copyZeroTerminated(src: ByteSource, raw: RawRecords): void {
  const one = new Uint8Array(1);
  for (;;) {
    const byte = src.byte();
    if (byte < 0) return;
    one[0] = byte;
    raw.bytes(one);
    if (byte === 0) return;
  }
}
