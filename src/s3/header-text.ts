/**
 * Header values as text. Deno hands each byte of a header value over as one character
 * (U+0000-U+00FF) and writes each character of an outgoing value as one byte, so a UTF-8 value
 * (boto3's non-ASCII `x-amz-meta-*`) arrives as its bytes, and text with characters past U+00FF
 * cannot be set on Headers at all. svc keeps such values as the text they encode (metadata JSON,
 * S3 backends' RFC 2047 form) and turns them back into the same bytes on the way out.
 */
const strictUtf8 = new TextDecoder("utf-8", { fatal: true });
const utf8 = new TextEncoder();
// deno-lint-ignore no-control-regex -- every byte below 0x80, controls included, is ASCII
const ASCII = /^[\x00-\x7f]*$/;

/** The text a header value's bytes encode as UTF-8; null when they are not UTF-8. */
export function headerText(value: string): string | null {
  if (ASCII.test(value)) return value;
  try {
    return strictUtf8.decode(Uint8Array.from(value, (c) => c.charCodeAt(0)));
  } catch {
    return null;
  }
}

/** The header value (one character per byte) that sends `text` as UTF-8. */
export function headerValue(text: string): string {
  return ASCII.test(text) ? text : String.fromCharCode(...utf8.encode(text));
}
