/**
 * AES-256-GCM through libcrypto where it loads, and a clear "not available" (WebCrypto then, in
 * gcm-engine.ts) where it does not. The wire format against WebCrypto is tested in
 * storage/encryption/gcm-engine_test.ts.
 */
import assert from "node:assert/strict";
import { loadOpenSsl, OpenSslGcm } from "./openssl-gcm.ts";
import { loadLibcrypto, processLibcrypto } from "./libcrypto.ts";

const missingLibcrypto = loadLibcrypto(["libcrypto-svc-missing.so.3"]);

Deno.test("without libcrypto there is no OpenSSL GCM, and a cipher refuses naming it", () => {
  assert.equal(loadOpenSsl(missingLibcrypto), null);
  assert.throws(
    () => new OpenSslGcm(new Uint8Array(32), missingLibcrypto),
    /OpenSSL libcrypto is not available \("libcrypto-svc-missing\.so\.3": /,
  );
});

Deno.test({
  name: "with libcrypto, a frame sealed by one cipher opens in another with the same key",
  ignore: !processLibcrypto.available,
  fn: () => {
    assert.deepEqual(loadOpenSsl(), { name: processLibcrypto.available && processLibcrypto.name });
    const key = crypto.getRandomValues(new Uint8Array(32));
    const nonce = crypto.getRandomValues(new Uint8Array(12));
    const aad = new TextEncoder().encode("header");
    const plain = crypto.getRandomValues(new Uint8Array(1000));
    const sealer = new OpenSslGcm(key);
    const opener = new OpenSslGcm(key, processLibcrypto);
    try {
      const sealed = new Uint8Array(plain.length + 16);
      sealer.seal(nonce, aad, plain, sealed);
      const opened = new Uint8Array(plain.length);
      assert.equal(opener.open(nonce, aad, sealed, opened), true);
      assert.deepEqual(opened, plain);
      sealed[3] ^= 1;
      assert.equal(opener.open(nonce, aad, sealed, opened), false);
    } finally {
      sealer.free();
      opener.free();
      sealer.free(); // idempotent
    }
  },
});
