import assert from "node:assert/strict";
import { createHash, createHmac } from "node:crypto";
import { hexEqual, HmacKey, sha256HexOf } from "./small-sha256.ts";

Deno.test("small sha256 matches node:crypto at every length around the block edges", () => {
  for (let length = 0; length <= 300; length++) {
    const bytes = crypto.getRandomValues(new Uint8Array(length));
    const split = Math.floor(length / 3);
    assert.equal(
      sha256HexOf([bytes.subarray(0, split), bytes.subarray(split)]),
      createHash("sha256").update(bytes).digest("hex"),
      `length ${length}`,
    );
  }
  const large = crypto.getRandomValues(new Uint8Array(5000));
  assert.equal(sha256HexOf([large]), createHash("sha256").update(large).digest("hex"));
});

Deno.test("small HMAC-SHA256 matches node:crypto for keys and messages of every size", () => {
  for (const keyLength of [0, 1, 32, 63, 64]) {
    const key = crypto.getRandomValues(new Uint8Array(keyLength));
    const hmac = new HmacKey(key);
    for (let length = 0; length <= 260; length += 7) {
      let message = "";
      for (let i = 0; i < length; i++) message += String.fromCharCode(32 + ((i * 37) % 95));
      assert.equal(
        hmac.hexOfAscii(message),
        createHmac("sha256", key).update(message, "latin1").digest("hex"),
        `key ${keyLength}, message ${length}`,
      );
      // The key state is reusable: the same message twice gives the same answer.
      assert.equal(hmac.hexOfAscii(message), hmac.hexOfAscii(message));
    }
  }
  assert.throws(() => new HmacKey(new Uint8Array(65)), RangeError);
  assert.throws(() => new HmacKey(new Uint8Array(32)).hexOfAscii("é€"), RangeError);
});

Deno.test("hexEqual: equal hex in any case, different or differently long is not", () => {
  const a = "0123456789abcdef".repeat(4);
  assert.ok(hexEqual(a, a));
  assert.ok(hexEqual(a, a.toUpperCase()));
  assert.ok(!hexEqual(a, a.slice(0, -1) + "0"));
  assert.ok(!hexEqual(a, a.slice(1)));
  assert.ok(!hexEqual(a, `${a.slice(0, 10)}g${a.slice(11)}`));
});
