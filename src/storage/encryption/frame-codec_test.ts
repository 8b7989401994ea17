/** The frame codec alone: layout arithmetic, round trips, and every kind of damage it must catch. */
import assert from "node:assert/strict";
import { randomBytes } from "../object-fixtures.ts";
import { FrameDecryptor } from "./decrypt-stream.ts";
import { EncryptionError } from "./encryption-error.ts";
import { encryptStream } from "./encrypt-stream.ts";
import { objectKey } from "./frame-crypto.ts";
import {
  FRAME_SIZE,
  frameCount,
  frameOffset,
  framesForRange,
  HEADER_SIZE,
  newHeader,
  parseHeader,
  plainSizeOf,
  SEALED_FRAME_SIZE,
  storedSizeOf,
  TAG_SIZE,
} from "./frame-format.ts";
import { ExactReader } from "./pipeline.ts";

const master = await crypto.subtle.importKey(
  "raw",
  crypto.getRandomValues(new Uint8Array(32)),
  "HKDF",
  false,
  ["deriveKey"],
);

/** A stream of `bytes` in chunks of the given sizes, cycled (odd chunking on purpose). */
function chunked(bytes: Uint8Array, sizes = [1, 7000, 65536, 100_001]): ReadableStream<Uint8Array> {
  let at = 0;
  let turn = 0;
  return new ReadableStream({
    pull(controller) {
      if (at >= bytes.length) return controller.close();
      const n = sizes[turn++ % sizes.length];
      controller.enqueue(bytes.slice(at, at + n));
      at += n;
    },
  });
}

async function seal(plain: Uint8Array, keyId = "k1") {
  const header = newHeader(keyId);
  const key = await objectKey(master, header);
  const stored = new Uint8Array(
    await new Response(encryptStream(chunked(plain), key, header)).arrayBuffer(),
  );
  return { header, key, stored };
}

async function open(
  stored: Uint8Array,
  size: number,
  range: [number, number] = [0, size - 1],
): Promise<Uint8Array> {
  const header = parseHeader(stored.subarray(0, HEADER_SIZE));
  const key = await objectKey(master, header);
  const { storedStart, storedEnd } = size === 0
    ? { storedStart: HEADER_SIZE, storedEnd: stored.length - 1 }
    : framesForRange(range[0], range[1], size);
  const isFull = range[0] === 0 && range[1] === size - 1;
  const slice = stored.subarray(storedStart, isFull ? stored.length : storedEnd + 1);
  const decryptor = new FrameDecryptor(new ExactReader(chunked(slice, [999, 70_000])), {
    key,
    header,
    size,
    start: range[0],
    end: range[1],
  });
  const pieces: Uint8Array[] = [];
  for (let piece; (piece = await decryptor.next()) !== null;) pieces.push(piece);
  const out = new Uint8Array(pieces.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const piece of pieces) {
    out.set(piece, at);
    at += piece.length;
  }
  return out;
}

Deno.test("frame format: stored size and frame positions", () => {
  assert.equal(frameCount(0), 1);
  assert.equal(frameCount(FRAME_SIZE), 1);
  assert.equal(frameCount(FRAME_SIZE + 1), 2);
  assert.equal(storedSizeOf(0), HEADER_SIZE + TAG_SIZE);
  assert.equal(storedSizeOf(FRAME_SIZE + 1), HEADER_SIZE + FRAME_SIZE + 1 + 2 * TAG_SIZE);
  assert.equal(frameOffset(2), HEADER_SIZE + 2 * SEALED_FRAME_SIZE);
  const size = 3 * FRAME_SIZE + 10;
  const range = framesForRange(FRAME_SIZE - 1, 3 * FRAME_SIZE + 2, size);
  assert.deepEqual(range, {
    first: 0,
    last: 3,
    storedStart: HEADER_SIZE,
    storedEnd: storedSizeOf(size) - 1,
  });
  assert.deepEqual(framesForRange(FRAME_SIZE, FRAME_SIZE, size), {
    first: 1,
    last: 1,
    storedStart: frameOffset(1),
    storedEnd: frameOffset(2) - 1,
  });
});

Deno.test("frame format: the plaintext size comes back from any stored size, or null", () => {
  for (
    const size of [0, 1, 15, 16, FRAME_SIZE - 1, FRAME_SIZE, FRAME_SIZE + 1, 7 * FRAME_SIZE + 9]
  ) {
    assert.equal(plainSizeOf(storedSizeOf(size)), size, `size ${size}`);
  }
  assert.equal(plainSizeOf(HEADER_SIZE + TAG_SIZE - 1), null, "no room for one tag");
  assert.equal(plainSizeOf(frameOffset(1) + 5), null, "a final frame shorter than its tag");
});

Deno.test("frame format: the header round-trips and a foreign one is refused", () => {
  const header = newHeader("key.id-1");
  const parsed = parseHeader(header.bytes);
  assert.equal(parsed.keyId, "key.id-1");
  assert.deepEqual(parsed.salt, header.salt);
  const wrong = header.bytes.slice();
  wrong[0] ^= 1;
  assert.throws(() => parseHeader(wrong), /magic/);
  assert.throws(() => parseHeader(header.bytes.subarray(0, 50)), /truncated/);
  assert.throws(() => newHeader("x".repeat(65)), /1-64/);
});

Deno.test("frame codec: round trips of sizes around frame boundaries", async () => {
  for (const size of [0, 1, FRAME_SIZE - 1, FRAME_SIZE, FRAME_SIZE + 1, 5 * FRAME_SIZE + 123]) {
    const plain = randomBytes(size);
    const { stored } = await seal(plain);
    assert.equal(stored.length, storedSizeOf(size), `stored size of ${size}`);
    assert.deepEqual(await open(stored, size), plain, `round trip of ${size}`);
  }
});

Deno.test("frame codec: ranges decrypt only their frames and cut exactly", async () => {
  const size = 5 * FRAME_SIZE + 123;
  const plain = randomBytes(size);
  const { stored } = await seal(plain);
  const ranges: [number, number][] = [
    [0, 0],
    [FRAME_SIZE - 3, FRAME_SIZE + 2],
    [2 * FRAME_SIZE, 2 * FRAME_SIZE],
    [FRAME_SIZE + 5, 4 * FRAME_SIZE + 7],
    [size - 10, size - 1],
  ];
  for (const [start, end] of ranges) {
    assert.deepEqual(await open(stored, size, [start, end]), plain.subarray(start, end + 1));
  }
});

Deno.test("frame codec: no two objects share a salt, so the same plaintext seals differently", async () => {
  const plain = randomBytes(1000);
  const a = await seal(plain);
  const b = await seal(plain);
  assert.notDeepEqual(a.stored.subarray(HEADER_SIZE), b.stored.subarray(HEADER_SIZE));
  assert.notDeepEqual(a.header.salt, b.header.salt);
});

async function rejects(work: Promise<unknown>, reason: string, message?: RegExp) {
  await assert.rejects(work, (err: unknown) => {
    assert.ok(err instanceof EncryptionError, String(err));
    assert.equal(err.reason, reason);
    if (message) assert.match(err.message, message);
    return true;
  });
}

Deno.test("frame codec: a flipped byte anywhere fails authentication", async () => {
  const size = 3 * FRAME_SIZE + 5;
  const { stored } = await seal(randomBytes(size));
  for (const at of [frameOffset(0), frameOffset(1) + 100, stored.length - 1]) {
    const bad = stored.slice();
    bad[at] ^= 0x40;
    await rejects(open(bad, size), "auth");
  }
  const badHeader = stored.slice();
  badHeader[8] ^= 1; // the salt: another object key, every frame fails
  await rejects(open(badHeader, size), "auth", /frame 0/);
});

Deno.test("frame codec: truncation is detected, even at a frame boundary", async () => {
  const size = 2 * FRAME_SIZE + 100;
  const { stored } = await seal(randomBytes(size));
  await rejects(open(stored.subarray(0, stored.length - 1), size), "truncated");
  // Drop the whole final frame: what is left ends on a frame boundary.
  await rejects(open(stored.subarray(0, frameOffset(2)), size), "truncated");
  // Or claim the object is shorter than it is: the frame then read as final was sealed non-final.
  await rejects(open(stored.subarray(0, frameOffset(2)), 2 * FRAME_SIZE), "auth", /final/);
  // Extra bytes after the final frame.
  const longer = new Uint8Array(stored.length + 1);
  longer.set(stored);
  await rejects(open(longer, size), "truncated", /after its final frame/);
});

Deno.test("frame codec: reordered frames and frames from another object fail", async () => {
  const size = 3 * FRAME_SIZE;
  const { stored } = await seal(randomBytes(size));
  const swapped = stored.slice();
  swapped.set(stored.subarray(frameOffset(0), frameOffset(1)), frameOffset(1));
  swapped.set(stored.subarray(frameOffset(1), frameOffset(2)), frameOffset(0));
  await rejects(open(swapped, size), "auth", /frame 0/);
  const other = await seal(randomBytes(size));
  const spliced = stored.slice();
  spliced.set(other.stored.subarray(frameOffset(1), frameOffset(2)), frameOffset(1));
  await rejects(open(spliced, size), "auth", /frame 1/);
});
