/**
 * libc, opened once for the whole process with every function svc calls in it, for what Deno
 * has no op for: the xattr family (xattr.ts, fd-read.ts), statx (lean-stat.ts, fd-read.ts),
 * getdents64 (fs-read-dir.ts), renameat2 (rename-exchange.ts), mallopt (malloc-tuning.ts),
 * rlimits (fd-limit.ts) and flock (file-lock.ts).
 *
 * The required functions are in every glibc svc can run on; where libc cannot be opened with
 * them (not glibc, no FFI permission) `processLibc` is unavailable, with the reason. The optional
 * ones arrived in later glibc versions or are glibc's own, and are null where absent; each user
 * says what it does then (a Deno fallback, or a refusal naming the symbol).
 */
import { type NativeLibrary, openLibrary } from "./dynamic-library.ts";

/** Tried in order; glibc's soname is the same on every architecture Deno ships for. */
export const LIBC_NAMES: readonly string[] = ["libc.so.6"];

export const LIBC_SYMBOLS = {
  __errno_location: { parameters: [], result: "pointer" },
  // open(2) is variadic (mode); passing a fixed third int is ABI-compatible on the 64-bit Linux
  // targets Deno supports, and no O_CREAT is ever passed, so the mode is never read.
  open: { parameters: ["buffer", "i32", "i32"], result: "i32" },
  close: { parameters: ["i32"], result: "i32" },
  pread: { parameters: ["i32", "buffer", "usize", "i64"], result: "isize" },
  getxattr: { parameters: ["buffer", "buffer", "buffer", "usize"], result: "isize" },
  // The same call answering a Number: an isize result is a fresh BigInt per call. The value
  // (a length up to the 1 MiB buffer, or -1) fits the low 32 bits of the return register.
  getxattr32: {
    name: "getxattr",
    parameters: ["buffer", "buffer", "buffer", "usize"],
    result: "i32",
  },
  fgetxattr: { parameters: ["i32", "buffer", "buffer", "usize"], result: "isize" },
  setxattr: { parameters: ["buffer", "buffer", "buffer", "usize", "i32"], result: "i32" },
  removexattr: { parameters: ["buffer", "buffer"], result: "i32" },
  /** Advisory whole-file lock (file-lock.ts): one svc per data directory. */
  flock: { parameters: ["i32", "i32"], result: "i32" },
  getrlimit: { parameters: ["i32", "buffer"], result: "i32" },
  setrlimit: { parameters: ["i32", "buffer"], result: "i32" },
  /** glibc 2.28+ (statx-layout.ts has the struct). */
  statx: {
    parameters: ["i32", "buffer", "i32", "u32", "buffer"],
    result: "i32",
    optional: true,
  },
  /**
   * glibc 2.30+. ssize_t, read as its low 32 bits (a length up to the buffer size, or -1): an
   * isize result would be a fresh BigInt per call.
   */
  getdents64: { parameters: ["i32", "buffer", "usize"], result: "i32", optional: true },
  /** glibc 2.28+. */
  renameat2: {
    parameters: ["i32", "buffer", "i32", "buffer", "u32"],
    result: "i32",
    optional: true,
  },
  mallopt: { parameters: ["i32", "i32"], result: "i32", optional: true },
  /** glibc's own: where it is present, mallopt's parameters mean what malloc-tuning.ts says. */
  gnu_get_libc_version: { parameters: [], result: "pointer", optional: true },
} as const;

export type Libc = NativeLibrary<typeof LIBC_SYMBOLS>;
export type LibcSymbols = Deno.StaticForeignLibraryInterface<typeof LIBC_SYMBOLS>;

/** libc opened under the first of `names` that has every required function. */
export function loadLibc(names: readonly string[] = LIBC_NAMES): Libc {
  return openLibrary(names, LIBC_SYMBOLS);
}

/** This process's libc, probed once as svc starts (the default of every `libc` parameter). */
export const processLibc: Libc = loadLibc();

/** Reads the calling thread's errno: call it right after the call that failed. */
export function errnoReader(symbols: LibcSymbols): () => number {
  const location = symbols.__errno_location;
  return () => {
    const pointer = location();
    return pointer === null ? 0 : new Deno.UnsafePointerView(pointer).getInt32();
  };
}

/** Why `symbol` cannot be called through `libc` (for a refusal's message). */
export function missingSymbolReason(libc: Libc, symbol: keyof typeof LIBC_SYMBOLS): string {
  return libc.available
    ? `${libc.name} has no ${symbol} (${symbolOrigin[symbol] ?? "not in this libc"})`
    : `libc could not be loaded (${libc.reason})`;
}

const symbolOrigin: Partial<Record<keyof typeof LIBC_SYMBOLS, string>> = {
  statx: "glibc 2.28 or later",
  getdents64: "glibc 2.30 or later",
  renameat2: "glibc 2.28 or later",
  gnu_get_libc_version: "glibc only",
};
