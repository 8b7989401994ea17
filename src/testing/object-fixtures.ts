/** Object records for unit tests: plausible metadata without a body behind it. */
import { createHash } from "node:crypto";
import type { ObjectInfo, ObjectMeta } from "../storage/backend.ts";

/** Metadata of a `size`-byte passthrough object; fields are placeholders unless overridden. */
export function fakeMeta(size: number, extra: Partial<ObjectMeta> = {}): ObjectMeta {
  return {
    size,
    etag: "e",
    md5: "e",
    sha256: "s",
    contentType: "text/plain",
    userMeta: {},
    headers: {},
    lastModified: 0,
    storage: "passthrough",
    ...extra,
  };
}

/** An ObjectInfo for `key` with a `size`-byte logical body. */
export function fakeInfo(key: string, size = 1, storedSize = size): ObjectInfo {
  return { key, storedSize, meta: fakeMeta(size) };
}

/** `length` random bytes (getRandomValues fills at most 64 KiB per call). */
export function randomBytes(length: number): Uint8Array<ArrayBuffer> {
  const bytes = new Uint8Array(length);
  for (let at = 0; at < length; at += 65536) {
    crypto.getRandomValues(bytes.subarray(at, at + 65536));
  }
  return bytes;
}

/** The metadata svc would commit for `bytes` written by a plain PUT. */
export function metaFor(bytes: Uint8Array, extra: Partial<ObjectMeta> = {}): ObjectMeta {
  const md5 = createHash("md5").update(bytes).digest("hex");
  return {
    size: bytes.length,
    etag: md5,
    md5,
    sha256: createHash("sha256").update(bytes).digest("hex"),
    contentType: "application/octet-stream",
    userMeta: {},
    headers: {},
    lastModified: Date.now(),
    storage: "passthrough",
    ...extra,
  };
}
