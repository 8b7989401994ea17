import assert from "node:assert/strict";
import { SvcError } from "../lib/errors.ts";
import { contentRange, parseRange, rangeLength, unsatisfiedContentRange } from "./range.ts";

function assertUnsatisfiable(header: string, size: number): void {
  assert.throws(() => parseRange(header, size), (err: unknown) => {
    assert.ok(err instanceof SvcError);
    assert.equal(err.code, "InvalidRange");
    assert.equal(err.status, 416);
    assert.equal(err.details.ActualObjectSize, String(size));
    assert.equal(err.details.RangeRequested, header);
    assert.match(err.message, new RegExp(`"${header}"`));
    return true;
  });
}

Deno.test("closed ranges select inclusive bytes and clamp past the end", () => {
  assert.deepEqual(parseRange("bytes=0-0", 10), { start: 0, end: 0 });
  assert.deepEqual(parseRange("bytes=2-5", 10), { start: 2, end: 5 });
  assert.deepEqual(parseRange("bytes=0-9", 10), { start: 0, end: 9 });
  assert.deepEqual(parseRange("bytes=5-100", 10), { start: 5, end: 9 });
  assert.deepEqual(parseRange("bytes=9-9", 10), { start: 9, end: 9 });
  assert.deepEqual(parseRange("bytes=3-99999999999999999999999", 10), { start: 3, end: 9 });
});

Deno.test("open ranges run to the last byte", () => {
  assert.deepEqual(parseRange("bytes=0-", 10), { start: 0, end: 9 });
  assert.deepEqual(parseRange("bytes=7-", 10), { start: 7, end: 9 });
});

Deno.test("suffix ranges take the last n bytes, the whole object when n is larger", () => {
  assert.deepEqual(parseRange("bytes=-3", 10), { start: 7, end: 9 });
  assert.deepEqual(parseRange("bytes=-10", 10), { start: 0, end: 9 });
  assert.deepEqual(parseRange("bytes=-11", 10), { start: 0, end: 9 });
  assert.deepEqual(parseRange("bytes=-99999999999999999999", 10), { start: 0, end: 9 });
});

Deno.test("a first byte at or past the end is 416", () => {
  assertUnsatisfiable("bytes=10-", 10);
  assertUnsatisfiable("bytes=10-20", 10);
  assertUnsatisfiable("bytes=11-11", 10);
  assertUnsatisfiable("bytes=99999999999999999999-", 10);
  assertUnsatisfiable("bytes=-0", 10);
});

Deno.test("empty objects: ranges with a first byte are 416, suffix ranges read everything", () => {
  assertUnsatisfiable("bytes=0-", 0);
  assertUnsatisfiable("bytes=0-0", 0);
  assertUnsatisfiable("bytes=0-10", 0);
  assert.equal(parseRange("bytes=-1", 0), null);
  assert.equal(parseRange("bytes=-100", 0), null);
});

Deno.test("headers S3 ignores give the full object", () => {
  for (
    const header of [
      "bytes=0-1,3-4",
      "bytes=0-1, 3-4",
      "bytes=0-1,",
      "items=0-1",
      "bytes=5-2",
      "bytes=1-0",
      "bytes=-",
      "bytes=",
      "bytes",
      "bytes=a-b",
      "bytes=1-2-3",
      "bytes=+1-2",
      "bytes=-1-2",
      "0-1",
      "",
      "bytes=1.5-2",
    ]
  ) {
    assert.equal(parseRange(header, 10), null, header);
  }
  assert.equal(parseRange(null, 10), null);
  assert.equal(parseRange(undefined, 10), null);
  // An ignored header never turns into a 416, even when its numbers are out of range.
  assert.equal(parseRange("bytes=50-60,70-80", 10), null);
  assert.equal(parseRange("bytes=20-15", 10), null);
});

Deno.test("the unit is case-insensitive and surrounding whitespace is tolerated", () => {
  assert.deepEqual(parseRange("BYTES=1-2", 10), { start: 1, end: 2 });
  assert.deepEqual(parseRange(" bytes= 1-2 ", 10), { start: 1, end: 2 });
});

Deno.test("content-range values", () => {
  assert.equal(contentRange({ start: 0, end: 0 }, 1), "bytes 0-0/1");
  assert.equal(contentRange({ start: 7, end: 9 }, 10), "bytes 7-9/10");
  assert.equal(unsatisfiedContentRange(10), "bytes */10");
  assert.equal(rangeLength({ start: 7, end: 9 }), 3);
});
