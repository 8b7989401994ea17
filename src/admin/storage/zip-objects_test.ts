import assert from "node:assert/strict";
import { entryName } from "./zip-objects.ts";

Deno.test("zip entry names stay inside the archive's folder", () => {
  assert.equal(entryName("photos/2024/a.txt", "photos/"), "2024/a.txt");
  assert.equal(entryName("a/../../etc/passwd", ""), "a/_/_/etc/passwd");
  assert.equal(entryName("/abs//x", ""), "abs/x");
  assert.equal(entryName("./x", ""), "_/x");
  assert.equal(entryName("odd ../e.txt", ""), "odd ../e.txt");
});
