/**
 * Small helpers around filesystem calls, shared by every module of the filesystem backend (and
 * so at the bottom of its imports): error codes, absence as null, an inline lstat, and the
 * directory fsync that makes a new or removed name durable.
 */

/** ENOENT and ENOTDIR: the path (or one of its parents) is not there. */
export function isAbsentError(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  return code === "ENOENT" || code === "ENOTDIR";
}

export function errorCode(err: unknown): string | undefined {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === "string" ? code : undefined;
}

/** For `.catch()`: absence becomes null, every other error is rethrown. */
export function nullIfAbsent(err: unknown): null {
  if (isAbsentError(err)) return null;
  throw err;
}

/**
 * lstat, inline; null when absent. The metadata calls of the object hot path (bucket, object,
 * temp file) are synchronous like the xattr reads beside them: on a local filesystem they take a
 * few microseconds, while each async call hops to a thread and back (~20-120 µs measured here)
 * and made up most of the CPU of a small GET or PUT. fsync and rename, which wait on the disk,
 * stay asynchronous.
 */
export function statOrNull(path: string): Deno.FileInfo | null {
  try {
    return Deno.lstatSync(path);
  } catch (err) {
    return nullIfAbsent(err);
  }
}

export function isDirectorySync(path: string): boolean {
  try {
    return Deno.lstatSync(path).isDirectory;
  } catch (err) {
    return nullIfAbsent(err) ?? false;
  }
}

/**
 * Makes a directory's entries (a rename, mkdir or unlink in it) durable. A directory that is
 * already gone needs nothing: a concurrent delete removed it, and that removal is the newer state.
 */
// Concurrent callers on one directory share an fsync that started after their call (dir-sync.ts).
export { syncDirectory as fsyncDirectory } from "../../lib/mod.ts";
