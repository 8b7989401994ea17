import assert from "node:assert/strict";
import type { ObjectMeta } from "../backend.ts";
import { decodeValue, encodeValue, metaFromHeaders, metaToHeaders } from "./s3-meta.ts";

const base: ObjectMeta = {
  size: 10,
  etag: "0123456789abcdef0123456789abcdef",
  md5: "0123456789abcdef0123456789abcdef",
  sha256: "ab".repeat(32),
  contentType: "text/plain",
  userMeta: {},
  headers: {},
  lastModified: 1_700_000_000_000,
  storage: "passthrough",
};

/** What a store sends back for an object PUT with `headers` (plus its own ETag and time). */
function stored(headers: Record<string, string>, lastModified = "Tue, 14 Nov 2023 22:13:20 GMT") {
  return new Headers({ ...headers, etag: '"backend-etag"', "last-modified": lastModified });
}

Deno.test("every field round-trips, Last-Modified comes from the store", () => {
  const meta: ObjectMeta & { referenceSha256: string } = {
    ...base,
    size: 99,
    etag: "0123456789abcdef0123456789abcdef-4",
    md5: "",
    partsCount: 4,
    storage: "delta",
    userMeta: { a: "1", "svc-size": "mine", "svc-u-x": "deeper", "": "" },
    headers: { "cache-control": "no-cache", expires: "0" },
    referenceSha256: "cd".repeat(32),
  };
  const back = metaFromHeaders(stored(metaToHeaders(meta)), 10);
  assert.deepEqual(back, { ...meta, lastModified: Date.parse("Tue, 14 Nov 2023 22:13:20 GMT") });
});

Deno.test("user keys starting with svc- never collide with ours", () => {
  const headers = metaToHeaders({ ...base, userMeta: { "svc-size": "1", "svc-etag": "e" } });
  assert.equal(headers["x-amz-meta-svc-size"], "10");
  assert.equal(headers["x-amz-meta-svc-u-svc-size"], "1");
  assert.equal(headers["x-amz-meta-svc-u-svc-etag"], "e");
  assert.deepEqual(metaFromHeaders(stored(headers), 10).userMeta, {
    "svc-size": "1",
    "svc-etag": "e",
  });
});

Deno.test("an empty content type survives; S3 would invent one", () => {
  const headers = metaToHeaders({ ...base, contentType: "" });
  assert.equal(headers["content-type"], undefined);
  const back = metaFromHeaders(stored({ ...headers, "content-type": "binary/octet-stream" }), 10);
  assert.equal(back.contentType, "");
});

Deno.test("values outside printable ASCII are RFC 2047 encoded, and only ours are decoded", () => {
  for (const value of ["grüße", " lead", "trail ", "", "tab\there", "=?UTF-8?B?aGk=?=", "ok"]) {
    assert.equal(decodeValue(encodeValue(value)), value, JSON.stringify(value));
    assert.match(encodeValue(value), /^[\x20-\x7e]*$/);
  }
  assert.equal(encodeValue("plain value"), "plain value");
  assert.equal(decodeValue("=?UTF-8?B?aGk=?="), "hi");
});

Deno.test("extra fields must be strings with simple names", () => {
  assert.throws(
    () => metaToHeaders({ ...base, count: 3 } as unknown as ObjectMeta),
    /Metadata field "count" cannot be stored/,
  );
  const headers = metaToHeaders({ ...base, buildNumber: "k1" } as unknown as ObjectMeta);
  assert.equal(headers["x-amz-meta-svc-x-build-number"], "k1");
});

Deno.test("the encryption key id travels as svc-encryption-key-id (SPEC's name) and back", () => {
  const headers = metaToHeaders({ ...base, encryptionKeyId: "key.1" });
  assert.equal(headers["x-amz-meta-svc-encryption-key-id"], "key.1");
  assert.equal(headers["x-amz-meta-svc-x-encryption-key-id"], undefined);
  const back = metaFromHeaders(new Headers({ ...headers, etag: '"x-1"' }), 500);
  assert.equal(back.encryptionKeyId, "key.1");
  assert.equal(metaFromHeaders(new Headers(metaToHeaders(base)), 1).encryptionKeyId, undefined);
});

Deno.test("objects svc did not write are read from the plain headers", () => {
  const headers = new Headers({
    etag: '"d41d8cd98f00b204e9800998ecf8427e"',
    "content-type": "image/png",
    "last-modified": "Tue, 14 Nov 2023 22:13:20 GMT",
    "x-amz-meta-owner": "someone",
    "cache-control": "max-age=1",
  });
  assert.deepEqual(metaFromHeaders(headers, 1234), {
    size: 1234,
    etag: "d41d8cd98f00b204e9800998ecf8427e",
    md5: "d41d8cd98f00b204e9800998ecf8427e",
    sha256: "",
    contentType: "image/png",
    userMeta: { owner: "someone" },
    headers: { "cache-control": "max-age=1" },
    lastModified: Date.parse("Tue, 14 Nov 2023 22:13:20 GMT"),
    storage: "passthrough",
  });
  const multipart = metaFromHeaders(new Headers({ etag: '"abc-3"' }), 5);
  assert.equal(multipart.etag, "abc-3");
  assert.equal(multipart.md5, "");
});
