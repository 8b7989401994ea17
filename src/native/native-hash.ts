/**
 * md5 and sha256 through the system's OpenSSL (libcrypto, by FFI) when it can be loaded, else
 * node:crypto. A large PUT hashes every byte with both on the hash workers, and md5 is the floor
 * of its CPU: OpenSSL's assembly md5 runs ~660 MiB/s per CPU second here against node:crypto's
 * ~540 (measured on the same buffers, process CPU time), which is ~0.2 s less CPU per 512 MiB.
 * The digests are the same bytes (tested against node:crypto).
 */
import { createHash } from "node:crypto";

export type HashAlgorithm = "md5" | "sha256";

/** An incremental hash; `free` releases it without a digest (an aborted body). */
export interface Hasher {
  update(bytes: Uint8Array): void;
  hex(): string;
  free(): void;
}

const symbols = {
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
} as const;

type Libcrypto = Deno.DynamicLibrary<typeof symbols>["symbols"];

let loaded: Libcrypto | null | undefined;

/** libcrypto, or null when this system has none (or FFI is not allowed): node:crypto then. */
function libcrypto(): Libcrypto | null {
  if (loaded !== undefined) return loaded;
  loaded = null;
  for (const name of ["libcrypto.so.3", "libcrypto.so"]) {
    try {
      loaded = Deno.dlopen(name, symbols).symbols;
      break;
    } catch {
      // not here: try the next name, else node:crypto
    }
  }
  return loaded;
}

/**
 * An OpenSSL hash whose updates run on Deno's blocking threads (nonblocking FFI): a large body's
 * md5 and sha256 each hash on a core of their own without a worker isolate (~50 MB and ~110 ms of
 * main-thread start-up for the pair). null without libcrypto. The bytes an update was given must
 * stay unchanged until its promise settles, and updates must not overlap (each waits for the
 * last); `hex` and `free` only once every update settled.
 */
export interface BackgroundHasher {
  update(bytes: Uint8Array): Promise<void>;
  hex(): string;
  free(): void;
}

export function createBackgroundHasher(algorithm: HashAlgorithm): BackgroundHasher | null {
  const lib = libcrypto();
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

/** A hasher for `algorithm`; `native: false` forces node:crypto (tests compare the two). */
export function createHasher(algorithm: HashAlgorithm, native = true): Hasher {
  const lib = native ? libcrypto() : null;
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

function evpHasher(lib: Libcrypto, ctx: Deno.PointerObject, algorithm: HashAlgorithm): Hasher {
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
