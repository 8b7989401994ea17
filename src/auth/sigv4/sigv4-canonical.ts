/**
 * The canonical forms of SigV4 (AWS "Create a canonical request") as S3 and the SDKs build
 * them, and its time stamps, with svc's decisions on input the clients encode differently. Each
 * was checked against @aws-sdk/client-s3, @smithy/signature-v4 and aws4fetch in sigv4_test.ts.
 *
 * - Canonical URI: the raw path is percent-decoded byte by byte and re-encoded with AWS's rule
 *   (`A-Za-z0-9-._~` and `/` kept, every other byte %XX uppercase), so `%7e`, `%7E` and `~` sign
 *   alike and nothing is double-encoded (the S3 SDKs sign the path as they send it, already
 *   encoded that way). A literal `+` in the path is a plus (`%2B`), because svc's router
 *   (request.ts, decodeURIComponent) reads it so. S3 reads it as a space, and aws4fetch signs it
 *   so; but the canonical form must follow the router: signing `+` as a space while routing it
 *   as a plus would let a signed `a%20b` be replayed as `a+b`, another key. If the router adopts
 *   S3's reading, flip PATH_PLUS_IS_SPACE in the same change.
 *   sigv4.ts also tries the raw path itself when this form fails and differs from it: signers
 *   that sign the path exactly as sent (the SDKs' `uriEscapePath: false`) with a non-canonical
 *   encoding (`'`, `(`, `*`, `!` unescaped, `%2F`) then still verify. Both candidates are
 *   functions of the bytes received and both decode to what the router reads, so neither lets
 *   one request stand for another.
 * - Canonical query: `+` is a space (URLSearchParams, hence the router, reads it so; aws4fetch
 *   signs it so; the SDKs never send a literal `+`). Every value of a repeated name is signed,
 *   sorted, as the SigV4 spec and the AWS SDKs do (aws4fetch signs only the first for s3, so its
 *   URLs with repeated names do not verify). `a` and `a=` are both `a=`. Pieces with an empty
 *   name are left out, as aws4fetch does; the router ignores them too.
 * - Canonical headers: the value as Deno hands it (already trimmed), inner runs of spaces and
 *   tabs collapsed to one space; non-ASCII bytes read as the UTF-8 they are (signedHeaderText). Repeated header lines reach us joined by ", " (Headers), where
 *   the spec joins with ","; no SDK sends repeated signed headers.
 */

import type { SignedRequest, SignedRequestInput } from "./sigv4-request.ts";
import { sha256Hex } from "../signing-key.ts";

/** See the file header: must agree with how request.ts decodes the path. */
const PATH_PLUS_IS_SPACE = false;
const HEX = "0123456789ABCDEF";
const utf8 = new TextEncoder();

/** Whether a byte is kept as is by AWS's URI encoding (`A-Za-z0-9-._~`). */
function unreserved(b: number): boolean {
  return (b >= 0x61 && b <= 0x7a) || (b >= 0x41 && b <= 0x5a) || (b >= 0x30 && b <= 0x39) ||
    b === 0x2d || b === 0x2e || b === 0x5f || b === 0x7e;
}

function hexDigit(c: number): number {
  if (c >= 0x30 && c <= 0x39) return c - 0x30;
  c |= 0x20;
  return c >= 0x61 && c <= 0x66 ? c - 0x57 : -1;
}

/**
 * Percent-decodes `raw` byte by byte and re-encodes it with AWS's rule. Working on bytes keeps
 * invalid UTF-8 distinct and never throws; a `%` without two hex digits is a literal `%`.
 */
export function awsReencode(raw: string, plusIsSpace: boolean, keepSlash: boolean): string {
  let out = "";
  const emit = (b: number) => {
    out += unreserved(b) || (keepSlash && b === 0x2f)
      ? String.fromCharCode(b)
      : "%" + HEX[b >> 4] + HEX[b & 15];
  };
  for (let i = 0; i < raw.length; i++) {
    const c = raw.charCodeAt(i);
    if (c === 0x25 && i + 2 < raw.length) {
      const hi = hexDigit(raw.charCodeAt(i + 1));
      const lo = hexDigit(raw.charCodeAt(i + 2));
      if (hi >= 0 && lo >= 0) {
        emit(hi * 16 + lo);
        i += 2;
        continue;
      }
    }
    if (c === 0x2b && plusIsSpace) emit(0x20);
    else if (c < 0x80) emit(c);
    else {
      // A raw non-ASCII character (Deno keeps the request target as sent): its UTF-8 bytes.
      const point = raw.codePointAt(i)!;
      if (point > 0xffff) i++;
      for (const b of utf8.encode(String.fromCodePoint(point))) emit(b);
    }
  }
  return out;
}

/** Already canonical: nothing to decode or encode (the common case, tested cheaply). */
const CANONICAL_PATH = /^[A-Za-z0-9\-._~/]*$/;

/** The canonical URI of a raw (still encoded) request path. */
export function canonicalUri(rawPath: string): string {
  return CANONICAL_PATH.test(rawPath) ? rawPath : awsReencode(rawPath, PATH_PLUS_IS_SPACE, true);
}

/** Sorted `name=value` pairs, names and values AWS-encoded; presigned drops X-Amz-Signature. */
export function canonicalQuery(rawQuery: string, presigned: boolean): string {
  if (rawQuery === "") return "";
  const pairs: [string, string][] = [];
  for (const piece of rawQuery.split("&")) {
    const eq = piece.indexOf("=");
    const name = awsReencode(eq < 0 ? piece : piece.slice(0, eq), true, false);
    if (name === "" || (presigned && name === "X-Amz-Signature")) continue;
    pairs.push([name, eq < 0 ? "" : awsReencode(piece.slice(eq + 1), true, false)]);
  }
  pairs.sort(([n1, v1], [n2, v2]) => n1 < n2 ? -1 : n1 > n2 ? 1 : v1 < v2 ? -1 : v1 > v2 ? 1 : 0);
  return pairs.map(([name, value]) => `${name}=${value}`).join("&");
}

const strictUtf8 = new TextDecoder("utf-8", { fatal: true });
const NON_ASCII = /[\u0080-\u00ff]/;

/**
 * A header value as the signer had it. Deno hands each byte of a header value over as one
 * character (U+0000-U+00FF); signers (boto3 with non-ASCII `x-amz-meta-*`) sign the text those
 * bytes are the UTF-8 of, so the bytes are read as UTF-8 again. Bytes that are not UTF-8 stay
 * one character each: Latin-1, the text a signer sent as one byte per character (Node's http,
 * older urllib3) and signed as its UTF-8 (s3/header-text.ts reads such values the same way).
 */
export function signedHeaderText(value: string): string {
  if (!NON_ASCII.test(value)) return value;
  try {
    return strictUtf8.decode(Uint8Array.from(value, (c) => c.charCodeAt(0)));
  } catch {
    return value;
  }
}

/** `name:value\n` for each signed header, in the client's order (absent headers sign empty). */
export function canonicalHeaders(signedHeaders: readonly string[], headers: Headers): string {
  let out = "";
  for (const name of signedHeaders) {
    const value = signedHeaderText(headers.get(name) ?? "");
    out += `${name}:${value.trim().replace(/[ \t]+/g, " ")}\n`;
  }
  return out;
}

/** The canonical request (AWS "Create a canonical request"), with the given canonical URI. */
export function canonicalRequest(
  signed: SignedRequest,
  input: SignedRequestInput,
  uri = canonicalUri(input.rawPath),
): string {
  const query = canonicalQuery(input.rawQuery, signed.presigned);
  const headers = canonicalHeaders(signed.signedHeaders, input.headers);
  const list = signed.signedHeaders.join(";");
  return `${input.method}\n${uri}\n${query}\n${headers}\n${list}\n${signed.payloadHash}`;
}

export function stringToSign(signed: SignedRequest, canonical: string): string {
  return `AWS4-HMAC-SHA256\n${signed.amzDate}\n${signed.scope}\n${sha256Hex(canonical)}`;
}

/** UTF-8 bytes as space-separated lowercase hex, as S3's *Bytes error details show them. */
export function spacedHex(text: string): string {
  return Array.from(utf8.encode(text), (b) => b.toString(16).padStart(2, "0")).join(" ");
}

const AMZ_DATE = /^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z$/;

/** Epoch milliseconds of a `YYYYMMDDTHHMMSSZ` stamp; undefined unless it is a real instant. */
export function amzTime(stamp: string): number | undefined {
  const m = AMZ_DATE.exec(stamp);
  if (!m) return undefined;
  const time = Date.UTC(+m[1], +m[2] - 1, +m[3], +m[4], +m[5], +m[6]);
  return isoBasic(time) === stamp ? time : undefined;
}

/** `YYYYMMDDTHHMMSSZ`, the stamp SigV4 signs. */
export function isoBasic(time: number): string {
  return new Date(time).toISOString().replace(/[-:]|\.\d{3}/g, "");
}

/** `YYYY-MM-DDTHH:MM:SSZ`, as S3 writes ServerTime and Expires in its error documents. */
export function isoSeconds(time: number): string {
  return new Date(time).toISOString().replace(/\.\d{3}Z$/, "Z");
}
