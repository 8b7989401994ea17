/**
 * The open-file limit (RLIMIT_NOFILE) through libc, because Deno has no rlimit API. At start svc
 * raises the soft limit to the hard one: many systems hand processes a soft 1,024 with a far
 * higher hard limit, and every client connection, object file, spool and xdelta3 pipe costs a
 * descriptor. Deno 2.9.5 already does the same when it starts on Linux (measured: a process
 * started with soft 100, hard 300 sees 300); svc does it again so it does not depend on that, and
 * reads the result to size the connection cap (http/connection-server.ts).
 */
import { type LibcSymbols, processLibc } from "./libc.ts";

const RLIMIT_NOFILE = 7; // Linux, every architecture Deno ships for

export interface OpenFileLimit {
  soft: number;
  hard: number;
  /** The soft limit before svc raised it (equal to `soft` when nothing changed). */
  before: number;
}

/** `struct rlimit` is two rlim_t (u64 on 64-bit Linux): current, maximum. */
function read(c: LibcSymbols): { soft: bigint; hard: bigint } | null {
  const buffer = new BigUint64Array(2);
  if (c.getrlimit(RLIMIT_NOFILE, buffer) !== 0) return null;
  return { soft: buffer[0], hard: buffer[1] };
}

/** RLIM_INFINITY is all ones; as a count of descriptors it means "no practical limit". */
function asCount(value: bigint): number {
  return value > BigInt(Number.MAX_SAFE_INTEGER) ? Number.MAX_SAFE_INTEGER : Number(value);
}

/**
 * Raises the soft RLIMIT_NOFILE to the hard limit and reports both. Null where libc cannot be
 * reached (not Linux, no FFI permission): svc then runs with whatever limit it was given.
 */
export function raiseOpenFileLimit(libc = processLibc): OpenFileLimit | null {
  if (Deno.build.os !== "linux" || !libc.available) return null;
  const c = libc.symbols;
  const current = read(c);
  if (current === null) return null;
  const before = asCount(current.soft);
  if (current.soft < current.hard) {
    const wanted = new BigUint64Array([current.hard, current.hard]);
    c.setrlimit(RLIMIT_NOFILE, wanted); // a refusal leaves the old limit: read below
  }
  const after = read(c) ?? current;
  return { soft: asCount(after.soft), hard: asCount(after.hard), before };
}
