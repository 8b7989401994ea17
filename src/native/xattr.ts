/**
 * Extended attributes through libc, because Deno has no xattr API. The filesystem backend keeps
 * each object's metadata in one attribute set on the temp file before the rename, so the rename
 * commits bytes and metadata together.
 */

import { cName, cPath, cPathText, cString } from "./c-path.ts";
import { lastErrno } from "./libc.ts";

const ENOENT = 2;
const ENOTDIR = 20;
const ENODATA = 61;
const ERANGE = 34;
const ENOTSUP = 95;

const symbols = {
  getxattr: { parameters: ["buffer", "buffer", "buffer", "usize"], result: "isize" },
  // The same call answering a Number: an isize result is a fresh BigInt per call. The value
  // (a length up to the 1 MiB buffer, or -1) fits the low 32 bits of the return register.
  getxattr32: {
    name: "getxattr",
    parameters: ["buffer", "buffer", "buffer", "usize"],
    result: "i32",
  },
  setxattr: { parameters: ["buffer", "buffer", "buffer", "usize", "i32"], result: "i32" },
  removexattr: { parameters: ["buffer", "buffer"], result: "i32" },
} as const;

let lib: Deno.DynamicLibrary<typeof symbols> | undefined;

function libc(): Deno.DynamicLibrary<typeof symbols>["symbols"] {
  lib ??= Deno.dlopen("libc.so.6", symbols);
  return lib.symbols;
}

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/**
 * Reused buffers for the calls on the read path: they are synchronous, so one buffer each is
 * never used by two calls at once. Allocating a path string and a 4 KiB value buffer per read
 * cost more than the getxattr itself on small GETs.
 */
let valueBuffer = new Uint8Array(4096);
/** valueBuffer's length as the BigInt getxattr takes (one BigInt per call is garbage too). */
let valueLength = { length: valueBuffer.length, big: BigInt(valueBuffer.length) };
/** Views of valueBuffer by length, for lookupXattrTextC (a subarray per call is garbage too). */
let valueViews: Uint8Array[] = [];

/** Raised for every xattr failure other than a missing attribute. */
export class XattrError extends Error {
  readonly errno: number;
  constructor(operation: string, path: string, code: number) {
    const reason = code === ENOTSUP
      ? "extended attributes are not supported on this filesystem"
      : code === ENOENT
      ? "no such file"
      : `errno ${code}`;
    super(`${operation} "${path}" failed: ${reason}`);
    this.name = "XattrError";
    this.errno = code;
  }
  get notFound(): boolean {
    return this.errno === ENOENT;
  }
}

/** Reads one attribute; null when the file has no such attribute. */
export function getXattr(path: string, name: string): Uint8Array | null {
  const value = getXattrView(path, name);
  return value === null ? null : value.slice();
}

/** The attribute as a view of the shared value buffer: valid until the next call. */
function getXattrView(path: string, name: string): Uint8Array | null {
  const pathBytes = cPath(path);
  const nameBytes = cName(name);
  for (;;) {
    const n = Number(
      libc().getxattr(pathBytes, nameBytes, valueBuffer, BigInt(valueBuffer.length)),
    );
    if (n >= 0) return valueBuffer.subarray(0, n);
    const code = lastErrno();
    if (code === ENODATA) return null;
    if (code === ERANGE && valueBuffer.length < 1 << 20) {
      valueBuffer = new Uint8Array(valueBuffer.length * 4);
      continue;
    }
    throw new XattrError("getxattr", path, code);
  }
}

/** Scratch buffer for lookupXattr: most values fit, and a listing reads thousands of them. */
let scratch = new Uint8Array(4096);

/**
 * Reads one attribute; null when the attribute is missing or the path is not there (ENOENT,
 * ENOTDIR). No exception on those: listings look up many paths that may not exist, and an
 * exception costs more than the syscall.
 */
export function lookupXattr(path: string, name: string): Uint8Array | null {
  const pathC = cString(path);
  const nameC = cString(name);
  for (;;) {
    const n = Number(libc().getxattr(pathC, nameC, scratch, BigInt(scratch.length)));
    if (n >= 0) return scratch.slice(0, n);
    const code = lastErrno();
    if (code === ENODATA || code === ENOENT || code === ENOTDIR) return null;
    if (code === ERANGE && scratch.length < 1 << 20) {
      scratch = new Uint8Array(scratch.length * 4);
      continue;
    }
    throw new XattrError("getxattr", path, code);
  }
}

/**
 * Reads one attribute of a path in C form (c-path.ts) as UTF-8 text, with the same absences as
 * lookupXattr (null for a missing attribute or path). Allocation-free apart from the string: the
 * value is decoded from the shared value buffer. Listings call this once per
 * listed entry, where a fresh C string and value copy each were most of the garbage.
 */
export function lookupXattrTextC(pathBytes: Uint8Array, name: string): string | null {
  const nameBytes = cName(name);
  for (;;) {
    if (valueLength.length !== valueBuffer.length) {
      valueLength = { length: valueBuffer.length, big: BigInt(valueBuffer.length) };
      valueViews = [];
    }
    const n = libc().getxattr32(pathBytes, nameBytes, valueBuffer, valueLength.big);
    if (n >= 0) return decoder.decode(valueViews[n] ??= valueBuffer.subarray(0, n));
    const code = lastErrno();
    if (code === ENODATA || code === ENOENT || code === ENOTDIR) return null;
    if (code === ERANGE && valueBuffer.length < 1 << 20) {
      valueBuffer = new Uint8Array(valueBuffer.length * 4);
      continue;
    }
    throw new XattrError("getxattr", cPathText(pathBytes), code);
  }
}

export function setXattr(path: string, name: string, value: Uint8Array): void {
  const copy = new Uint8Array(value);
  const rc = libc().setxattr(cPath(path), cName(name), copy, BigInt(copy.length), 0);
  if (rc !== 0) throw new XattrError("setxattr", path, lastErrno());
}

/** Removes one attribute; a missing attribute is not an error. */
export function removeXattr(path: string, name: string): void {
  const rc = libc().removexattr(cPath(path), cName(name));
  if (rc !== 0) {
    const code = lastErrno();
    if (code !== ENODATA) throw new XattrError("removexattr", path, code);
  }
}

/** Reads a JSON attribute; null when absent. */
export function getJsonXattr<T>(path: string, name: string): T | null {
  const raw = getXattrView(path, name);
  return raw === null ? null : JSON.parse(decoder.decode(raw)) as T;
}

export function setJsonXattr(path: string, name: string, value: unknown): void {
  setXattr(path, name, encoder.encode(JSON.stringify(value)));
}

/**
 * Checks that `dir` supports user extended attributes by writing one on a probe file.
 * Throws an Error whose message says what to do.
 */
export async function assertXattrSupport(dir: string): Promise<void> {
  const probe = `${dir}/.svc-xattr-probe-${crypto.randomUUID()}`;
  await Deno.writeFile(probe, new Uint8Array());
  try {
    setXattr(probe, "user.svc.probe", encoder.encode("1"));
    const back = getXattr(probe, "user.svc.probe");
    if (back === null || back[0] !== 0x31) throw new Error("attribute did not read back");
  } catch (err) {
    throw new Error(
      `Data directory "${dir}" does not support user extended attributes (${
        (err as Error).message
      }); svc keeps object metadata in them. Use an ext4, xfs, btrfs or tmpfs (Linux 6.6+) ` +
        `directory, or mount with user_xattr.`,
    );
  } finally {
    await Deno.remove(probe).catch(() => {});
  }
}
