/**
 * md5 and sha256 through the system's OpenSSL (libcrypto, by FFI) when it can be loaded, else
 * node:crypto. A large PUT hashes every byte with both on the hash workers, and md5 is the floor
 * of its CPU: OpenSSL's assembly md5 runs ~660 MiB/s per CPU second here against node:crypto's
 * ~540 (measured on the same buffers, process CPU time), which is ~0.2 s less CPU per 512 MiB.
 * The digests are the same bytes (tested against node:crypto, and with libcrypto missing).
 */
import { createHash } from "node:crypto";
import { type Libcrypto, type LibcryptoSymbols, processLibcrypto } from "./libcrypto.ts";

export type HashAlgorithm = "md5" | "sha256";

/** An incremental hash; `free` releases it without a digest (an aborted body). */
export interface Hasher {
  update(bytes: Uint8Array): void;
  hex(): string;
  free(): void;
}

/**
 * An OpenSSL hash whose updates run on Deno's blocking threads (nonblocking FFI): a large body's
 * md5 and sha256 each hash on a core of their own without a worker isolate (~50 MB and ~110 ms of
 * main-thread start-up for the pair). null without libcrypto (the caller then uses workers).
 * The bytes an update was given must stay unchanged until its promise settles, and updates must
 * not overlap (each waits for the last); `hex` and `free` only once every update settled.
 */
export interface BackgroundHasher {
  update(bytes: Uint8Array): Promise<void>;
  hex(): string;
  free(): void;
}

export function createBackgroundHasher(
  algorithm: HashAlgorithm,
  libcrypto: Libcrypto = processLibcrypto,
): BackgroundHasher | null {
  const lib = libcrypto.available ? libcrypto.symbols : null;
  const ctx = lib?.EVP_MD_CTX_new() ?? null;
  if (!lib || ctx === null) return null;
  const md = algorithm === "md5" ? lib.EVP_md5() : lib.EVP_sha256();
  if (lib.EVP_DigestInit_ex(ctx, md, null) !== 1) {
    lib.EVP_MD_CTX_free(ctx);
    return null;
  }
  const sync = evpHasher(lib, ctx, algorithm);
  let live = true;
  return {
    async update(bytes) {
      if (!live) throw new Error(`The ${algorithm} hash was already finished`);
      if (bytes.length === 0) return;
      const rc = await lib.EVP_DigestUpdate_nonblocking(ctx, bytes, BigInt(bytes.length));
      if (rc !== 1) throw new Error(`OpenSSL ${algorithm} update failed`);
    },
    hex() {
      live = false;
      return sync.hex();
    },
    free() {
      live = false;
      sync.free();
    },
  };
}

/** A hasher for `algorithm`: through `libcrypto` where it is available, else node:crypto. */
export function createHasher(
  algorithm: HashAlgorithm,
  libcrypto: Libcrypto = processLibcrypto,
): Hasher {
  const lib = libcrypto.available ? libcrypto.symbols : null;
  const ctx = lib?.EVP_MD_CTX_new() ?? null;
  if (lib && ctx !== null) {
    const md = algorithm === "md5" ? lib.EVP_md5() : lib.EVP_sha256();
    if (lib.EVP_DigestInit_ex(ctx, md, null) === 1) return evpHasher(lib, ctx, algorithm);
    lib.EVP_MD_CTX_free(ctx);
  }
  const hash = createHash(algorithm);
  let live = true;
  const finished = () => new Error(`The ${algorithm} hash was already finished`);
  return {
    update(bytes) {
      if (!live) throw finished();
      hash.update(bytes);
    },
    hex() {
      if (!live) throw finished();
      live = false;
      return hash.digest("hex");
    },
    free: () => void (live = false),
  };
}

function evpHasher(
  lib: LibcryptoSymbols,
  ctx: Deno.PointerObject,
  algorithm: HashAlgorithm,
): Hasher {
  let live = true;
  const release = () => {
    if (live) lib.EVP_MD_CTX_free(ctx);
    live = false;
  };
  return {
    update(bytes) {
      if (!live) throw new Error(`The ${algorithm} hash was already finished`);
      if (bytes.length === 0) return;
      if (lib.EVP_DigestUpdate(ctx, bytes, BigInt(bytes.length)) !== 1) {
        throw new Error(`OpenSSL ${algorithm} update failed`);
      }
    },
    hex() {
      if (!live) throw new Error(`The ${algorithm} hash was already finished`);
      const out = new Uint8Array(64);
      const ok = lib.EVP_DigestFinal_ex(ctx, out, null) === 1;
      release();
      if (!ok) throw new Error(`OpenSSL ${algorithm} final failed`);
      const length = algorithm === "md5" ? 16 : 32;
      let hex = "";
      for (let i = 0; i < length; i++) hex += out[i].toString(16).padStart(2, "0");
      return hex;
    },
    free: release,
  };
}
