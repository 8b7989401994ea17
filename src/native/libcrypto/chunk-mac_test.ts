import assert from "node:assert/strict";
import { createChunkMac, SEALED_CHUNK_BYTES } from "./chunk-mac.ts";
import { loadLibcrypto } from "./libcrypto.ts";

Deno.test("a chunk tag matches its bytes only, whole or sealed in parts", () => {
  const mac = createChunkMac();
  if (mac === null) return; // no libcrypto here: the cache falls back to SHA-256
  const bytes = new Uint8Array(300_000).map((_, i) => (i * 7) & 255);
  const whole = mac.begin();
  whole.update(bytes);
  const sealed = whole.finish();
  assert.equal(sealed.length, SEALED_CHUNK_BYTES);
  assert.equal(mac.matches(bytes, sealed), true);
  const parts = mac.begin();
  parts.update(bytes.subarray(0, 12345));
  parts.update(bytes.subarray(12345));
  const inParts = parts.finish();
  assert.equal(mac.matches(bytes, inParts), true);
  assert.notDeepEqual(inParts.subarray(0, 12), sealed.subarray(0, 12), "a fresh IV per chunk");
  const flipped = bytes.slice();
  flipped[299_999] ^= 1;
  assert.equal(mac.matches(flipped, sealed), false);
  assert.equal(mac.matches(bytes.subarray(1), sealed), false);
  const forged = sealed.slice();
  forged[20] ^= 1;
  assert.equal(mac.matches(bytes, forged), false);
  assert.equal(mac.matches(bytes, sealed.subarray(1)), false);
  assert.throws(() => whole.finish(), /already finished/);
});

Deno.test("without libcrypto there is no chunk MAC (the caller uses SHA-256)", () => {
  assert.equal(createChunkMac(loadLibcrypto(["libcrypto-absent.so"])), null);
});
