/**
 * The canonical forms and the decisions sigv4-canonical.ts documents: equivalent encodings sign
 * alike, the raw path is a second chance, and no re-encoding lets one request pass for another.
 */
import assert from "node:assert/strict";
import {
  amzTime,
  awsReencode,
  canonicalHeaders,
  canonicalQuery,
  canonicalUri,
  isoBasic,
  signedHeaderText,
} from "./sigv4-canonical.ts";
import { refuses, smithySigned, verify } from "../../testing/sigv4-test-signers.ts";

Deno.test("the canonical URI decodes once and re-encodes with AWS's rule", () => {
  assert.equal(canonicalUri("/b/plain-key_1.~txt"), "/b/plain-key_1.~txt");
  assert.equal(canonicalUri("/b/%7e%7E~"), "/b/~~~");
  assert.equal(canonicalUri("/b/a%20b"), "/b/a%20b");
  assert.equal(canonicalUri("/b/a b"), "/b/a%20b");
  assert.equal(canonicalUri("/b/a+b"), "/b/a%2Bb");
  assert.equal(canonicalUri("/b/a%2bb"), "/b/a%2Bb");
  assert.equal(canonicalUri("/b/it's(1)*!"), "/b/it%27s%281%29%2A%21");
  assert.equal(canonicalUri("/b/%c3%a9"), "/b/%C3%A9");
  assert.equal(canonicalUri("/b/é🙂"), "/b/%C3%A9%F0%9F%99%82");
  assert.equal(canonicalUri("/b/%2F"), "/b//");
  assert.equal(canonicalUri("/b/%FF%fe"), "/b/%FF%FE");
  assert.equal(canonicalUri("/b/100%"), "/b/100%25");
  assert.equal(canonicalUri("/b/%zz%4"), "/b/%25zz%254");
  assert.equal(canonicalUri("/b/%2525"), "/b/%2525");
  assert.equal(canonicalUri("/b/dots/../x/./y//z"), "/b/dots/../x/./y//z");
  assert.equal(awsReencode("a+b", true, false), "a%20b");
  assert.equal(awsReencode("a/b", false, false), "a%2Fb");
});

Deno.test("the canonical query sorts AWS-encoded pairs and drops the presigned signature", () => {
  assert.equal(canonicalQuery("", false), "");
  assert.equal(canonicalQuery("b=2&a=2&a=1&c&=x&&d=", false), "a=1&a=2&b=2&c=&d=");
  assert.equal(canonicalQuery("p=a+b%2Bc&q=%7e~&r=é/", false), "p=a%20b%2Bc&q=~~&r=%C3%A9%2F");
  assert.equal(canonicalQuery("a+b=c+d", false), "a%20b=c%20d");
  // Sorted on the encoded names: `%2A` (for `*`) before `A`, `A` before `a`.
  assert.equal(canonicalQuery("a=1&A=1&*=1", false), "%2A=1&A=1&a=1");
  assert.equal(canonicalQuery("X-Amz-Signature=s&z=1", true), "z=1");
  assert.equal(canonicalQuery("X-Amz-Signature=s&z=1", false), "X-Amz-Signature=s&z=1");
});

Deno.test("canonical headers trim and collapse inner whitespace", () => {
  const headers = new Headers({ "x-a": "  a \t  b   c ", host: "h:1" });
  assert.equal(
    canonicalHeaders(["host", "x-a", "x-missing"], headers),
    "host:h:1\nx-a:a b c\nx-missing:\n",
  );
});

Deno.test("time stamps are strict about real instants", () => {
  assert.equal(amzTime("20260101T120000Z"), Date.UTC(2026, 0, 1, 12));
  assert.equal(amzTime("20240229T235959Z"), Date.UTC(2024, 1, 29, 23, 59, 59));
  for (
    const bad of ["20250229T000000Z", "20260101T240000Z", "20260101T120000", "2026011T120000Z"]
  ) {
    assert.equal(amzTime(bad), undefined, bad);
  }
  assert.equal(isoBasic(Date.UTC(2026, 0, 1, 12)), "20260101T120000Z");
});

Deno.test("a path signed exactly as sent verifies through the raw-path second chance", async () => {
  // A signer that puts `'`, `(`, `*` and `!` on the wire unescaped and signs the path as is
  // (the SDK's uriEscapePath: false with an encodeURIComponent-style encoder).
  const input = await smithySigned("GET", "/b/it's(1)*!.txt");
  verify(input);
  // And one that escapes them and sends them escaped: the canonical form itself.
  verify(await smithySigned("GET", "/b/it%27s%281%29%2A%21.txt"));
  // Lowercase escapes signed as sent, too.
  verify(await smithySigned("GET", "/b/%c3%a9"));
});

Deno.test("no re-encoding lets a signed request stand for another", async () => {
  // Path: a signed space must not pass as a `+` (the router reads `+` as a plus).
  const space = await smithySigned("GET", "/b/a%20b");
  refuses({ ...space, rawPath: "/b/a+b" }, "SignatureDoesNotMatch");
  const plus = await smithySigned("GET", "/b/a%2Bb");
  verify({ ...plus, rawPath: "/b/a+b" }); // the same key for the router: a plus
  refuses({ ...plus, rawPath: "/b/a%20b" }, "SignatureDoesNotMatch");
  // Query: a signed plus must not pass as a `+` (URLSearchParams reads `+` as a space).
  const query = await smithySigned("GET", "/b", { prefix: "a+b" });
  assert.equal(query.rawQuery, "prefix=a%2Bb");
  refuses({ ...query, rawQuery: "prefix=a+b" }, "SignatureDoesNotMatch");
  const spaced = await smithySigned("GET", "/b", { prefix: "a b" });
  verify({ ...spaced, rawQuery: "prefix=a+b" }); // the same value for the router: a space
  // Equivalent spellings of the same bytes are the same request.
  const tilde = await smithySigned("GET", "/b/~x");
  verify({ ...tilde, rawPath: "/b/%7Ex" });
  verify({ ...tilde, rawPath: "/b/%7ex" });
  // Different bytes are not, even where UTF-8 decoding would blur them (both invalid).
  const ff = await smithySigned("GET", "/b/%FF");
  refuses({ ...ff, rawPath: "/b/%FE" }, "SignatureDoesNotMatch");
  // A decoded slash is a slash for the router and for the signature.
  const slash = await smithySigned("GET", "/b/a/b");
  verify({ ...slash, rawPath: "/b/a%2Fb" });
});

Deno.test("header values are signed as the UTF-8 text their bytes encode", () => {
  const bytes = (text: string) => String.fromCharCode(...new TextEncoder().encode(text));
  assert.equal(signedHeaderText(bytes("café € 日本")), "café € 日本");
  assert.equal(signedHeaderText("plain ascii"), "plain ascii");
  assert.equal(signedHeaderText("caf\xe9"), "caf\xe9", "not UTF-8: left as it came");
  const headers = new Headers({ "x-amz-meta-a": bytes("  é  ü ") });
  assert.equal(canonicalHeaders(["x-amz-meta-a"], headers), "x-amz-meta-a:é ü\n");
});
