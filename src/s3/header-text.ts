/**
 * Header values as text. Deno hands each byte of a header value over as one character
 * (U+0000-U+00FF) and writes each character of an outgoing value as one byte, and text with
 * characters past U+00FF cannot be set on Headers at all.
 *
 * Incoming non-ASCII `x-amz-meta-*` bytes are read as UTF-8 when they are UTF-8 (boto3 on urllib3
 * 2 sends a value's UTF-8; curl and Go send bytes as given), otherwise as Latin-1, one character
 * per byte (Node's http and older urllib3 send a string's characters up to U+00FF as single
 * bytes). Signers sign that same text (sigv4-canonical.ts signedHeaderText).
 *
 * Outgoing, text whose characters all lie within Latin-1 is sent one byte per character: the
 * clients that decode header bytes at all (Python's http.client under boto3, Node's http under
 * the JavaScript SDK, fetch's ByteString headers) decode them as Latin-1, so `Hello World\xe9`
 * set through boto3 reads back as `Hello World\xe9` (ceph/s3-tests
 * test_object_set_get_unicode_metadata). Text beyond Latin-1 has no such bytes and goes out as
 * its UTF-8. AWS answers every non-ASCII value RFC 2047-encoded instead, which no SDK decodes.
 */
const strictUtf8 = new TextDecoder("utf-8", { fatal: true });
const utf8 = new TextEncoder();
// deno-lint-ignore no-control-regex -- every byte below 0x80, controls included, is ASCII
const ASCII = /^[\x00-\x7f]*$/;
// deno-lint-ignore no-control-regex -- every character a header byte can carry
const LATIN1 = /^[\x00-\xff]*$/;

/** The text a header value's bytes encode: their UTF-8 when they are UTF-8, else Latin-1. */
export function headerText(value: string): string {
  if (ASCII.test(value)) return value;
  try {
    return strictUtf8.decode(Uint8Array.from(value, (c) => c.charCodeAt(0)));
  } catch {
    return value;
  }
}

/** The header value (one character per byte) that sends `text` to clients (see the header). */
export function headerValue(text: string): string {
  return LATIN1.test(text) ? text : utf8HeaderValue(text);
}

/** The header value that carries `text` as its UTF-8 bytes, which headerText reads back. */
export function utf8HeaderValue(text: string): string {
  return ASCII.test(text) ? text : String.fromCharCode(...utf8.encode(text));
}
