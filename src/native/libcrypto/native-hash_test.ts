import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { createBackgroundHasher, createHasher, type HashAlgorithm } from "./native-hash.ts";
import { loadLibcrypto, processLibcrypto } from "./libcrypto.ts";

/** libcrypto "missing": the hashers must fall back to node:crypto with the same digests. */
const missingLibcrypto = loadLibcrypto(["libcrypto-svc-missing.so.3"]);

for (const algorithm of ["md5", "sha256"] as HashAlgorithm[]) {
  Deno.test(`createHasher ${algorithm} gives node:crypto's digest, chunked from a shared ring`, () => {
    const ring = new Uint8Array(new SharedArrayBuffer(3 << 20));
    for (let i = 0; i < ring.length; i += 65536) {
      crypto.getRandomValues(ring.subarray(i, i + 65536));
    }
    const cuts = [0, 1, 63, 64, 65, 4096, 1 << 20, (3 << 20) - 7, 3 << 20];
    for (const libcrypto of [processLibcrypto, missingLibcrypto]) {
      const hasher = createHasher(algorithm, libcrypto);
      const reference = createHash(algorithm);
      for (let i = 1; i < cuts.length; i++) {
        const part = ring.subarray(cuts[i - 1], cuts[i]);
        hasher.update(part);
        reference.update(part);
      }
      hasher.update(new Uint8Array(0));
      assert.equal(hasher.hex(), reference.digest("hex"));
    }
    for (const libcrypto of [processLibcrypto, missingLibcrypto]) {
      const empty = createHasher(algorithm, libcrypto).hex();
      assert.equal(empty, createHash(algorithm).digest("hex")); // empty body
    }
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

Deno.test("createHasher refuses use after its digest without libcrypto too", () => {
  const hasher = createHasher("md5", missingLibcrypto);
  hasher.update(new TextEncoder().encode("abc"));
  assert.equal(hasher.hex(), "900150983cd24fb0d6963f7d28e17f72");
  assert.throws(() => hasher.hex(), /already finished/);
  assert.throws(() => hasher.update(new Uint8Array(1)), /already finished/);
});

Deno.test("createBackgroundHasher is null without libcrypto (the caller hashes on workers)", () => {
  assert.equal(createBackgroundHasher("md5", missingLibcrypto), null);
});

Deno.test({
  name: "createBackgroundHasher gives node:crypto's digest on Deno's blocking threads",
  ignore: !processLibcrypto.available,
  fn: async () => {
    const bytes = crypto.getRandomValues(new Uint8Array(60_000));
    for (const algorithm of ["md5", "sha256"] as HashAlgorithm[]) {
      const hasher = createBackgroundHasher(algorithm);
      assert.ok(hasher !== null);
      await hasher.update(bytes.subarray(0, 1000));
      await hasher.update(bytes.subarray(1000));
      assert.equal(hasher.hex(), createHash(algorithm).update(bytes).digest("hex"));
    }
  },
});
