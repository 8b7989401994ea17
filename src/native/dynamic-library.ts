/**
 * The one `Deno.dlopen` of svc. Each system library is opened once, when svc starts, with every
 * symbol svc calls in it (libc.ts, libcrypto.ts): opening it with the symbol table is the probe,
 * so a missing library or symbol is known before the first request needs it, not found out by
 * the first call. A symbol marked `optional` (one an older libc lacks) is null where absent; a
 * required one missing makes the whole library unavailable, with the reason.
 *
 * The callers take the library as a parameter (defaulting to the process's), so a test passes a
 * library opened under a name that does not exist and runs the code's fallback for real.
 */

/** A library that opened with every required symbol. */
export interface OpenLibrary<S extends Deno.ForeignLibraryInterface> {
  readonly available: true;
  /** The name it opened under (e.g. "libcrypto.so.3"), for the log. */
  readonly name: string;
  readonly symbols: Deno.StaticForeignLibraryInterface<S>;
  /** Tests only: svc keeps its libraries open for the life of the process. */
  close(): void;
}

/** A library that could not be opened: absent, a required symbol missing, or no FFI permission. */
export interface MissingLibrary {
  readonly available: false;
  /** Every name tried and what dlopen said about it. */
  readonly reason: string;
}

export type NativeLibrary<S extends Deno.ForeignLibraryInterface> =
  | OpenLibrary<S>
  | MissingLibrary;

/** The first of `names` that opens with `symbols`, or why none did. */
export function openLibrary<S extends Deno.ForeignLibraryInterface>(
  names: readonly string[],
  symbols: S,
): NativeLibrary<S> {
  const failures: string[] = [];
  for (const name of names) {
    try {
      const library = Deno.dlopen(name, symbols);
      return { available: true, name, symbols: library.symbols, close: () => library.close() };
    } catch (err) {
      // Deno repeats its own prefix ("Could not open library: Could not open library: ...").
      const message = err instanceof Error ? err.message : String(err);
      failures.push(`"${name}": ${message.replace(/^(Could not open library: )+/, "")}`);
    }
  }
  return { available: false, reason: failures.join("; ") || "no library name to try" };
}
