/**
 * The Content-MD5 header: the body digest a client vouches for, checked before anything is read
 * (InvalidDigest) and compared with the received body's MD5 by whoever stores it (BadDigest).
 */
import { SvcError } from "../../lib/mod.ts";

// 16 bytes of base64 are always 22 significant characters and two pad characters.
const MD5_BASE64 = /^[A-Za-z0-9+/]{21}[AQgw]==$/;

/**
 * Decodes a Content-MD5 header to lowercase hex; null when absent. Throws InvalidDigest unless
 * it is base64 of exactly 16 bytes. The caller compares it with the body's md5 (BadDigest).
 */
export function validateContentMd5(header: string | null | undefined): string | null {
  if (header === null || header === undefined) return null;
  const value = header.trim();
  if (!MD5_BASE64.test(value)) {
    throw new SvcError(
      "InvalidDigest",
      `The Content-MD5 you specified was invalid: "${header}" is not base64 of 16 bytes.`,
      { "Content-MD5": header },
    );
  }
  const bytes = Uint8Array.from(atob(value), (c) => c.charCodeAt(0));
  return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}
