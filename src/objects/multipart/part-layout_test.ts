import assert from "node:assert/strict";
import { decodePartSizes, encodePartSizes, MAX_LAYOUT_CHARS, partRange } from "./part-layout.ts";
import { fakeMeta } from "../../testing/object-fixtures.ts";

const MiB = 1024 * 1024;

Deno.test("part layout: equal parts and a short last one stay a few characters", () => {
  const sizes = [...Array(9999).fill(8 * MiB), 1234];
  const text = encodePartSizes(sizes)!;
  assert.equal(text, `${8 * MiB}*9999,1234`);
  assert.deepEqual(decodePartSizes(text), sizes);
  assert.deepEqual(decodePartSizes(encodePartSizes([5, 6, 6, 0])!), [5, 6, 6, 0]);
});

Deno.test("part layout: too varied a list is not recorded; junk does not decode", () => {
  const varied = Array.from({ length: 500 }, (_, i) => 5 * MiB + i);
  assert.equal(encodePartSizes(varied), undefined);
  assert.ok(MAX_LAYOUT_CHARS < 2048); // fits S3 user metadata
  for (const junk of ["", "1,", "a", "5*0", "5*10001", "1*2*3", "-1"]) {
    assert.equal(decodePartSizes(junk), null, junk);
  }
});

Deno.test("part range: parts of a multipart object, the whole of a plain one", () => {
  const meta = { ...fakeMeta(10), partsCount: 3, partSizes: "4*2,2" };
  assert.deepEqual(partRange(meta, 1), { start: 0, end: 3 });
  assert.deepEqual(partRange(meta, 3), { start: 8, end: 9 });
  assert.throws(() => partRange(meta, 4), { code: "InvalidPartNumber" });
  assert.throws(() => partRange({ ...meta, partSizes: undefined }, 1), { code: "NotImplemented" });
  assert.throws(() => partRange({ ...meta, partSizes: "4,6" }, 1), { code: "NotImplemented" });
  assert.deepEqual(partRange(fakeMeta(10), 1), { start: 0, end: 9 });
  assert.equal(partRange(fakeMeta(0), 1), undefined);
  assert.throws(() => partRange(fakeMeta(10), 2), { code: "InvalidPartNumber" });
});
