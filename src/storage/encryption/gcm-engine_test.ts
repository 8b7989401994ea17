/** The AES-GCM engines: which one a process uses, and the OpenSSL binding's guards. */
import assert from "node:assert/strict";
import { newHeader, TAG_SIZE } from "./frame-format.ts";
import {
  chooseGcmEngine,
  disagreement,
  type GcmEngine,
  gcmEngine,
  openSslEngine,
  webCryptoEngine,
} from "./gcm-engine.ts";
import { loadOpenSsl, OpenSslGcm } from "../../native/libcrypto/openssl-gcm.ts";
import { loadLibcrypto } from "../../native/libcrypto/libcrypto.ts";

const hasOpenSsl = loadOpenSsl() !== null;

Deno.test("gcm engine: OpenSSL where libcrypto loads (and agrees with WebCrypto), else WebCrypto", async () => {
  const engine = await gcmEngine();
  assert.equal(engine.name, hasOpenSsl ? "openssl" : "webcrypto");
  assert.equal(await disagreement(webCryptoEngine, webCryptoEngine), null);
});

Deno.test("gcm engine: without libcrypto, WebCrypto seals and opens the frames", async () => {
  const missing = loadOpenSsl(loadLibcrypto(["libcrypto-svc-missing.so.3"]));
  assert.equal(missing, null);
  const engine = await chooseGcmEngine(missing);
  assert.equal(engine, webCryptoEngine);
  const header = newHeader("k");
  const cipher = await engine.cipher(crypto.getRandomValues(new Uint8Array(32)), header);
  const plain = crypto.getRandomValues(new Uint8Array(1000));
  const sealed = new Uint8Array(1000 + TAG_SIZE);
  await cipher.seal(3, true, plain, sealed);
  const opened = new Uint8Array(1000);
  await cipher.open(3, true, sealed, opened);
  assert.deepEqual(opened, plain);
});

Deno.test("gcm engine: a candidate that seals differently is refused by the self-check", async () => {
  const skewed: GcmEngine = {
    name: "webcrypto",
    async cipher(key, header) {
      const inner = await webCryptoEngine.cipher(key, header);
      return {
        ...inner,
        async seal(index, final, plain, out) {
          await inner.seal(index + 1, final, plain, out); // the wrong nonce
        },
      };
    },
  };
  assert.match(String(await disagreement(skewed, webCryptoEngine)), /differ/);
});

Deno.test({
  name: "openssl binding: the key is wiped, short buffers and use after free are refused",
  ignore: !hasOpenSsl,
  fn: async () => {
    const key = crypto.getRandomValues(new Uint8Array(32));
    const cipher = await openSslEngine.cipher(key, newHeader("k"));
    assert.ok(key.every((byte) => byte === 0), "the caller's key bytes are wiped");
    const plain = crypto.getRandomValues(new Uint8Array(1000));
    assert.throws(() => cipher.seal(0, true, plain, new Uint8Array(1000 + TAG_SIZE - 1)), /short/);
    const sealed = new Uint8Array(1000 + TAG_SIZE);
    cipher.seal(0, true, plain, sealed);
    assert.throws(() => cipher.open(0, true, sealed, new Uint8Array(999)), /short/);
    const opened = new Uint8Array(1000).fill(0xff);
    sealed[5] ^= 1;
    assert.throws(() => cipher.open(0, true, sealed, opened), /authentication/);
    assert.ok(opened.every((byte) => byte === 0), "unverified bytes are wiped");
    cipher.dispose();
    cipher.dispose(); // idempotent
    assert.throws(() => cipher.seal(0, true, plain, sealed), /after it was freed/);
    assert.throws(() => new OpenSslGcm(new Uint8Array(16)), /32 bytes/);
  },
});
