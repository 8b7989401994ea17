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
import { type Libcrypto, type LibcryptoSymbols, processLibcrypto } from "./libcrypto.ts";

const EVP_CTRL_GCM_GET_TAG = 0x10;
const EVP_CTRL_GCM_SET_TAG = 0x11;
const TAG_BYTES = 16;
const KEY_BYTES = 32;
const NONCE_BYTES = 12;

type Symbols = LibcryptoSymbols;

/** libcrypto with its AES-256-GCM cipher, resolved once per library. */
interface AesGcm {
  readonly symbols: Symbols;
  readonly cipher: Deno.PointerObject;
  readonly name: string;
}

function aesGcmOf(libcrypto: Libcrypto): AesGcm | null {
  if (!libcrypto.available) return null;
  const cipher = libcrypto.symbols.EVP_aes_256_gcm();
  return cipher === null ? null : { symbols: libcrypto.symbols, cipher, name: libcrypto.name };
}

const processAesGcm = aesGcmOf(processLibcrypto);

function resolve(libcrypto: Libcrypto): AesGcm | null {
  return libcrypto === processLibcrypto ? processAesGcm : aesGcmOf(libcrypto);
}

/**
 * The library's name when AES-256-GCM can run through `libcrypto` (the process's by default), or
 * null when it cannot (absent, no --allow-ffi, or no GCM cipher in it): WebCrypto then.
 */
export function loadOpenSsl(libcrypto: Libcrypto = processLibcrypto): { name: string } | null {
  const gcm = resolve(libcrypto);
  return gcm === null ? null : { name: gcm.name };
}

/** Frees contexts whose owner was collected without `free()` (a stream dropped mid-way). */
const leaked = new FinalizationRegistry<{ symbols: Symbols; ctx: Deno.PointerValue }>(
  ({ symbols, ctx }) => {
    if (ctx !== null) symbols.EVP_CIPHER_CTX_free(ctx);
  },
);

/**
 * One object's AES-256-GCM key, ready to seal or open frames. The raw key is copied into
 * OpenSSL's contexts when this is built; the caller wipes its own copy.
 */
export class OpenSslGcm {
  readonly #s: Symbols;
  #seal: Deno.PointerValue;
  #open: Deno.PointerValue;
  readonly #length = new Int32Array(1);
  readonly #scratch = new Uint8Array(TAG_BYTES);

  constructor(key: Uint8Array, libcrypto: Libcrypto = processLibcrypto) {
    const lib = resolve(libcrypto);
    if (!lib) {
      throw new Error(
        libcrypto.available
          ? `OpenSSL libcrypto "${libcrypto.name}" has no AES-256-GCM cipher`
          : `OpenSSL libcrypto is not available (${libcrypto.reason})`,
      );
    }
    if (key.length !== KEY_BYTES) throw new Error(`AES-256 key must be ${KEY_BYTES} bytes`);
    this.#s = lib.symbols;
    this.#seal = newContext(lib.symbols, lib.cipher, key, 1);
    try {
      this.#open = newContext(lib.symbols, lib.cipher, key, 0);
    } catch (err) {
      lib.symbols.EVP_CIPHER_CTX_free(this.#seal);
      throw err;
    }
    leaked.register(this, { symbols: lib.symbols, ctx: this.#seal }, this);
    leaked.register(this, { symbols: lib.symbols, ctx: this.#open }, this);
  }

  /** Seals `plain` into `out` (plain.length + 16 bytes: ciphertext then tag). */
  seal(nonce: Uint8Array, aad: Uint8Array, plain: Uint8Array, out: Uint8Array): void {
    const s = this.#s;
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
    const s = this.#s;
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
    const s = this.#s;
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
