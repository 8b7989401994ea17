/**
 * A message authentication code for the chunks of svc's on-disk caches: AES-256-GMAC (GCM over
 * associated data only) through OpenSSL, under a key drawn when the process starts and never
 * written anywhere.
 *
 * Why not SHA-256 per chunk: every byte a cache serves is checked on every read, and SHA-256 costs
 * ~0.6 CPU-ms per MiB here while GMAC (carry-less multiply) costs ~0.11: a verified warm read
 * stays close to a plain one. A tag is as hard to forge for a local writer of the cache file as a
 * kept SHA-256 (the key and the tags live in memory only), and it catches any damage.
 *
 * Each sealed chunk gets its own IV (4 random bytes, then a 64-bit counter): GMAC must never tag two
 * messages under one key and IV. Checking recomputes the tag under the sealed IV, never outputs it.
 * A sealed chunk is IV (12 bytes) || tag (16 bytes).
 */
import { type Libcrypto, processLibcrypto } from "./libcrypto.ts";

const EVP_CTRL_GCM_GET_TAG = 0x10;
const IV_BYTES = 12;
const TAG_BYTES = 16;
export const SEALED_CHUNK_BYTES = IV_BYTES + TAG_BYTES;

/** Tags chunks sealed in parts (a stream crossing chunk boundaries): begin, update, finish. */
export interface ChunkSealing {
  update(bytes: Uint8Array): void;
  finish(): Uint8Array;
}

export interface ChunkMac {
  /** A new sealing with a fresh IV. */
  begin(): ChunkSealing;
  /** Whether `bytes` are what `sealed` was made from. */
  matches(bytes: Uint8Array, sealed: Uint8Array): boolean;
}

/** The MAC through `libcrypto`, or null where libcrypto or its AES-256-GCM is missing. */
export function createChunkMac(libcrypto: Libcrypto = processLibcrypto): ChunkMac | null {
  if (!libcrypto.available) return null;
  const s = libcrypto.symbols;
  const cipher = s.EVP_aes_256_gcm();
  if (cipher === null) return null;
  const key = crypto.getRandomValues(new Uint8Array(32));
  const prefix = crypto.getRandomValues(new Uint8Array(4));
  let counter = 0n;
  const length = new Int32Array(1);
  const scratch = new Uint8Array(TAG_BYTES);

  const start = (iv: Uint8Array) => {
    const ctx = s.EVP_CIPHER_CTX_new();
    if (ctx === null || s.EVP_CipherInit_ex(ctx, cipher, null, key, iv, 1) !== 1) {
      if (ctx !== null) s.EVP_CIPHER_CTX_free(ctx);
      throw new Error("OpenSSL AES-256-GCM could not start a chunk tag");
    }
    return ctx;
  };
  const add = (ctx: Deno.PointerObject, bytes: Uint8Array) => {
    // AAD only (no output buffer), in pieces under the int length OpenSSL takes.
    for (let at = 0; at < bytes.length; at += 1 << 30) {
      const part = bytes.subarray(at, Math.min(bytes.length, at + (1 << 30)));
      if (s.EVP_CipherUpdate(ctx, null, length, part, part.length) !== 1) {
        throw new Error("OpenSSL AES-256-GCM could not tag a chunk");
      }
    }
  };
  const tagOf = (ctx: Deno.PointerObject, into: Uint8Array) => {
    try {
      if (
        s.EVP_EncryptFinal_ex(ctx, scratch, length) !== 1 ||
        s.EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_GET_TAG, TAG_BYTES, into) !== 1
      ) throw new Error("OpenSSL AES-256-GCM could not finish a chunk tag");
    } finally {
      s.EVP_CIPHER_CTX_free(ctx);
    }
  };

  return {
    begin() {
      const sealed = new Uint8Array(SEALED_CHUNK_BYTES);
      sealed.set(prefix, 0);
      new DataView(sealed.buffer).setBigUint64(4, counter++);
      const ctx = start(sealed.subarray(0, IV_BYTES));
      let done = false;
      return {
        update(bytes) {
          if (done) throw new Error("The chunk tag was already finished");
          add(ctx, bytes);
        },
        finish() {
          if (done) throw new Error("The chunk tag was already finished");
          done = true;
          tagOf(ctx, sealed.subarray(IV_BYTES));
          return sealed;
        },
      };
    },
    matches(bytes, sealed) {
      if (sealed.length !== SEALED_CHUNK_BYTES) return false;
      const ctx = start(sealed.subarray(0, IV_BYTES));
      try {
        add(ctx, bytes);
      } catch (err) {
        s.EVP_CIPHER_CTX_free(ctx);
        throw err;
      }
      const tag = new Uint8Array(TAG_BYTES);
      tagOf(ctx, tag);
      // Constant time is not needed against a reader of our own cache, but costs nothing.
      let diff = 0;
      for (let i = 0; i < TAG_BYTES; i++) diff |= tag[i] ^ sealed[IV_BYTES + i];
      return diff === 0;
    },
  };
}
