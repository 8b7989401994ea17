import assert from "node:assert/strict";
import {
  type AccessEntry,
  accessNoteOf,
  formatAccessLine,
  noteAccess,
  redactQuery,
} from "./access-line.ts";

const SIGNATURE = "0f1e2d3c4b5a69788796a5b4c3d2e1f00f1e2d3c4b5a69788796a5b4c3d2e1f0";
const CREDENTIAL = "AKIAEXAMPLE%2F20260101%2Fus-east-1%2Fs3%2Faws4_request";

function entry(overrides: Partial<AccessEntry> = {}): AccessEntry {
  return {
    time: new Date("2026-11-28T18:00:00.000Z"),
    client: "10.0.0.7",
    method: "GET",
    path: "/photos/cat.jpg",
    query: "",
    status: 200,
    bytesIn: 0,
    bytesOut: 1234,
    durationMs: 12.34567,
    cancelled: false,
    ...overrides,
  };
}

Deno.test("formatAccessLine writes every field, with nulls for what is unknown", () => {
  const line = JSON.parse(formatAccessLine(entry({
    requestId: "ABCDEF0123456789",
    principal: "alice",
    operation: "GetObject",
    bucket: "photos",
    key: "cat.jpg",
    storage: "delta",
  })));
  assert.deepEqual(line, {
    time: "2026-11-28T18:00:00.000Z",
    request_id: "ABCDEF0123456789",
    client: "10.0.0.7",
    principal: "alice",
    operation: "GetObject",
    method: "GET",
    path: "/photos/cat.jpg",
    bucket: "photos",
    key: "cat.jpg",
    status: 200,
    bytes_in: 0,
    bytes_out: 1234,
    duration_ms: 12.346,
    storage: "delta",
  });
});

Deno.test("formatAccessLine falls back to method and path, anonymous as null", () => {
  const line = JSON.parse(formatAccessLine(entry({ method: "POST", path: "/_/api/x" })));
  assert.deepEqual(line.operation, "POST /_/api/x");
  assert.deepEqual(line.principal, null);
  assert.deepEqual(line.request_id, null);
  assert.deepEqual("storage" in line, false);
  assert.deepEqual("cancelled" in line, false);
  assert.deepEqual(JSON.parse(formatAccessLine(entry({ cancelled: true }))).cancelled, true);
});

Deno.test("redactQuery hides signatures and credentials, keeps the rest", () => {
  const query = `X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=${CREDENTIAL}` +
    `&X-Amz-Date=20260101T000000Z&X-Amz-Expires=60&X-Amz-SignedHeaders=host` +
    `&X-Amz-Signature=${SIGNATURE}&X-Amz-Security-Token=tok123&list-type=2`;
  const redacted = redactQuery(query);
  assert.deepEqual(redacted.includes(SIGNATURE), false);
  assert.deepEqual(redacted.includes("AKIAEXAMPLE"), false);
  assert.deepEqual(redacted.includes("tok123"), false);
  assert.ok(redacted.includes("X-Amz-Signature=REDACTED"), redacted);
  assert.ok(redacted.includes("X-Amz-Credential=REDACTED"), redacted);
  assert.ok(redacted.includes("X-Amz-Expires=60&"), redacted);
  assert.ok(redacted.includes("list-type=2"), redacted);
  // Names are matched case-insensitively and percent-decoded; SigV2's too.
  assert.deepEqual(
    redactQuery("x-amz-signature=a&Signature=b&AWSAccessKeyId=c&X%2DAmz%2DSignature=d"),
    "x-amz-signature=REDACTED&Signature=REDACTED&AWSAccessKeyId=REDACTED&X%2DAmz%2DSignature=REDACTED",
  );
  assert.deepEqual(redactQuery(""), "");
  assert.deepEqual(redactQuery("uploads"), "uploads");
});

Deno.test("formatAccessLine logs the query only redacted", () => {
  const text = formatAccessLine(entry({ query: `X-Amz-Signature=${SIGNATURE}&versionId=v1` }));
  assert.deepEqual(text.includes(SIGNATURE), false);
  assert.deepEqual(JSON.parse(text).query, "X-Amz-Signature=REDACTED&versionId=v1");
});

Deno.test("noteAccess merges notes on one request, and keeps requests apart", () => {
  const a = new Request("http://x/a");
  const b = new Request("http://x/b");
  noteAccess(a, { requestId: "1" });
  noteAccess(a, { principal: "bob" });
  assert.deepEqual(accessNoteOf(a), { requestId: "1", principal: "bob" });
  assert.deepEqual(accessNoteOf(b), undefined);
});
