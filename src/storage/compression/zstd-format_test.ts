import assert from "node:assert/strict";
import {
  decodeIndex,
  encodeIndex,
  formatMarker,
  frameCountOf,
  frameLength,
  framesForRange,
  hasCompressedExtension,
  indexRange,
  parseMarker,
  storedLengthOf,
} from "./zstd-format.ts";

const MD5 = "0123456789abcdef0123456789abcdef";

Deno.test("marker: round trip, with and without md5", () => {
  const marker = { frameSize: 1048576, indexOffset: 12345, size: 5_000_000, md5: MD5 };
  assert.deepEqual(parseMarker(formatMarker(marker)), marker);
  const multipart = { ...marker, md5: "" };
  assert.equal(formatMarker(multipart), "zstd:1048576:12345:5000000:");
  assert.deepEqual(parseMarker(formatMarker(multipart)), multipart);
});

Deno.test("marker: foreign or damaged markers are refused", () => {
  for (const text of ["", "zstd", "lz4:1:2:3:", "zstd:0:1:1:", "zstd:1:2:3:xyz", "zstd:a:2:3:"]) {
    assert.throws(() => parseMarker(text), /Unknown storage compression marker/, text);
  }
});

Deno.test("frame math: counts, last frame length, stored length", () => {
  const marker = { frameSize: 10, indexOffset: 40, size: 25, md5: "" };
  assert.equal(frameCountOf(marker), 3);
  assert.deepEqual([0, 1, 2].map((i) => frameLength(marker, i)), [10, 10, 5]);
  assert.equal(storedLengthOf(marker), 40 + 3 * 8);
  assert.equal(frameCountOf({ frameSize: 10, size: 0 }), 0);
  assert.equal(frameCountOf({ frameSize: 10, size: 10 }), 1);
  assert.equal(frameCountOf({ frameSize: 10, size: 11 }), 2);
});

Deno.test("frame math: ranges map to the frames holding them", () => {
  const cases: [number, number, number, number][] = [
    [0, 0, 0, 0], // first byte
    [0, 9, 0, 0], // exactly one frame
    [9, 10, 0, 1], // across a boundary
    [10, 10, 1, 1], // first byte of a frame
    [24, 24, 2, 2], // last byte of the object
    [15, 24, 1, 2], // a suffix range
    [0, 24, 0, 2], // everything
  ];
  for (const [start, end, first, last] of cases) {
    assert.deepEqual(framesForRange(10, { start, end }), { first, last }, `${start}-${end}`);
  }
});

Deno.test("index range: the entry before the first frame through the last frame's", () => {
  const marker = { frameSize: 10, indexOffset: 100, size: 50, md5: "" };
  assert.deepEqual(indexRange(marker, -1, 0), { start: 100, end: 107 });
  assert.deepEqual(indexRange(marker, 1, 3), { start: 108, end: 131 });
  assert.deepEqual(indexRange(marker, -1, 4), { start: 100, end: 139 });
});

Deno.test("index: round trip and damage", () => {
  const ends = [17, 40, 40 + 2 ** 33];
  assert.deepEqual(decodeIndex(encodeIndex(ends), 0, 2 ** 34), ends);
  assert.deepEqual(decodeIndex(new Uint8Array(0), 0, 10), []);
  assert.throws(() => decodeIndex(new Uint8Array(7), 0, 100), /no whole entries/);
  assert.throws(() => decodeIndex(encodeIndex([20, 10]), 0, 100), /damaged/);
  assert.throws(() => decodeIndex(encodeIndex([20, 200]), 0, 100), /damaged/);
});

Deno.test("extensions: compressed formats are recognised, others are not", () => {
  for (
    const key of ["a.gz", "dir/b.TGZ", "c.zip", "d.jpg", "e.mp4", "x/y.tar.zst", "b/app.img.delta"]
  ) {
    assert.equal(hasCompressedExtension(key), true, key);
  }
  for (const key of ["a.csv", "b.tar", "c.json", "reference.bin", "gz", "dir.zip/file", ".zip"]) {
    assert.equal(hasCompressedExtension(key), false, key);
  }
});
