/**
 * Object keys and query strings as they travel in a backend URL.
 *
 * S3 signs the path exactly as sent, so every character except the RFC 3986 unreserved set
 * (A-Z a-z 0-9 - . _ ~) is percent-encoded from its UTF-8 bytes, segment by segment, with the
 * `/` between segments kept literal. aws4fetch decodes the path and re-encodes it the same way
 * when it builds the canonical request, so what we send and what we sign agree; a literal `+`
 * would be read as a space by it, which is why `+` is always sent as `%2B`.
 */
import { dotSegmentOf } from "../../lib/mod.ts";

/** Percent-encodes everything outside RFC 3986's unreserved characters. */
export function encodeRfc3986(text: string): string {
  return encodeURIComponent(text).replace(
    /[!'()*]/g,
    (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`,
  );
}

/** The URL path of a key: each segment encoded, the separators kept. */
export function encodeKeyPath(key: string): string {
  return key.split("/").map(encodeRfc3986).join("/");
}

/**
 * Whether a key can be addressed in a URL at all. URL parsers resolve `.` and `..` segments
 * (even encoded as `%2E`) before the request leaves, so such a key would silently name another
 * object; keys with unpaired surrogates have no UTF-8 form. The filesystem backend refuses the
 * same keys, so both backends agree on which keys exist.
 */
export function isAddressableKey(key: string): boolean {
  if (key === "" || key.includes("\0") || !key.isWellFormed()) return false;
  return dotSegmentOf(key) === null;
}

/** A query string with RFC 3986 encoding (spaces as %20, never `+`), keys in the given order. */
export function encodeQuery(params: Record<string, string | undefined>): string {
  return Object.entries(params)
    .filter((entry): entry is [string, string] => entry[1] !== undefined)
    .map(([name, value]) =>
      value === "" ? encodeRfc3986(name) : `${encodeRfc3986(name)}=${encodeRfc3986(value)}`
    )
    .join("&");
}
