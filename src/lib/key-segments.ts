/**
 * The one rule on `.` and `..` in object keys. A URL parser resolves such segments (even encoded
 * as `%2E`) before a request leaves, so a key holding one would name another object, or another
 * bucket: every backend refuses them (`fs-keys.ts` as InvalidObjectName, `s3-keys.ts` as not
 * addressable) and the admin browse routes refuse them before any in-process S3 call
 * (`admin/storage/s3-internal.ts`), where `/a/../b/x` would otherwise act on bucket `b`.
 */

/** The first `.` or `..` segment of `key` (split on `/`), or null when it has none. */
export function dotSegmentOf(key: string): "." | ".." | null {
  for (const segment of key.split("/")) {
    if (segment === "." || segment === "..") return segment;
  }
  return null;
}
