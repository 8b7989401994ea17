/**
 * lstat without the garbage: `statx(2)` through libc into one reused buffer, answering only what
 * a listing needs (the type and the size). `Deno.lstatSync` builds a FileInfo with four Date
 * objects per call; a listing stats every entry it shows, and that garbage (with the rest of the
 * per-entry allocations) is what let a 100,000-key replication reconcile's RSS pass 200 MB while
 * its live heap stayed at 15 MB. Reads that open the file keep using Deno's lstat (they need the
 * inode and run once per request, not once per listed key).
 *
 * Where libc has no statx (glibc < 2.28, or no libc at all) the same answers come from
 * Deno.lstatSync, with its garbage.
 */

import { cPath, cPathText } from "./c-path.ts";
import { errnoReader, type Libc, processLibc } from "./libc.ts";

import {
  AT_FDCWD,
  AT_SYMLINK_NOFOLLOW,
  S_IFDIR,
  S_IFMT,
  S_IFREG,
  STATX_BYTES,
  STATX_SIZE,
  STATX_TYPE,
  STX_MODE,
  STX_SIZE,
} from "./statx-layout.ts";

const ENOENT = 2;
const ENOTDIR = 20;

export const ABSENT = 0;
export const REGULAR_FILE = 1;
export const DIRECTORY = 2;
/** Symlinks, sockets, devices: never objects. */
export const OTHER = 3;

export interface LeanStat {
  /**
   * The type of `path` without following a symlink: ABSENT when it (or a parent) is not there;
   * after REGULAR_FILE, `leanSize()` is its size. Other failures throw, as lstat's would.
   */
  leanLstat(path: string): number;
  /** leanLstat of a path already in C form (c-path.ts). */
  leanLstatC(path: Uint8Array): number;
  /** The size from the last leanLstat (exact below 2^53 bytes). */
  leanSize(): number;
}

/** The lean stat calls through `libc`'s statx, or through Deno where it has none. */
export function createLeanStat(libc: Libc): LeanStat {
  const statx = libc.available ? libc.symbols.statx : null;
  if (!libc.available || statx === null) return denoLeanStat();
  const errno = errnoReader(libc.symbols);
  // Synchronous calls only, so the buffer is never shared by two calls.
  const statBuffer = new Uint8Array(STATX_BYTES);
  const statView = new DataView(statBuffer.buffer);

  const leanLstatC = (path: Uint8Array): number => {
    const rc = statx(AT_FDCWD, path, AT_SYMLINK_NOFOLLOW, STATX_TYPE | STATX_SIZE, statBuffer);
    if (rc !== 0) {
      const code = errno();
      if (code === ENOENT || code === ENOTDIR) return ABSENT;
      const err = new Error(`lstat "${cPathText(path)}" failed: errno ${code}`) as Error & {
        errno: number;
      };
      err.errno = code;
      throw err;
    }
    const type = statView.getUint16(STX_MODE, true) & S_IFMT;
    return type === S_IFREG ? REGULAR_FILE : type === S_IFDIR ? DIRECTORY : OTHER;
  };
  return {
    leanLstat: (path) => leanLstatC(cPath(path)),
    leanLstatC,
    leanSize: () =>
      statView.getUint32(STX_SIZE, true) + statView.getUint32(STX_SIZE + 4, true) * 2 ** 32,
  };
}

/**
 * Deno's lstat without the exception for a path that is not there (ENOENT, ENOTDIR): null. The
 * fallback of every native lstat (here and fd-read.ts).
 */
export function denoLstatOrNull(path: string): Deno.FileInfo | null {
  try {
    return Deno.lstatSync(path);
  } catch (err) {
    const code = (err as { code?: unknown } | null)?.code;
    if (code === "ENOENT" || code === "ENOTDIR") return null;
    throw err;
  }
}

function denoLeanStat(): LeanStat {
  /** The size from the last lstat. */
  let size = 0;
  const leanLstat = (path: string): number => {
    const stat = denoLstatOrNull(path);
    if (stat === null) return ABSENT;
    size = stat.size;
    return stat.isFile ? REGULAR_FILE : stat.isDirectory ? DIRECTORY : OTHER;
  };
  return {
    leanLstat,
    leanLstatC: (path) => leanLstat(cPathText(path)),
    leanSize: () => size,
  };
}

/** The process's lean stat (statx where libc has it). */
export const { leanLstat, leanLstatC, leanSize } = createLeanStat(processLibc);
