/**
 * Incremental checksums for the `x-amz-checksum-*` values S3 clients send, either as request
 * headers or as aws-chunked trailers (see aws-chunked.ts). The value on the wire is always the
 * base64 of the digest bytes; for the CRCs that is the 32-bit value in big-endian order.
 *
 * CRC32 (IEEE, zlib's) and CRC32C (Castagnoli) are table-driven here, slicing by 8 bytes: every
 * upload is checksummed, and the byte-at-a-time loop is several times slower in JavaScript.
 * SHA-1 and SHA-256 come from node:crypto, which is native code.
 *
 * CRC-64/NVME (what current AWS SDKs and the AWS CLI send by default for some uploads) runs on two
 * 32-bit halves (crc64nvme.ts): a BigInt per byte would be far slower.
 */

import { createHash, type Hash } from "node:crypto";
import { crc64nvme } from "./crc64nvme.ts";

export type ChecksumAlgorithm = "crc32" | "crc32c" | "crc64nvme" | "sha1" | "sha256";

export const CHECKSUM_ALGORITHMS: readonly ChecksumAlgorithm[] = [
  "crc32",
  "crc32c",
  "crc64nvme",
  "sha1",
  "sha256",
];

/** The header (or trailer) name carrying a checksum, e.g. `x-amz-checksum-crc32`. */
export function checksumHeaderName(algorithm: ChecksumAlgorithm): string {
  return `x-amz-checksum-${algorithm}`;
}

/** The algorithm a `x-amz-checksum-*` header or trailer name stands for (case-insensitive). */
export function algorithmForHeader(name: string): ChecksumAlgorithm | undefined {
  const lower = name.toLowerCase();
  if (!lower.startsWith("x-amz-checksum-")) return undefined;
  const algorithm = lower.slice("x-amz-checksum-".length);
  return (CHECKSUM_ALGORITHMS as readonly string[]).includes(algorithm)
    ? algorithm as ChecksumAlgorithm
    : undefined;
}

/**
 * Builds the 8 slicing tables of a reflected CRC-32 polynomial in one array: table k (at offset
 * 256*k) advances a CRC by one byte followed by k zero bytes, so 8 lookups consume 8 bytes.
 */
function makeSlicingTables(reflectedPolynomial: number): Int32Array {
  const tables = new Int32Array(8 * 256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let bit = 0; bit < 8; bit++) {
      c = c & 1 ? (c >>> 1) ^ reflectedPolynomial : c >>> 1;
    }
    tables[n] = c;
  }
  for (let n = 0; n < 256; n++) {
    let c = tables[n];
    for (let k = 1; k < 8; k++) {
      c = (c >>> 8) ^ tables[c & 0xff];
      tables[k * 256 + n] = c;
    }
  }
  return tables;
}

const CRC32_TABLES = makeSlicingTables(0xEDB88320);
const CRC32C_TABLES = makeSlicingTables(0x82F63B78);

/**
 * Continues a CRC over `data`. `previous` is the finished CRC of the bytes before (0 for none),
 * so crc(b, crc(a)) === crc(a + b), the zlib convention.
 */
function updateCrc(t: Int32Array, data: Uint8Array, previous: number): number {
  let crc = ~previous;
  let i = 0;
  const end8 = data.length - (data.length & 7);
  while (i < end8) {
    crc ^= data[i] | (data[i + 1] << 8) | (data[i + 2] << 16) | (data[i + 3] << 24);
    crc = t[1792 + (crc & 0xff)] ^ t[1536 + ((crc >>> 8) & 0xff)] ^
      t[1280 + ((crc >>> 16) & 0xff)] ^ t[1024 + (crc >>> 24)] ^
      t[768 + data[i + 4]] ^ t[512 + data[i + 5]] ^ t[256 + data[i + 6]] ^ t[data[i + 7]];
    i += 8;
  }
  while (i < data.length) {
    crc = (crc >>> 8) ^ t[(crc ^ data[i]) & 0xff];
    i++;
  }
  return ~crc >>> 0;
}

/** CRC-32 (IEEE 802.3, as zlib and `x-amz-checksum-crc32`). */
export function crc32(data: Uint8Array, previous = 0): number {
  return updateCrc(CRC32_TABLES, data, previous);
}

/** CRC-32C (Castagnoli, as `x-amz-checksum-crc32c`). */
export function crc32c(data: Uint8Array, previous = 0): number {
  return updateCrc(CRC32C_TABLES, data, previous);
}

/** Standard base64 of bytes (what S3 puts in every checksum header). */
export function toBase64(bytes: Uint8Array): string {
  let binary = "";
  for (let i = 0; i < bytes.length; i++) binary += String.fromCharCode(bytes[i]);
  return btoa(binary);
}

/**
 * Feeds a body piece by piece and yields its checksum at the end. One accumulator per body; after
 * digest() it refuses more input, because node:crypto hashes cannot continue after digest.
 */
export class ChecksumAccumulator {
  readonly algorithm: ChecksumAlgorithm;
  #crc = 0;
  /** CRC-64/NVME as its two 32-bit halves. */
  #crc64: [number, number] = [0, 0];
  #hash: Hash | undefined;
  #digest: Uint8Array | undefined;

  constructor(algorithm: ChecksumAlgorithm) {
    if (!CHECKSUM_ALGORITHMS.includes(algorithm)) {
      throw new TypeError(`unsupported checksum algorithm: ${algorithm}`);
    }
    this.algorithm = algorithm;
    if (algorithm === "sha1" || algorithm === "sha256") this.#hash = createHash(algorithm);
  }

  /** The accumulator for a `x-amz-checksum-*` header or trailer name, if svc supports it. */
  static forHeader(name: string): ChecksumAccumulator | undefined {
    const algorithm = algorithmForHeader(name);
    return algorithm ? new ChecksumAccumulator(algorithm) : undefined;
  }

  update(data: Uint8Array): void {
    if (this.#digest) throw new Error("checksum already finished");
    if (this.#hash) this.#hash.update(data);
    else if (this.algorithm === "crc32") this.#crc = crc32(data, this.#crc);
    else if (this.algorithm === "crc64nvme") this.#crc64 = crc64nvme(data, this.#crc64);
    else this.#crc = crc32c(data, this.#crc);
  }

  /** The digest bytes (big-endian for the CRCs: 4 bytes, 8 for CRC-64). Repeated calls agree. */
  digest(): Uint8Array {
    if (!this.#digest) {
      if (this.#hash) {
        this.#digest = new Uint8Array(this.#hash.digest());
      } else if (this.algorithm === "crc64nvme") {
        this.#digest = new Uint8Array(8);
        const view = new DataView(this.#digest.buffer);
        view.setUint32(0, this.#crc64[0]);
        view.setUint32(4, this.#crc64[1]);
      } else {
        this.#digest = new Uint8Array(4);
        new DataView(this.#digest.buffer).setUint32(0, this.#crc);
      }
    }
    return this.#digest;
  }

  /** The digest as S3 writes it in `x-amz-checksum-*`. */
  digestBase64(): string {
    return toBase64(this.digest());
  }
}
