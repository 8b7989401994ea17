/**
 * OpenSSL's libcrypto, opened once for the whole process with every function svc calls in it:
 * the EVP digests (native-hash.ts) and AES-256-GCM (openssl-gcm.ts). Where it cannot be opened
 * (absent, or no FFI permission) `processLibcrypto` is unavailable, with the reason, and each user
 * falls back: node:crypto for the digests, worker isolates for background hashing, WebCrypto for
 * GCM.
 */
import { type NativeLibrary, openLibrary } from "../dynamic-library.ts";

/**
 * Tried in order: OpenSSL 3, then 1.1 (both have these EVP functions), then the unversioned
 * development link some systems have instead.
 */
export const LIBCRYPTO_NAMES: readonly string[] = [
  "libcrypto.so.3",
  "libcrypto.so.1.1",
  "libcrypto.so",
];

export const LIBCRYPTO_SYMBOLS = {
  EVP_md5: { parameters: [], result: "pointer" },
  EVP_sha256: { parameters: [], result: "pointer" },
  EVP_MD_CTX_new: { parameters: [], result: "pointer" },
  EVP_MD_CTX_free: { parameters: ["pointer"], result: "void" },
  EVP_DigestInit_ex: { parameters: ["pointer", "pointer", "pointer"], result: "i32" },
  EVP_DigestUpdate: { parameters: ["pointer", "buffer", "usize"], result: "i32" },
  // The same call on one of Deno's blocking threads, answering a promise (threaded-hash.ts).
  EVP_DigestUpdate_nonblocking: {
    name: "EVP_DigestUpdate",
    parameters: ["pointer", "buffer", "usize"],
    result: "i32",
    nonblocking: true,
  },
  EVP_DigestFinal_ex: { parameters: ["pointer", "buffer", "pointer"], result: "i32" },
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

export type Libcrypto = NativeLibrary<typeof LIBCRYPTO_SYMBOLS>;
export type LibcryptoSymbols = Deno.StaticForeignLibraryInterface<typeof LIBCRYPTO_SYMBOLS>;

/** libcrypto opened under the first of `names` that has every function. */
export function loadLibcrypto(names: readonly string[] = LIBCRYPTO_NAMES): Libcrypto {
  return openLibrary(names, LIBCRYPTO_SYMBOLS);
}

/** This process's libcrypto, probed once as svc starts (the default of every parameter). */
export const processLibcrypto: Libcrypto = loadLibcrypto();
