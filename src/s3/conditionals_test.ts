import assert from "node:assert/strict";
import { SvcError } from "../lib/errors.ts";
import {
  assertCopySourceConditions,
  assertReadConditions,
  bareEtag,
  type ConditionHeaders,
  copySourceConditionHeaders,
  etagListMatches,
  evaluateCopySourceConditions,
  evaluateReadConditions,
  evaluateWriteConditions,
  formatHttpDate,
  parseHttpDate,
  readConditionHeaders,
  validateWriteConditionHeaders,
} from "./conditionals.ts";

const NOW = Date.UTC(2026, 5, 15, 12, 0, 0);
// Last modified half a second into a second, so second-precision comparisons are exercised.
const MODIFIED = Date.UTC(2026, 5, 1, 10, 0, 0) + 500;
const OBJECT = { etag: "0123456789abcdef0123456789abcdef", lastModified: MODIFIED };
const SAME = formatHttpDate(MODIFIED); // 10:00:00, the second the object was modified in
const BEFORE = formatHttpDate(MODIFIED - 60_000);
const AFTER = formatHttpDate(MODIFIED + 60_000);
const FUTURE = formatHttpDate(NOW + 86_400_000);
const MATCH = `"${OBJECT.etag}"`;
const OTHER = '"ffffffffffffffffffffffffffffffff"';

function read(headers: ConditionHeaders): string {
  return evaluateReadConditions(headers, OBJECT, NOW);
}

function copy(headers: ConditionHeaders): string {
  return evaluateCopySourceConditions(headers, OBJECT, NOW);
}

function failsWith(fn: () => unknown, code: string, status: number): void {
  assert.throws(fn, (err: unknown) => {
    assert.ok(err instanceof SvcError);
    assert.equal(err.code, code);
    assert.equal(err.status, status);
    return true;
  });
}

Deno.test("HTTP dates: IMF-fixdate round-trips, RFC 850 and asctime parse, junk is null", () => {
  assert.equal(formatHttpDate(Date.UTC(1994, 10, 6, 8, 49, 37)), "Sun, 06 Nov 1994 08:49:37 GMT");
  const expected = Date.UTC(1994, 10, 6, 8, 49, 37);
  assert.equal(parseHttpDate("Sun, 06 Nov 1994 08:49:37 GMT"), expected);
  assert.equal(parseHttpDate("Sunday, 06-Nov-94 08:49:37 GMT", NOW), expected);
  assert.equal(parseHttpDate("Sun Nov  6 08:49:37 1994"), expected);
  assert.equal(parseHttpDate("  Sun, 06 Nov 1994 08:49:37 GMT  "), expected);
  assert.equal(parseHttpDate(formatHttpDate(MODIFIED)), MODIFIED - 500);
  // Two-digit years more than 50 years ahead belong to the previous century.
  assert.equal(parseHttpDate("Monday, 01-Jan-40 00:00:00 GMT", NOW), Date.UTC(2040, 0, 1));
  assert.equal(parseHttpDate("Monday, 01-Jan-80 00:00:00 GMT", NOW), Date.UTC(1980, 0, 1));
  assert.equal(
    parseHttpDate("Mon, 01 Jan 0050 00:00:00 GMT"),
    new Date("0050-01-01T00:00:00Z").getTime(),
  );
  for (
    const junk of [
      "",
      "yesterday",
      "2026-06-01T10:00:00Z",
      "Sun, 06 Nov 1994 08:49:37 UTC",
      "Sun, 6 Nov 1994 08:49:37 GMT",
      "Sun, 31 Feb 1994 08:49:37 GMT",
      "Sun, 06 Nov 1994 24:00:00 GMT",
      "Sun, 06 Nov 1994 08:60:00 GMT",
      "Sun, 06 Foo 1994 08:49:37 GMT",
      "Xyz, 06 Nov 1994 08:49:37 GMT",
    ]
  ) {
    assert.equal(parseHttpDate(junk), null, junk);
  }
  assert.equal(parseHttpDate(null), null);
});

Deno.test("ETag lists: quoted, bare, weak, lists and wildcard", () => {
  assert.ok(etagListMatches(MATCH, OBJECT.etag));
  assert.ok(etagListMatches(OBJECT.etag, OBJECT.etag));
  assert.ok(etagListMatches(OBJECT.etag, MATCH));
  assert.ok(etagListMatches(`W/${MATCH}`, OBJECT.etag));
  assert.ok(etagListMatches(`${OTHER}, ${MATCH}`, OBJECT.etag));
  assert.ok(etagListMatches(`${OTHER},${OBJECT.etag}`, OBJECT.etag));
  assert.ok(etagListMatches("*", OBJECT.etag));
  assert.ok(etagListMatches('"a,b", "abc-2"', "abc-2"));
  assert.ok(!etagListMatches('"a,b"', "a"));
  assert.ok(!etagListMatches(OTHER, OBJECT.etag));
  assert.ok(!etagListMatches('"*"', OBJECT.etag), "a quoted star is a tag, not the wildcard");
  assert.ok(!etagListMatches(OBJECT.etag.slice(1), OBJECT.etag));
  assert.equal(bareEtag(' W/"abc" '), "abc");
});

Deno.test("read conditions: each header alone", () => {
  assert.equal(read({}), "ok");
  assert.equal(read({ ifMatch: MATCH }), "ok");
  assert.equal(read({ ifMatch: OTHER }), "precondition-failed");
  assert.equal(read({ ifMatch: "*" }), "ok");
  assert.equal(read({ ifNoneMatch: OTHER }), "ok");
  assert.equal(read({ ifNoneMatch: MATCH }), "not-modified");
  assert.equal(read({ ifNoneMatch: "*" }), "not-modified");
  assert.equal(read({ ifUnmodifiedSince: SAME }), "ok", "same second is unmodified");
  assert.equal(read({ ifUnmodifiedSince: AFTER }), "ok");
  assert.equal(read({ ifUnmodifiedSince: BEFORE }), "precondition-failed");
  assert.equal(read({ ifModifiedSince: BEFORE }), "ok");
  assert.equal(read({ ifModifiedSince: SAME }), "not-modified", "same second is not modified");
  assert.equal(read({ ifModifiedSince: AFTER }), "not-modified");
});

Deno.test("read conditions: S3's precedence table, row by row", () => {
  // If-Match true + If-Unmodified-Since false → 200.
  assert.equal(read({ ifMatch: MATCH, ifUnmodifiedSince: BEFORE }), "ok");
  // If-None-Match false + If-Modified-Since true → 304.
  assert.equal(read({ ifNoneMatch: MATCH, ifModifiedSince: BEFORE }), "not-modified");
  // If-Match false → 412, whatever the others say.
  assert.equal(read({ ifMatch: OTHER, ifUnmodifiedSince: AFTER }), "precondition-failed");
  assert.equal(read({ ifMatch: OTHER, ifNoneMatch: MATCH }), "precondition-failed");
  // If-Unmodified-Since false without If-Match → 412, before any 304.
  assert.equal(read({ ifUnmodifiedSince: BEFORE, ifNoneMatch: MATCH }), "precondition-failed");
  assert.equal(read({ ifUnmodifiedSince: BEFORE, ifModifiedSince: AFTER }), "precondition-failed");
  // If-None-Match matches → 304 even when If-Match holds.
  assert.equal(read({ ifMatch: MATCH, ifNoneMatch: MATCH }), "not-modified");
  // If-None-Match true makes If-Modified-Since irrelevant.
  assert.equal(read({ ifNoneMatch: OTHER, ifModifiedSince: AFTER }), "ok");
  // If-Modified-Since not modified (no If-None-Match) → 304, even after a true If-Match.
  assert.equal(read({ ifMatch: MATCH, ifModifiedSince: AFTER }), "not-modified");
  // All four true → 200.
  assert.equal(
    read({ ifMatch: MATCH, ifUnmodifiedSince: AFTER, ifNoneMatch: OTHER, ifModifiedSince: BEFORE }),
    "ok",
  );
});

Deno.test("read conditions: future and unparseable dates are ignored", () => {
  assert.equal(read({ ifModifiedSince: FUTURE }), "ok", "a future If-Modified-Since is invalid");
  assert.equal(read({ ifModifiedSince: "not a date" }), "ok");
  assert.equal(read({ ifUnmodifiedSince: "not a date" }), "ok");
  assert.equal(read({ ifUnmodifiedSince: FUTURE }), "ok");
  assert.equal(read({ ifMatch: "", ifNoneMatch: " " }), "ok", "empty headers are absent");
});

Deno.test("read conditions throw 304 and 412 with the deciding header", () => {
  failsWith(() => assertReadConditions({ ifNoneMatch: MATCH }, OBJECT, NOW), "NotModified", 304);
  failsWith(() => assertReadConditions({ ifMatch: OTHER }, OBJECT, NOW), "PreconditionFailed", 412);
  try {
    assertReadConditions({ ifUnmodifiedSince: BEFORE }, OBJECT, NOW);
    assert.fail("expected a throw");
  } catch (err) {
    assert.ok(err instanceof SvcError);
    assert.equal(err.details.Condition, "If-Unmodified-Since");
  }
  assertReadConditions({ ifMatch: MATCH }, OBJECT, NOW);
});

Deno.test("copy-source conditions: same pairs, every failure is 412", () => {
  assert.equal(copy({}), "ok");
  assert.equal(copy({ ifMatch: MATCH, ifUnmodifiedSince: BEFORE }), "ok");
  assert.equal(copy({ ifNoneMatch: MATCH, ifModifiedSince: BEFORE }), "precondition-failed");
  assert.equal(copy({ ifMatch: OTHER }), "precondition-failed");
  assert.equal(copy({ ifUnmodifiedSince: BEFORE }), "precondition-failed");
  assert.equal(copy({ ifNoneMatch: MATCH }), "precondition-failed");
  assert.equal(copy({ ifModifiedSince: AFTER }), "precondition-failed");
  assert.equal(copy({ ifModifiedSince: BEFORE }), "ok");
  assert.equal(copy({ ifModifiedSince: FUTURE }), "ok");
  try {
    assertCopySourceConditions({ ifNoneMatch: MATCH }, OBJECT, NOW);
    assert.fail("expected a throw");
  } catch (err) {
    assert.ok(err instanceof SvcError);
    assert.equal(err.code, "PreconditionFailed");
    assert.equal(err.details.Condition, "x-amz-copy-source-If-None-Match");
  }
});

Deno.test("header extraction", () => {
  const headers = new Headers({
    "If-Match": MATCH,
    "x-amz-copy-source-if-none-match": OTHER,
    "x-amz-copy-source-if-modified-since": BEFORE,
  });
  assert.deepEqual(readConditionHeaders(headers), {
    ifMatch: MATCH,
    ifNoneMatch: null,
    ifModifiedSince: null,
    ifUnmodifiedSince: null,
  });
  assert.deepEqual(copySourceConditionHeaders(headers), {
    ifMatch: null,
    ifNoneMatch: OTHER,
    ifModifiedSince: BEFORE,
    ifUnmodifiedSince: null,
  });
});

Deno.test("write conditions: If-None-Match *", () => {
  evaluateWriteConditions({ ifNoneMatch: "*" }, null);
  failsWith(
    () => evaluateWriteConditions({ ifNoneMatch: "*" }, { etag: OBJECT.etag }),
    "PreconditionFailed",
    412,
  );
  evaluateWriteConditions({}, { etag: OBJECT.etag });
  evaluateWriteConditions({}, null);
});

Deno.test("write conditions: If-Match", () => {
  evaluateWriteConditions({ ifMatch: MATCH }, { etag: OBJECT.etag });
  evaluateWriteConditions({ ifMatch: OBJECT.etag }, { etag: MATCH });
  evaluateWriteConditions({ ifMatch: "*" }, { etag: OBJECT.etag });
  failsWith(
    () => evaluateWriteConditions({ ifMatch: OTHER }, { etag: OBJECT.etag }),
    "PreconditionFailed",
    412,
  );
  failsWith(() => evaluateWriteConditions({ ifMatch: MATCH }, null), "NoSuchKey", 404);
  failsWith(() => evaluateWriteConditions({ ifMatch: "*" }, null), "NoSuchKey", 404);
});

Deno.test("write conditions: If-None-Match with an ETag is not implemented", () => {
  failsWith(() => validateWriteConditionHeaders({ ifNoneMatch: MATCH }), "NotImplemented", 501);
  failsWith(() => evaluateWriteConditions({ ifNoneMatch: MATCH }, null), "NotImplemented", 501);
  validateWriteConditionHeaders({ ifNoneMatch: " * " });
  validateWriteConditionHeaders({ ifMatch: MATCH });
});
