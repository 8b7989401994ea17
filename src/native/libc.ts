/**
 * libc through `Deno.dlopen`, for the calls Deno has no op for (statx, getdents64, the xattr
 * family, renameat2, mallopt, rlimits). Each caller opens its own symbol set (a symbol a libc
 * lacks, e.g. statx before glibc 2.28, fails only that set), and reads `errno` here.
 */
const errnoSymbols = { __errno_location: { parameters: [], result: "pointer" } } as const;
let errnoLib: Deno.DynamicLibrary<typeof errnoSymbols> | undefined;

/** The library with `symbols`, or null where it cannot be opened (no glibc, no FFI permission). */
export function loadLibc<S extends Deno.ForeignLibraryInterface>(
  symbols: S,
): Deno.DynamicLibrary<S> | null {
  try {
    return Deno.dlopen("libc.so.6", symbols);
  } catch {
    return null;
  }
}

/** The calling thread's errno: read it right after the call that failed. */
export function lastErrno(): number {
  errnoLib ??= Deno.dlopen("libc.so.6", errnoSymbols);
  const pointer = errnoLib.symbols.__errno_location();
  return pointer === null ? 0 : new Deno.UnsafePointerView(pointer).getInt32();
}
