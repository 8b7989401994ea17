/**
 * The wire format of an object stored by `aes256-gcm-proxy` (docs/ENCRYPTION.md has the full
 * description): a fixed-size header, then the plaintext cut into FRAME_SIZE chunks, each sealed
 * with AES-256-GCM as `ciphertext || 16-byte tag`. Everything here is pure arithmetic and byte
 * layout; the crypto lives in frame-crypto.ts.
 *
 * Header (HEADER_SIZE = 104 bytes):
 *   0   4  magic "SVCE"
 *   4   1  format version (1)
 *   5   1  log2 of the frame size (16: 64 KiB)
 *   6   1  key id length n (1..64)
 *   7   1  reserved, 0
 *   8  32  per-object random salt (the per-object key is HKDF(master key, salt))
 *  40  64  key id, ASCII, n bytes then zero padding
 *
 * Frame i (0-based) holds plaintext bytes [i*FRAME_SIZE, (i+1)*FRAME_SIZE); every frame but the
 * last is full. An empty object still has one (empty) final frame, so a header alone is never a
 * complete object.
 */

export const MAGIC = new Uint8Array([0x53, 0x56, 0x43, 0x45]); // "SVCE"
export const FORMAT_VERSION = 1;
export const FRAME_SIZE_LOG2 = 16;
export const FRAME_SIZE = 1 << FRAME_SIZE_LOG2;
export const TAG_SIZE = 16;
export const SALT_SIZE = 32;
export const KEY_ID_MAX = 64;
export const HEADER_SIZE = 8 + SALT_SIZE + KEY_ID_MAX;
/** Stored bytes of one full frame. */
export const SEALED_FRAME_SIZE = FRAME_SIZE + TAG_SIZE;

export interface FrameHeader {
  keyId: string;
  salt: Uint8Array<ArrayBuffer>;
  /** The header's bytes as stored: every frame's additional data starts with them. */
  bytes: Uint8Array<ArrayBuffer>;
}

/** The header of a new object: a fresh random salt under `keyId`. */
export function newHeader(keyId: string): FrameHeader {
  const id = new TextEncoder().encode(keyId);
  if (id.length < 1 || id.length > KEY_ID_MAX) {
    throw new Error(`Key id "${keyId}" must be 1-${KEY_ID_MAX} bytes`);
  }
  const bytes = new Uint8Array(HEADER_SIZE);
  bytes.set(MAGIC, 0);
  bytes[4] = FORMAT_VERSION;
  bytes[5] = FRAME_SIZE_LOG2;
  bytes[6] = id.length;
  const salt = crypto.getRandomValues(new Uint8Array(SALT_SIZE));
  bytes.set(salt, 8);
  bytes.set(id, 8 + SALT_SIZE);
  return { keyId, salt, bytes };
}

/** Parses a stored header; throws a message naming what is wrong (never a guess). */
export function parseHeader(bytes: Uint8Array): FrameHeader {
  if (bytes.length < HEADER_SIZE) {
    throw new Error(`encrypted object is truncated: ${bytes.length} header bytes`);
  }
  for (let i = 0; i < MAGIC.length; i++) {
    if (bytes[i] !== MAGIC[i]) throw new Error("encrypted object header has a wrong magic");
  }
  if (bytes[4] !== FORMAT_VERSION) {
    throw new Error(`encrypted object has unknown format version ${bytes[4]}`);
  }
  if (bytes[5] !== FRAME_SIZE_LOG2) {
    throw new Error(`encrypted object has unsupported frame size 2^${bytes[5]}`);
  }
  const idLength = bytes[6];
  if (idLength < 1 || idLength > KEY_ID_MAX || bytes[7] !== 0) {
    throw new Error("encrypted object header is malformed");
  }
  const copy = bytes.slice(0, HEADER_SIZE);
  const keyId = new TextDecoder().decode(copy.subarray(8 + SALT_SIZE, 8 + SALT_SIZE + idLength));
  return { keyId, salt: copy.slice(8, 8 + SALT_SIZE), bytes: copy };
}

/** Number of frames of a plaintext of `size` bytes (at least one). */
export function frameCount(size: number): number {
  return Math.max(1, Math.ceil(size / FRAME_SIZE));
}

/** Stored size of a plaintext of `size` bytes. */
export function storedSizeOf(size: number): number {
  return HEADER_SIZE + size + frameCount(size) * TAG_SIZE;
}

/**
 * The plaintext size of a sealed object from its stored size (the inverse of storedSizeOf); null
 * when no plaintext seals to that many bytes (a truncated or padded object). The stored size,
 * not the meta record's `size`, fixes the frame count: a delta's record holds the logical size
 * of the object it rebuilds, not of its own bytes.
 */
export function plainSizeOf(storedSize: number): number | null {
  const afterHeader = storedSize - HEADER_SIZE;
  if (afterHeader < TAG_SIZE) return null;
  const frames = Math.ceil(afterHeader / SEALED_FRAME_SIZE);
  const lastFrame = afterHeader - (frames - 1) * SEALED_FRAME_SIZE;
  if (lastFrame < TAG_SIZE) return null;
  return afterHeader - frames * TAG_SIZE;
}

/** Plaintext bytes of frame `index` of an object of `size` bytes. */
export function framePlainSize(index: number, size: number): number {
  return Math.min(FRAME_SIZE, size - index * FRAME_SIZE);
}

/** Stored offset of frame `index`. */
export function frameOffset(index: number): number {
  return HEADER_SIZE + index * SEALED_FRAME_SIZE;
}

/**
 * The frames a plaintext byte range needs, and the stored byte range holding them.
 * `end` is inclusive, as in ByteRange.
 */
export function framesForRange(start: number, end: number, size: number): {
  first: number;
  last: number;
  storedStart: number;
  storedEnd: number;
} {
  const first = Math.floor(start / FRAME_SIZE);
  const last = Math.floor(end / FRAME_SIZE);
  const storedEnd = frameOffset(last) + framePlainSize(last, size) + TAG_SIZE - 1;
  return { first, last, storedStart: frameOffset(first), storedEnd };
}

/** 96-bit GCM nonce of frame `index`: 4 zero bytes then the index, big-endian. */
export function frameNonce(index: number): Uint8Array<ArrayBuffer> {
  const nonce = new Uint8Array(12);
  new DataView(nonce.buffer).setBigUint64(4, BigInt(index));
  return nonce;
}

/** Additional data of frame `index`: the header, the index (u64 BE) and the final-frame flag. */
export function frameAad(
  header: FrameHeader,
  index: number,
  final: boolean,
): Uint8Array<ArrayBuffer> {
  const aad = new Uint8Array(HEADER_SIZE + 9);
  aad.set(header.bytes, 0);
  const view = new DataView(aad.buffer);
  view.setBigUint64(HEADER_SIZE, BigInt(index));
  aad[HEADER_SIZE + 8] = final ? 1 : 0;
  return aad;
}
