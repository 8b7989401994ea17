import assert from "node:assert/strict";
import { SvcError } from "../../lib/errors.ts";
import { randomBytes } from "../../testing/object-fixtures.ts";
import { FRAME_SIZE, storedSizeOf } from "./frame-format.ts";
import { KeyRing } from "./key-ring.ts";
import { KeyRingScratchSealer } from "./scratch-sealer.ts";

const KEY_A = "a1".repeat(32);
const KEY_B = "b2".repeat(32);

function sealerOf(ring: KeyRing, failures: unknown[] = []) {
  return new KeyRingScratchSealer(ring, (err) => {
    failures.push(err);
    return new SvcError("InternalError", String(err));
  });
}

function streamOf(bytes: Uint8Array): ReadableStream<Uint8Array> {
  return new Blob([bytes as Uint8Array<ArrayBuffer>]).stream();
}

async function bytesOf(stream: ReadableStream<Uint8Array>): Promise<Uint8Array> {
  return new Uint8Array(await new Response(stream).arrayBuffer());
}

Deno.test("scratch sealer: seals in the frame format, opens by key id, current or legacy", async () => {
  const old = await KeyRing.fromConfig("v", { mode: "aes256-gcm-proxy", key: KEY_A, key_id: "a" });
  const plain = randomBytes(3 * FRAME_SIZE + 5);
  const stored = await bytesOf(await sealerOf(old).seal(streamOf(plain)));
  assert.equal(stored.length, storedSizeOf(plain.length));
  assert.equal(new TextDecoder().decode(stored.subarray(0, 4)), "SVCE");
  // After a key rotation the part sealed under the old key still opens (legacy).
  const rotated = await KeyRing.fromConfig("v", {
    mode: "aes256-gcm-proxy",
    key: KEY_B,
    key_id: "b",
    legacy_key: KEY_A,
    legacy_key_id: "a",
  });
  const sealer = sealerOf(rotated);
  assert.equal(sealer.keyId, "b");
  const sealed = { keyId: "a", storedSize: stored.length, size: plain.length };
  assert.deepEqual(await bytesOf(await sealer.open(streamOf(stored), sealed)), plain);
});

Deno.test("scratch sealer: plaintext mode writes as it is; damage is an InternalError", async () => {
  const off = await KeyRing.fromConfig("v", { mode: "none", key: KEY_A, key_id: "a" });
  assert.equal(sealerOf(off).keyId, undefined);
  const input = streamOf(new Uint8Array([1, 2, 3]));
  assert.equal(await sealerOf(off).seal(input), input);
  const on = await KeyRing.fromConfig("v", { mode: "aes256-gcm-proxy", key: KEY_A, key_id: "a" });
  const failures: unknown[] = [];
  const sealer = sealerOf(on, failures);
  const plain = randomBytes(FRAME_SIZE + 1);
  const stored = await bytesOf(await sealer.seal(streamOf(plain)));
  // Truncated: the stored size no longer holds the recorded plaintext.
  const cut = stored.subarray(0, stored.length - 1);
  await assert.rejects(
    sealer.open(streamOf(cut), { keyId: "a", storedSize: cut.length, size: plain.length }),
    (err) => err instanceof SvcError && err.code === "InternalError",
  );
  // A flipped byte in the last frame fails the stream, never yields its bytes.
  const flipped = stored.slice();
  flipped[flipped.length - 3] ^= 1;
  const opened = await sealer.open(streamOf(flipped), {
    keyId: "a",
    storedSize: flipped.length,
    size: plain.length,
  });
  await assert.rejects(bytesOf(opened));
  // An unknown key id is named, not guessed.
  await assert.rejects(
    sealer.open(streamOf(stored), { keyId: "z", storedSize: stored.length, size: plain.length }),
    (err) => err instanceof SvcError && err.code === "InternalError",
  );
  assert.ok(failures.length >= 3);
});
