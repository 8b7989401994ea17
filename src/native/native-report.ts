/**
 * What the native libraries svc found at start, for the start log: an operator whose host lacks
 * libcrypto or an optional libc call (statx, getdents64, renameat2) sees which fallback svc runs
 * on instead of learning it from a slower listing or a higher CPU bill.
 */
import type { NativeLibrary } from "./dynamic-library.ts";
import { LIBC_SYMBOLS, processLibc } from "./libc.ts";
import { processLibcrypto } from "./libcrypto/libcrypto.ts";

export interface NativeReport {
  /** The name each library opened under, or "missing". */
  libc: string;
  libcrypto: string;
  /** Optional functions of an opened libc it does not have. */
  libc_missing: string[];
  /** Why a library is missing (every name tried), where one is. */
  reasons: string[];
}

export function nativeReport(
  libc: NativeLibrary<typeof LIBC_SYMBOLS> = processLibc,
  libcrypto: NativeLibrary<Deno.ForeignLibraryInterface> = processLibcrypto,
): NativeReport {
  const reasons: string[] = [];
  const named = (library: NativeLibrary<Deno.ForeignLibraryInterface>, what: string) => {
    if (library.available) return library.name;
    reasons.push(`${what}: ${library.reason}`);
    return "missing";
  };
  const symbols = libc.available ? libc.symbols as Record<string, unknown> : {};
  const optional = Object.entries(LIBC_SYMBOLS)
    .filter(([, definition]) => "optional" in definition && definition.optional)
    .map(([name]) => name);
  return {
    libc: named(libc, "libc"),
    libcrypto: named(libcrypto, "libcrypto"),
    libc_missing: libc.available ? optional.filter((name) => symbols[name] === null) : [],
    reasons,
  };
}

/** Whether svc runs with every native path (nothing to warn about). */
export function nativeComplete(report: NativeReport): boolean {
  return report.reasons.length === 0 && report.libc_missing.length === 0;
}
