import assert from "node:assert/strict";
import {
  compareBytes,
  coveredBy,
  coveredByAny,
  rangeBefore,
  rollUp,
  scanRanges,
  wholeBucket,
} from "./public-prefix.ts";

Deno.test("a prefix with a trailing slash is directory-aligned", () => {
  assert.equal(coveredBy("public/x", "public/"), true);
  assert.equal(coveredBy("public/a/b", "public/"), true);
  assert.equal(coveredBy("public/", "public/"), true);
  assert.equal(coveredBy("publicity/x", "public/"), false);
  assert.equal(coveredBy("public", "public/"), false);
});

Deno.test("a prefix without a trailing slash is a plain key prefix", () => {
  assert.equal(coveredBy("publicity/x", "public"), true);
  assert.equal(coveredBy("public/x", "public"), true);
  assert.equal(coveredBy("pub", "public"), false);
});

Deno.test("the empty prefix covers the whole bucket", () => {
  assert.equal(coveredBy("anything/at/all", ""), true);
  assert.equal(wholeBucket([""]), true);
  assert.equal(wholeBucket(["a/"]), false);
  assert.equal(coveredByAny("b/x", ["a/", "b/"]), true);
  assert.equal(coveredByAny("c/x", ["a/", "b/"]), false);
});

Deno.test("rollUp finds the common prefix from the request prefix", () => {
  assert.equal(rollUp("a/b/c", "", "/"), "a/");
  assert.equal(rollUp("a/b/c", "a/", "/"), "a/b/");
  assert.equal(rollUp("a/b", "a/", "/"), undefined);
  assert.equal(rollUp("a/b", "", ""), undefined);
  assert.equal(rollUp("x--y--z", "", "--"), "x--");
});

Deno.test("scanRanges intersects public prefixes with the request prefix", () => {
  assert.deepEqual(scanRanges(["releases/"], "", ""), [{ prefix: "releases/" }]);
  assert.deepEqual(scanRanges(["releases/"], "releases/v1/", ""), [{ prefix: "releases/v1/" }]);
  assert.deepEqual(scanRanges(["releases/"], "rel", ""), [{ prefix: "releases/" }]);
  assert.deepEqual(scanRanges(["releases/"], "releases-internal/", ""), []);
  assert.deepEqual(scanRanges(["releases/"], "other", "/"), []);
});

Deno.test("scanRanges merges nested prefixes and sorts them in listing order", () => {
  assert.deepEqual(scanRanges(["b/", "a/x/", "a/"], "", ""), [{ prefix: "a/" }, { prefix: "b/" }]);
});

Deno.test("scanRanges marks ranges that roll up into one common prefix", () => {
  assert.deepEqual(scanRanges(["pub/releases/"], "", "/"), [
    { prefix: "pub/releases/", rolledUpAs: "pub/" },
  ]);
  assert.deepEqual(scanRanges(["pub/releases/"], "pub/", "/"), [
    { prefix: "pub/releases/", rolledUpAs: "pub/releases/" },
  ]);
  // No delimiter inside the prefix past the request prefix: the range is listed entry by entry.
  assert.deepEqual(scanRanges(["releases"], "", "/"), [{ prefix: "releases" }]);
});

Deno.test("rangeBefore tells ranges wholly before a resume point", () => {
  assert.equal(rangeBefore("a/", "b"), true);
  assert.equal(rangeBefore("a/", "a/x"), false);
  assert.equal(rangeBefore("b/", "a/x"), false);
});

Deno.test("compareBytes is UTF-8 byte order", () => {
  assert.ok(compareBytes("a", "b") < 0);
  assert.ok(compareBytes("ab", "a") > 0);
  // U+FF5E sorts after U+E000 in UTF-8 as in UTF-16, but U+10000 (a surrogate pair in UTF-16)
  // sorts after U+FF5E only in UTF-8.
  assert.ok(compareBytes("\u{10000}", "\uff5e") > 0);
});
