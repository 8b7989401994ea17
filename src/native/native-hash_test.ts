import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { createHasher, type HashAlgorithm } from "./native-hash.ts";

for (const algorithm of ["md5", "sha256"] as HashAlgorithm[]) {
  Deno.test(`createHasher ${algorithm} gives node:crypto's digest, chunked from a shared ring`, () => {
    const ring = new Uint8Array(new SharedArrayBuffer(3 << 20));
    for (let i = 0; i < ring.length; i += 65536) {
      crypto.getRandomValues(ring.subarray(i, i + 65536));
    }
    const cuts = [0, 1, 63, 64, 65, 4096, 1 << 20, (3 << 20) - 7, 3 << 20];
    for (const native of [true, false]) {
      const hasher = createHasher(algorithm, native);
      const reference = createHash(algorithm);
      for (let i = 1; i < cuts.length; i++) {
        const part = ring.subarray(cuts[i - 1], cuts[i]);
        hasher.update(part);
        reference.update(part);
      }
      hasher.update(new Uint8Array(0));
      assert.equal(hasher.hex(), reference.digest("hex"));
    }
    assert.equal(createHasher(algorithm).hex(), createHash(algorithm).digest("hex")); // empty body
  });
}

Deno.test("createHasher refuses use after its digest; free is safe to repeat", () => {
  const hasher = createHasher("md5");
  hasher.update(new TextEncoder().encode("abc"));
  assert.equal(hasher.hex(), "900150983cd24fb0d6963f7d28e17f72");
  assert.throws(() => hasher.hex(), /already finished/);
  hasher.free();
  const dropped = createHasher("sha256");
  dropped.free();
  dropped.free();
});
