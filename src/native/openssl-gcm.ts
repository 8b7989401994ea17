/**
 * AES-256-GCM through the system's OpenSSL (libcrypto), called synchronously over FFI.
 *
 * Why: Deno's WebCrypto AES-GCM costs ~3.5-4 CPU-s per GiB on this machine (its cipher runs at
 * ~270 MB/s per core, and part of each call runs on the JS thread), which alone is about three
 * plaintext GETs' worth of CPU. libcrypto uses AES-NI/VAES and carry-less multiply and costs
 * ~0.3 CPU-s per GiB for the same frames (scripts/bench/encryption-cipher.ts). A 64 KiB frame
 * takes ~15 µs, so the calls run inline, with no thread hop.
 *
 * Safety of the binding: every length handed to C is checked against the JS buffer it points
 * into before the call; a context is used by one caller at a time (the calls are synchronous)
 * and freed exactly once (`free`, or the finalizer when a stream was dropped unfinished; the
 * context's key schedule is wiped by OpenSSL on free). An opened frame's bytes are only valid
 * when `open` returns true (EVP_DecryptFinal_ex verified the tag); the caller zeroes them
 * otherwise. The wire format is the same as WebCrypto's (ciphertext || 16-byte tag, 96-bit
 * nonce), and gcm-engine.ts checks that both agree before this binding is used.
 */

const EVP_CTRL_GCM_GET_TAG = 0x10;
const EVP_CTRL_GCM_SET_TAG = 0x11;
const TAG_BYTES = 16;
const KEY_BYTES = 32;
const NONCE_BYTES = 12;

const symbols = {
  EVP_CIPHER_CTX_new: { parameters: [], result: "pointer" },
  EVP_CIPHER_CTX_free: { parameters: ["pointer"], result: "void" },
  EVP_aes_256_gcm: { parameters: [], result: "pointer" },
  // (ctx, cipher, engine, key, iv, enc): enc 1 seals, 0 opens, -1 keeps the direction.
  EVP_CipherInit_ex: {
    parameters: ["pointer", "pointer", "pointer", "buffer", "buffer", "i32"],
    result: "i32",
  },
  // (ctx, out, &outLength, in, inLength)
  EVP_CipherUpdate: {
    parameters: ["pointer", "buffer", "buffer", "buffer", "i32"],
    result: "i32",
  },
  EVP_EncryptFinal_ex: { parameters: ["pointer", "buffer", "buffer"], result: "i32" },
  EVP_DecryptFinal_ex: { parameters: ["pointer", "buffer", "buffer"], result: "i32" },
  EVP_CIPHER_CTX_ctrl: { parameters: ["pointer", "i32", "i32", "buffer"], result: "i32" },
  ERR_clear_error: { parameters: [], result: "void" },
} as const;

type Symbols = Deno.DynamicLibrary<typeof symbols>["symbols"];

/** Library names tried in order (OpenSSL 3, then 1.1; both have this EVP API). */
const LIBRARY_NAMES = ["libcrypto.so.3", "libcrypto.so.1.1", "libcrypto.so"];

let loaded: { symbols: Symbols; cipher: Deno.PointerValue; name: string } | null | undefined;

/** The library, or null when it cannot be loaded (absent, or no --allow-ffi). */
export function loadOpenSsl(): { name: string } | null {
  if (loaded !== undefined) return loaded;
  loaded = null;
  for (const name of LIBRARY_NAMES) {
    try {
      const lib = Deno.dlopen(name, symbols);
      const cipher = lib.symbols.EVP_aes_256_gcm();
      if (cipher === null) {
        lib.close();
        continue;
      }
      loaded = { symbols: lib.symbols, cipher, name };
      break;
    } catch {
      // Not this name (or FFI not permitted): try the next, else WebCrypto is used.
    }
  }
  return loaded;
}

/** Frees contexts whose owner was collected without `free()` (a stream dropped mid-way). */
const leaked = new FinalizationRegistry<Deno.PointerValue>((ctx) => {
  if (loaded && ctx !== null) loaded.symbols.EVP_CIPHER_CTX_free(ctx);
});

/**
 * One object's AES-256-GCM key, ready to seal or open frames. The raw key is copied into
 * OpenSSL's contexts when this is built; the caller wipes its own copy.
 */
export class OpenSslGcm {
  #seal: Deno.PointerValue;
  #open: Deno.PointerValue;
  readonly #length = new Int32Array(1);
  readonly #scratch = new Uint8Array(TAG_BYTES);

  constructor(key: Uint8Array) {
    const lib = loadOpenSsl() && loaded;
    if (!lib) throw new Error("OpenSSL libcrypto is not available");
    if (key.length !== KEY_BYTES) throw new Error(`AES-256 key must be ${KEY_BYTES} bytes`);
    this.#seal = newContext(lib.symbols, lib.cipher, key, 1);
    try {
      this.#open = newContext(lib.symbols, lib.cipher, key, 0);
    } catch (err) {
      lib.symbols.EVP_CIPHER_CTX_free(this.#seal);
      throw err;
    }
    leaked.register(this, this.#seal, this);
    leaked.register(this, this.#open, this);
  }

  /** Seals `plain` into `out` (plain.length + 16 bytes: ciphertext then tag). */
  seal(nonce: Uint8Array, aad: Uint8Array, plain: Uint8Array, out: Uint8Array): void {
    const s = this.#symbols();
    const ctx = this.#context(this.#seal);
    checkLengths(nonce, out, plain.length + TAG_BYTES);
    const n = plain.length;
    const ok = s.EVP_CipherInit_ex(ctx, null, null, null, nonce, 1) === 1 &&
      s.EVP_CipherUpdate(ctx, null, this.#length, aad, aad.length) === 1 &&
      (n === 0 || this.#update(s, ctx, out, plain)) &&
      s.EVP_EncryptFinal_ex(ctx, this.#scratch, this.#length) === 1 &&
      s.EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_GET_TAG, TAG_BYTES, out.subarray(n)) === 1;
    if (!ok) {
      s.ERR_clear_error();
      throw new Error("OpenSSL AES-GCM seal failed");
    }
  }

  /**
   * Opens `sealed` (ciphertext then tag) into `out` (sealed.length - 16 bytes). True when the tag
   * verified; on false, `out` holds unverified bytes that must not be used.
   */
  open(nonce: Uint8Array, aad: Uint8Array, sealed: Uint8Array, out: Uint8Array): boolean {
    const s = this.#symbols();
    const ctx = this.#context(this.#open);
    const n = sealed.length - TAG_BYTES;
    if (n < 0) return false;
    checkLengths(nonce, out, n);
    const ok = s.EVP_CipherInit_ex(ctx, null, null, null, nonce, 0) === 1 &&
      s.EVP_CipherUpdate(ctx, null, this.#length, aad, aad.length) === 1 &&
      (n === 0 || this.#update(s, ctx, out, sealed.subarray(0, n))) &&
      // The tag is copied into the context before the final call checks it.
      s.EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_SET_TAG, TAG_BYTES, sealed.subarray(n)) === 1 &&
      s.EVP_DecryptFinal_ex(ctx, this.#scratch, this.#length) === 1;
    if (!ok) s.ERR_clear_error();
    return ok;
  }

  /** Frees both contexts (OpenSSL wipes the key schedule). Idempotent. */
  free(): void {
    if (this.#seal === null && this.#open === null) return;
    leaked.unregister(this);
    const s = this.#symbols();
    if (this.#seal !== null) s.EVP_CIPHER_CTX_free(this.#seal);
    if (this.#open !== null) s.EVP_CIPHER_CTX_free(this.#open);
    this.#seal = null;
    this.#open = null;
  }

  /** Runs the bulk update; GCM is a stream mode, so it writes exactly `input.length` bytes. */
  #update(s: Symbols, ctx: Deno.PointerValue, out: Uint8Array, input: Uint8Array): boolean {
    const ok = s.EVP_CipherUpdate(ctx, out, this.#length, input, input.length) === 1;
    return ok && this.#length[0] === input.length;
  }

  #symbols(): Symbols {
    return loaded!.symbols;
  }

  #context(ctx: Deno.PointerValue): Deno.PointerValue {
    if (ctx === null) throw new Error("OpenSSL AES-GCM context used after it was freed");
    return ctx;
  }
}

function newContext(
  s: Symbols,
  cipher: Deno.PointerValue,
  key: Uint8Array,
  direction: 0 | 1,
): Deno.PointerValue {
  const ctx = s.EVP_CIPHER_CTX_new();
  if (ctx === null) throw new Error("OpenSSL could not allocate a cipher context");
  // The key is set once; each frame then sets only its nonce (EVP_CipherInit_ex with no cipher
  // and no key keeps the key schedule).
  if (s.EVP_CipherInit_ex(ctx, cipher, null, key, null, direction) !== 1) {
    s.EVP_CIPHER_CTX_free(ctx);
    s.ERR_clear_error();
    throw new Error("OpenSSL could not set up AES-256-GCM");
  }
  return ctx;
}

/** The buffers C will write into or read a fixed size from must be at least that long. */
function checkLengths(nonce: Uint8Array, out: Uint8Array, outBytes: number): void {
  if (nonce.length !== NONCE_BYTES) throw new Error(`GCM nonce must be ${NONCE_BYTES} bytes`);
  if (out.length < outBytes) {
    throw new Error(`Output buffer of ${out.length} bytes is short of ${outBytes}`);
  }
}
