import assert from "node:assert/strict";
import { dotSegmentOf } from "./key-segments.ts";

Deno.test("dotSegmentOf: the first . or .. segment, never dots inside a segment", () => {
  assert.equal(dotSegmentOf("../b/x"), "..");
  assert.equal(dotSegmentOf("a/./b"), ".");
  assert.equal(dotSegmentOf("a/.."), "..");
  assert.equal(dotSegmentOf("./.."), ".");
  assert.equal(dotSegmentOf("."), ".");
  for (const key of ["a..b", ".hidden/x", "a/.../b", "a/b.", "..a/x", "a//b", "%2E%2E/x"]) {
    assert.equal(dotSegmentOf(key), null, key);
  }
});
