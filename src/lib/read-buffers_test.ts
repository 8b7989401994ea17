import assert from "node:assert/strict";
import {
  freeReadBuffers,
  isLent,
  lendChunk,
  READ_BUFFER_BYTES,
  recycleChunk,
  takeReadBuffer,
} from "./read-buffers.ts";

Deno.test("read buffers: a lent chunk is recycled once, as the very view that was lent", () => {
  const buffer = takeReadBuffer();
  assert.equal(buffer.byteLength, READ_BUFFER_BYTES);
  const chunk = buffer.subarray(0, 1000);
  assert.equal(isLent(chunk), false);
  lendChunk(chunk);
  assert.equal(isLent(chunk), true);
  const before = freeReadBuffers();
  // A part of the chunk (what a stage that split it would pass on) is never recycled.
  recycleChunk(chunk.subarray(0, 10));
  recycleChunk(chunk.subarray(10));
  assert.equal(freeReadBuffers(), before);
  recycleChunk(chunk);
  assert.equal(freeReadBuffers(), before + 1);
  assert.equal(isLent(chunk), false);
  // A second recycle of the same chunk does not put its buffer in the pool twice.
  recycleChunk(chunk);
  assert.equal(freeReadBuffers(), before + 1);
  // The next read gets that buffer back.
  assert.equal(takeReadBuffer().buffer, chunk.buffer);
});

Deno.test("read buffers: chunks that were never lent are never recycled", () => {
  const before = freeReadBuffers();
  recycleChunk(new Uint8Array(READ_BUFFER_BYTES));
  const small = new Uint8Array(4096);
  lendChunk(small); // not a read buffer: lending it is a no-op
  assert.equal(isLent(small), false);
  recycleChunk(small);
  assert.equal(freeReadBuffers(), before);
});
