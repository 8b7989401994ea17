/**
 * The frame codec alone: layout arithmetic, round trips, and every kind of damage it must catch,
 * with each AES-GCM engine (OpenSSL over FFI and WebCrypto), which must also read each other's
 * objects.
 */
import assert from "node:assert/strict";
import { randomBytes } from "../../testing/object-fixtures.ts";
import { decryptedStream, FrameDecryptor } from "./decrypt-stream.ts";
import { EncryptionError } from "./encryption-error.ts";
import { encryptStream, SEAL_BATCH_FRAMES } from "./encrypt-stream.ts";
import { objectCipher } from "./frame-crypto.ts";
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
import { disagreement, type GcmEngine, openSslEngine, webCryptoEngine } from "./gcm-engine.ts";
import { loadOpenSsl } from "../../native/libcrypto/openssl-gcm.ts";
import { BATCH_FRAMES, ExactReader } from "./pipeline.ts";

const master = await crypto.subtle.importKey(
  "raw",
  crypto.getRandomValues(new Uint8Array(32)),
  "HKDF",
  false,
  ["deriveBits"],
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

/** Whether libcrypto loads here: its engine's tests are skipped (and say so) when not. */
const hasOpenSsl = loadOpenSsl() !== null;
const engines: GcmEngine[] = [openSslEngine, webCryptoEngine];

async function seal(plain: Uint8Array, engine: GcmEngine, keyId = "k1") {
  const header = newHeader(keyId);
  const cipher = await objectCipher(master, header, engine);
  const stored = new Uint8Array(
    await new Response(encryptStream(chunked(plain), cipher, header)).arrayBuffer(),
  );
  return { header, stored };
}

async function open(
  stored: Uint8Array,
  size: number,
  engine: GcmEngine,
  range: [number, number] = [0, size - 1],
): Promise<Uint8Array> {
  const header = parseHeader(stored.subarray(0, HEADER_SIZE));
  const cipher = await objectCipher(master, header, engine);
  const { storedStart, storedEnd } = size === 0
    ? { storedStart: HEADER_SIZE, storedEnd: stored.length - 1 }
    : framesForRange(range[0], range[1], size);
  const isFull = range[0] === 0 && range[1] === size - 1;
  const slice = stored.subarray(storedStart, isFull ? stored.length : storedEnd + 1);
  const decryptor = new FrameDecryptor(new ExactReader(chunked(slice, [999, 70_000])), {
    cipher,
    size,
    start: range[0],
    end: range[1],
  });
  const pieces: Uint8Array[] = [];
  for (let chunk; (chunk = await decryptor.next()) !== null;) {
    assert.ok(chunk.length > 0, "no empty chunk");
    assert.ok(chunk.length <= BATCH, "at most one batch per chunk");
    pieces.push(chunk);
  }
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

async function rejects(work: Promise<unknown>, reason: string, message?: RegExp) {
  await assert.rejects(work, (err: unknown) => {
    assert.ok(err instanceof EncryptionError, String(err));
    assert.equal(err.reason, reason);
    if (message) assert.match(err.message, message);
    return true;
  });
}

for (const engine of engines) {
  const ignore = engine === openSslEngine && !hasOpenSsl;
  Deno.test({
    name: `frame codec: round trips of sizes around frame boundaries (${engine.name})`,
    ignore,
    fn: async () => {
      for (const size of [0, 1, FRAME_SIZE - 1, FRAME_SIZE, FRAME_SIZE + 1, 5 * FRAME_SIZE + 123]) {
        const plain = randomBytes(size);
        const { stored } = await seal(plain, engine);
        assert.equal(stored.length, storedSizeOf(size), `stored size of ${size}`);
        assert.deepEqual(await open(stored, size, engine), plain, `round trip of ${size}`);
      }
    },
  });

  Deno.test({
    name: `frame codec: ranges decrypt only their frames and cut exactly (${engine.name})`,
    ignore,
    fn: async () => {
      const size = 5 * FRAME_SIZE + 123;
      const plain = randomBytes(size);
      const { stored } = await seal(plain, engine);
      const ranges: [number, number][] = [
        [0, 0],
        [FRAME_SIZE - 3, FRAME_SIZE + 2],
        [2 * FRAME_SIZE, 2 * FRAME_SIZE],
        [FRAME_SIZE + 5, 4 * FRAME_SIZE + 7],
        [size - 10, size - 1],
      ];
      for (const [start, end] of ranges) {
        assert.deepEqual(
          await open(stored, size, engine, [start, end]),
          plain.subarray(start, end + 1),
        );
      }
    },
  });

  Deno.test({
    name:
      `frame codec: no two objects share a salt, so the same plaintext seals differently (${engine.name})`,
    ignore,
    fn: async () => {
      const plain = randomBytes(1000);
      const a = await seal(plain, engine);
      const b = await seal(plain, engine);
      assert.notDeepEqual(a.stored.subarray(HEADER_SIZE), b.stored.subarray(HEADER_SIZE));
      assert.notDeepEqual(a.header.salt, b.header.salt);
    },
  });

  Deno.test({
    name: `frame codec: a flipped byte anywhere fails authentication (${engine.name})`,
    ignore,
    fn: async () => {
      const size = 3 * FRAME_SIZE + 5;
      const { stored } = await seal(randomBytes(size), engine);
      for (const at of [frameOffset(0), frameOffset(1) + 100, stored.length - 1]) {
        const bad = stored.slice();
        bad[at] ^= 0x40;
        await rejects(open(bad, size, engine), "auth");
      }
      const badHeader = stored.slice();
      badHeader[8] ^= 1; // the salt: another object key, every frame fails
      await rejects(open(badHeader, size, engine), "auth", /frame 0/);
    },
  });

  Deno.test({
    name: `frame codec: truncation is detected, even at a frame boundary (${engine.name})`,
    ignore,
    fn: async () => {
      const size = 2 * FRAME_SIZE + 100;
      const { stored } = await seal(randomBytes(size), engine);
      await rejects(open(stored.subarray(0, stored.length - 1), size, engine), "truncated");
      // Drop the whole final frame: what is left ends on a frame boundary.
      await rejects(open(stored.subarray(0, frameOffset(2)), size, engine), "truncated");
      // Or claim the object is shorter than it is: the frame then read as final was sealed non-final.
      await rejects(
        open(stored.subarray(0, frameOffset(2)), 2 * FRAME_SIZE, engine),
        "auth",
        /final/,
      );
      // Extra bytes after the final frame.
      const longer = new Uint8Array(stored.length + 1);
      longer.set(stored);
      await rejects(open(longer, size, engine), "truncated", /after its final frame/);
    },
  });

  Deno.test({
    name: `frame codec: reordered frames and frames from another object fail (${engine.name})`,
    ignore,
    fn: async () => {
      const size = 3 * FRAME_SIZE;
      const { stored } = await seal(randomBytes(size), engine);
      const swapped = stored.slice();
      swapped.set(stored.subarray(frameOffset(0), frameOffset(1)), frameOffset(1));
      swapped.set(stored.subarray(frameOffset(1), frameOffset(2)), frameOffset(0));
      await rejects(open(swapped, size, engine), "auth", /frame 0/);
      const other = await seal(randomBytes(size), engine);
      const spliced = stored.slice();
      spliced.set(other.stored.subarray(frameOffset(1), frameOffset(2)), frameOffset(1));
      await rejects(open(spliced, size, engine), "auth", /frame 1/);
    },
  });
}

const BATCH = BATCH_FRAMES * FRAME_SIZE;

for (const engine of engines) {
  const ignore = engine === openSslEngine && !hasOpenSsl;

  Deno.test({
    name: `frame codec: objects and ranges across batch boundaries (${engine.name})`,
    ignore,
    fn: async () => {
      const size = 2 * BATCH + 3 * FRAME_SIZE + 77;
      const plain = randomBytes(size);
      const { stored } = await seal(plain, engine);
      assert.equal(stored.length, storedSizeOf(size));
      assert.deepEqual(await open(stored, size, engine), plain);
      const sealBatch = SEAL_BATCH_FRAMES * FRAME_SIZE;
      for (const exact of [BATCH - 1, BATCH, BATCH + 1, 2 * BATCH, sealBatch, sealBatch + 1]) {
        const bytes = randomBytes(exact);
        assert.deepEqual(await open((await seal(bytes, engine)).stored, exact, engine), bytes);
      }
      const ranges: [number, number][] = [
        [BATCH - 5, BATCH + 5],
        [FRAME_SIZE + 1, 2 * BATCH + FRAME_SIZE],
        [2 * BATCH, size - 1],
      ];
      for (const [start, end] of ranges) {
        assert.deepEqual(
          await open(stored, size, engine, [start, end]),
          plain.subarray(start, end + 1),
        );
      }
    },
  });

  Deno.test({
    name: `frame codec: damage in a batch yields none of that batch's bytes (${engine.name})`,
    ignore,
    fn: async () => {
      const size = 2 * BATCH + 10;
      const { stored, header } = await seal(randomBytes(size), engine);
      const bad = stored.slice();
      bad[frameOffset(BATCH_FRAMES + 3) + 7] ^= 1; // the 4th frame of the second batch
      const decryptor = new FrameDecryptor(new ExactReader(chunked(bad.subarray(HEADER_SIZE))), {
        cipher: await objectCipher(master, header, engine),
        size,
        start: 0,
        end: size - 1,
      });
      const first = await decryptor.next();
      assert.equal(first?.length, BATCH, "the first batch, in one chunk");
      await rejects(decryptor.next(), "auth", new RegExp(`frame ${BATCH_FRAMES + 3}\\b`));
      assert.equal(await decryptor.next(), null, "nothing after the failure");
    },
  });
}

Deno.test({
  name: "frame codec: OpenSSL and WebCrypto read each other's objects and agree byte for byte",
  ignore: !hasOpenSsl,
  fn: async () => {
    assert.equal(await disagreement(openSslEngine, webCryptoEngine), null);
    const size = BATCH + 2 * FRAME_SIZE + 5;
    const plain = randomBytes(size);
    const byOpenSsl = await seal(plain, openSslEngine);
    const byWebCrypto = await seal(plain, webCryptoEngine);
    assert.deepEqual(await open(byOpenSsl.stored, size, webCryptoEngine), plain);
    assert.deepEqual(await open(byWebCrypto.stored, size, openSslEngine), plain);
    assert.deepEqual(
      await open(byWebCrypto.stored, size, openSslEngine, [BATCH - 1, BATCH]),
      plain.slice(BATCH - 1, BATCH + 1),
    );
  },
});

/** `bytes` as a byte stream (read with a BYOB reader, as a file's body is). */
function byteStream(bytes: Uint8Array): ReadableStream<Uint8Array> {
  let at = 0;
  return new ReadableStream({
    type: "bytes",
    pull(controller) {
      const request = controller.byobRequest!;
      const view = request.view as Uint8Array;
      const n = Math.min(view.byteLength, bytes.length - at, 300_000);
      if (n === 0) {
        controller.close();
        request.respond(0);
        return;
      }
      view.set(bytes.subarray(at, at + n));
      at += n;
      request.respond(n);
    },
  });
}

Deno.test({
  name: "decrypted stream: each batch is a fresh chunk, intact after the stream moved past it",
  ignore: !hasOpenSsl,
  fn: async () => {
    // The HTTP layer keeps chunks after taking them (tests/encryption_lifetime_test.ts): a chunk
    // reused for a later batch would change bytes already handed out. Hold them all to the end.
    const size = 6 * BATCH + 12_345;
    const plain = randomBytes(size);
    const { stored, header } = await seal(plain, openSslEngine);
    const decryptor = new FrameDecryptor(
      new ExactReader(byteStream(stored.subarray(HEADER_SIZE))),
      {
        cipher: await objectCipher(master, header, openSslEngine),
        size,
        start: 0,
        end: size - 1,
      },
    );
    const first = await decryptor.next();
    const chunks: Uint8Array[] = [];
    for await (const chunk of decryptedStream(decryptor, first, () => {})) chunks.push(chunk);
    assert.equal(chunks.length, 7, "one chunk per batch");
    const buffers = new Set(chunks.map((chunk) => chunk.buffer));
    assert.equal(buffers.size, chunks.length, "no two chunks share memory");
    let at = 0;
    for (const [index, chunk] of chunks.entries()) {
      assert.deepEqual(chunk, plain.subarray(at, at + chunk.length), `chunk ${index} intact`);
      at += chunk.length;
    }
    assert.equal(at, size);
  },
});
