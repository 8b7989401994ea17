/**
 * The zip container (APPNOTE 4.3) walked from its first local header: each member's header is
 * RAW, a deflated member's data becomes a deflate record, any other data is RAW. Where the header
 * gives no size (general-purpose bit 3), the deflate stream's own end tells where the data ends
 * and the data descriptor after it is RAW. Everything from the first byte that is not a local
 * header on (central directory, end records, comments, an unsupported member) is RAW: always exact,
 * at worst not delta-friendly.
 */
import { type ByteSink, type ByteSource, isFormatProblem } from "../byte-io.ts";
import type { RawRecords } from "./raw-records.ts";
import { expandDeflate } from "../token-expand.ts";

const LOCAL = 0x04034b50;
const CENTRAL = 0x02014b50;
const END = 0x06054b50;
const END64 = 0x06064b50;
const DESCRIPTOR = 0x08074b50;
const ENCRYPTED = 1;
const SIZES_LATER = 8;
const DEFLATED = 8;

const header = new Uint8Array(30 + 2 * 65535);

function u16(bytes: Uint8Array, at: number): number {
  return bytes[at] | (bytes[at + 1] << 8);
}
function u32(bytes: Uint8Array, at: number): number {
  return (bytes[at] | (bytes[at + 1] << 8) | (bytes[at + 2] << 16) | (bytes[at + 3] << 24)) >>> 0;
}
function u64(bytes: Uint8Array, at: number): number {
  return u32(bytes, at) + u32(bytes, at + 4) * 2 ** 32;
}
function peek32(src: ByteSource, ahead: number): number {
  let value = 0;
  for (let i = 3; i >= 0; i--) {
    const byte = src.peek(ahead + i);
    if (byte < 0) return -1;
    value = value * 256 + byte;
  }
  return value;
}

/**
 * Walks the members; returns the number of deflate streams expanded. `ranges` gets each expanded
 * stream's start and end offset in the input.
 */
export function walkZip(
  src: ByteSource,
  out: ByteSink,
  raw: RawRecords,
  ranges: number[] = [],
): number {
  let streams = 0;
  while (peek32(src, 0) === LOCAL && src.peek(29) >= 0) {
    const start = src.offset;
    for (let i = 0; i < 30; i++) header[i] = src.peek(i);
    const flags = u16(header, 6);
    const method = u16(header, 8);
    const fieldsLength = u16(header, 26) + u16(header, 28);
    if (src.peek(30 + fieldsLength - 1) < 0) break;
    src.read(header, 30 + fieldsLength, "a zip local header");
    let size = u32(header, 18);
    if (size === 0xffffffff) size = zip64CompressedSize(header, u32(header, 22) === 0xffffffff);
    raw.bytes(header.subarray(0, 30 + fieldsLength));
    const sizeKnown = (flags & SIZES_LATER) === 0 && size >= 0;
    if (method === DEFLATED && (flags & ENCRYPTED) === 0) {
      raw.flush();
      const mark = out.mark();
      const dataStart = src.offset;
      let fits = true;
      try {
        expandDeflate(src, out);
      } catch (err) {
        // A member the header sizes can still be copied as it is; without a size it cannot.
        if (!sizeKnown || !isFormatProblem(err)) throw err;
        fits = false;
      }
      const used = src.offset - dataStart;
      if (fits && sizeKnown && used > size) fits = false;
      if (fits) {
        streams++;
        ranges.push(dataStart, dataStart + used);
        if (sizeKnown) raw.copy(src, size - used);
      } else {
        out.rollback(mark);
        src.seek(dataStart);
        raw.copy(src, size);
      }
    } else if (sizeKnown) {
      raw.copy(src, size);
    } else {
      src.seek(start + 30 + fieldsLength);
      break;
    }
    if (flags & SIZES_LATER) raw.copy(src, descriptorLength(src));
  }
  raw.rest(src);
  return streams;
}

/** The compressed size from a local header's zip64 extra field (-1 if there is none). */
function zip64CompressedSize(bytes: Uint8Array, hasOriginal: boolean): number {
  const nameLength = u16(bytes, 26);
  const end = 30 + nameLength + u16(bytes, 28);
  for (let at = 30 + nameLength; at + 4 <= end;) {
    const id = u16(bytes, at);
    const length = u16(bytes, at + 2);
    if (id === 1) {
      const offset = at + 4 + (hasOriginal ? 8 : 0);
      return offset + 8 <= at + 4 + length ? u64(bytes, offset) : -1;
    }
    at += 4 + length;
  }
  return -1;
}

/**
 * The length of the data descriptor at the source (12, 16, 20 or 24 bytes: optional signature,
 * crc, 4- or 8-byte sizes): the one followed by a zip record, else the plain 32-bit form.
 */
function descriptorLength(src: ByteSource): number {
  const signed = peek32(src, 0) === DESCRIPTOR ? 4 : 0;
  for (const sizes of [8, 16]) {
    const length = signed + 4 + sizes;
    const next = peek32(src, length);
    if (next === LOCAL || next === CENTRAL || next === END || next === END64) return length;
  }
  return signed + 12;
}
