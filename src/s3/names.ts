/**
 * Validation of what a client names: buckets, object keys and user metadata (Content-MD5, a
 * property of the body, is checked in body/content-md5.ts).
 * Everything here runs before any state changes, so a bad name never half-applies.
 */

import { headerText } from "./header-text.ts";
import { bucketNameProblem, SvcError } from "../lib/mod.ts";

/** Throws InvalidBucketName unless `name` follows S3's general purpose bucket rules. */
export function validateBucketName(name: string): void {
  const reason = bucketNameProblem(name);
  if (reason !== null) {
    throw new SvcError(
      "InvalidBucketName",
      `The specified bucket "${name}" is not valid: ${reason}.`,
      { BucketName: name },
    );
  }
}

/** S3's limit on a key, in UTF-8 bytes. */
export const MAX_KEY_BYTES = 1024;

const encoder = new TextEncoder();

/**
 * Checks what S3 itself refuses in a key. Backends add their own rules (the filesystem backend
 * refuses `..` segments, for instance).
 */
export function validateObjectKey(key: string): void {
  if (key.length === 0) {
    throw new SvcError("InvalidObjectName", "The object key must not be empty.");
  }
  // A lone surrogate has no UTF-8 form, so it could not be stored or listed faithfully.
  if (!key.isWellFormed()) {
    throw new SvcError(
      "InvalidObjectName",
      `The object key "${key.toWellFormed()}" is not valid Unicode.`,
      { Key: key.toWellFormed() },
    );
  }
  const bytes = encoder.encode(key).length;
  if (bytes > MAX_KEY_BYTES) {
    throw new SvcError(
      "KeyTooLongError",
      `Your key is too long: "${key.slice(0, 32)}…" is ${bytes} bytes, ` +
        `the limit is ${MAX_KEY_BYTES}.`,
      { Size: String(bytes), MaxSizeAllowed: String(MAX_KEY_BYTES) },
    );
  }
  if (key.includes("\0")) {
    throw new SvcError(
      "InvalidObjectName",
      `The object key "${key.replaceAll("\0", "\\0")}" contains a NUL character.`,
      { Key: key },
    );
  }
}

/** S3's limit on user metadata: names (without `x-amz-meta-`) plus values, in UTF-8 bytes. */
export const MAX_USER_METADATA_BYTES = 2048;
const META_PREFIX = "x-amz-meta-";

/**
 * Collects `x-amz-meta-*` headers as lowercase names without the prefix. Throws
 * MetadataTooLarge beyond 2 KB. Headers already joins repeated headers with ", ".
 */
export function parseUserMetadata(headers: Headers): Record<string, string> {
  const meta: Record<string, string> = {};
  let total = 0;
  // Headers iterates lowercase names, so the stored names are lowercase like S3's.
  for (const [name, value] of headers) {
    if (!name.startsWith(META_PREFIX)) continue;
    const key = name.slice(META_PREFIX.length);
    // A bare "x-amz-meta-" names nothing and would round-trip as a header without a name.
    if (key === "") continue;
    // Stored as the text the client's bytes encode (header-text.ts), returned as bytes that
    // clients decode to that text.
    const text = headerText(value);
    meta[key] = text;
    // Header names and values arrive one character per byte, so their lengths are the byte
    // counts S3 limits.
    total += key.length + value.length;
  }
  if (total > MAX_USER_METADATA_BYTES) {
    throw new SvcError(
      "MetadataTooLarge",
      `Your metadata headers exceed the maximum allowed metadata size: ${total} bytes, ` +
        `the limit is ${MAX_USER_METADATA_BYTES}.`,
      { Size: String(total), MaxSizeAllowed: String(MAX_USER_METADATA_BYTES) },
    );
  }
  return meta;
}
