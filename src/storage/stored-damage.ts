/**
 * Whether a read failed because the stored bytes are damaged (a compressed frame or an encrypted
 * chunk that does not check out), as opposed to a backend that could not be reached: the
 * integrity scan reports the first as a corrupt object, the second as unreadable.
 */

import { CompressionError } from "./compression/zstd-codec.ts";
import { EncryptionError } from "./encryption/encryption-error.ts";

export function isStoredDataDamage(err: unknown): boolean {
  for (let e: unknown = err, depth = 0; e instanceof Error && depth < 8; e = e.cause, depth++) {
    if (e instanceof CompressionError) return true;
    // A missing or other key says nothing about the bytes; a failed tag or a cut object does.
    if (e instanceof EncryptionError) return e.reason !== "key-mismatch";
  }
  return false;
}
