/**
 * The stored form of a compressed object (docs/COMPRESSION.md): independent zstd frames of
 * `frameSize` uncompressed bytes each (the last one shorter), then the frame index, one
 * big-endian u64 per frame holding the stored offset where that frame ends. Frame `i` spans
 * stored bytes [end(i-1), end(i)) with end(-1) = 0, so a range read needs only the index entries
 * of its own frames: reads stay O(range) however large the object.
 *
 * The meta record says an object is compressed with one short string (the fs backend keeps the
 * record in a ~4 KiB xattr, S3 in 2 KB of user metadata): `zstd:<frameSize>:<indexOffset>:
 * <size>:<md5>`, the logical size and md5 of the object; the record's own `size` and `md5` then
 * describe the stored bytes, so layers below (encryption, the S3 backend's listable-upload rule)
 * see a consistent object.
 */
import type { ByteRange } from "../backend.ts";

export const CODEC = "zstd";
/** One index entry: a u64 stored end offset. */
export const INDEX_ENTRY_BYTES = 8;

export interface CompressionMarker {
  frameSize: number;
  /** Where the index starts in the stored bytes: the length of the frame data. */
  indexOffset: number;
  /** Logical (uncompressed) size. */
  size: number;
  /** Logical md5 hex; "" for multipart objects. */
  md5: string;
}

export function formatMarker(marker: CompressionMarker): string {
  return `${CODEC}:${marker.frameSize}:${marker.indexOffset}:${marker.size}:${marker.md5}`;
}

/** The marker of a record's `compression` field; throws on one svc did not write. */
export function parseMarker(text: string): CompressionMarker {
  const match = /^zstd:(\d{1,10}):(\d{1,16}):(\d{1,16}):([0-9a-f]{32})?$/.exec(text);
  const marker = match && {
    frameSize: Number(match[1]),
    indexOffset: Number(match[2]),
    size: Number(match[3]),
    md5: match[4] ?? "",
  };
  if (
    !marker || marker.frameSize < 1 || !Number.isSafeInteger(marker.indexOffset) ||
    !Number.isSafeInteger(marker.size)
  ) {
    throw new Error(`Unknown storage compression marker "${text}"`);
  }
  return marker;
}

export function frameCountOf(marker: Pick<CompressionMarker, "frameSize" | "size">): number {
  return Math.ceil(marker.size / marker.frameSize);
}

/** Total stored length: frame data plus index. */
export function storedLengthOf(marker: CompressionMarker): number {
  return marker.indexOffset + frameCountOf(marker) * INDEX_ENTRY_BYTES;
}

/** The logical length of frame `i`. */
export function frameLength(marker: Pick<CompressionMarker, "frameSize" | "size">, i: number) {
  return Math.min(marker.frameSize, marker.size - i * marker.frameSize);
}

/** The frames holding logical bytes start..end (inclusive, already validated). */
export function framesForRange(
  frameSize: number,
  range: ByteRange,
): { first: number; last: number } {
  return { first: Math.floor(range.start / frameSize), last: Math.floor(range.end / frameSize) };
}

/**
 * The stored byte range of index entries `from`..`to` (inclusive frame numbers, `from` may be -1
 * meaning "the start of frame 0": no entry is read for it).
 */
export function indexRange(marker: CompressionMarker, from: number, to: number): ByteRange {
  const first = Math.max(0, from);
  return {
    start: marker.indexOffset + first * INDEX_ENTRY_BYTES,
    end: marker.indexOffset + (to + 1) * INDEX_ENTRY_BYTES - 1,
  };
}

/** Index entries as bytes. */
export function encodeIndex(ends: readonly number[]): Uint8Array<ArrayBuffer> {
  const bytes = new Uint8Array(ends.length * INDEX_ENTRY_BYTES);
  const view = new DataView(bytes.buffer);
  ends.forEach((end, i) => view.setBigUint64(i * INDEX_ENTRY_BYTES, BigInt(end)));
  return bytes;
}

/**
 * Index entries from bytes, checked: whole entries, non-decreasing from `floor`, none past
 * `limit` (the index offset). Throws on damage.
 */
export function decodeIndex(bytes: Uint8Array, floor: number, limit: number): number[] {
  if (bytes.length % INDEX_ENTRY_BYTES !== 0) {
    throw new Error(`Compressed object's index is ${bytes.length} bytes, no whole entries`);
  }
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const ends: number[] = [];
  let previous = floor;
  for (let at = 0; at < bytes.length; at += INDEX_ENTRY_BYTES) {
    const end = Number(view.getBigUint64(at));
    if (end < previous || end > limit) {
      throw new Error(`Compressed object's index is damaged: entry ${end} after ${previous}`);
    }
    ends.push(end);
    previous = end;
  }
  return ends;
}

/** Extensions of formats that are compressed already: passthrough objects with one stay raw. */
const COMPRESSED_EXTENSIONS = new Set([
  // A delta store's `<key>.delta`: codec output (xdelta3, zstd), whose record carries the logical
  // size, not its own: never compressed again (a compressible zstd delta would not commit).
  "delta",
  "gz",
  "tgz",
  "zip",
  "jar",
  "war",
  "apk",
  "whl",
  "xz",
  "txz",
  "zst",
  "tzst",
  "bz2",
  "tbz2",
  "lz4",
  "lzma",
  "7z",
  "rar",
  "br",
  "jpg",
  "jpeg",
  "png",
  "gif",
  "webp",
  "avif",
  "heic",
  "mp3",
  "mp4",
  "m4a",
  "m4v",
  "mkv",
  "webm",
  "mov",
  "ogg",
  "opus",
  "flac",
  "docx",
  "xlsx",
  "pptx",
  "odt",
  "deb",
  "rpm",
  "dmg",
  "woff2",
]);

/** Whether `key` names a format that is compressed already (by its extension). */
export function hasCompressedExtension(key: string): boolean {
  const name = key.slice(key.lastIndexOf("/") + 1).toLowerCase();
  const dot = name.lastIndexOf(".");
  return dot > 0 && COMPRESSED_EXTENSIONS.has(name.slice(dot + 1));
}
