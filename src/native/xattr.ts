/**
 * Extended attributes through libc, because Deno has no xattr API. The filesystem backend keeps
 * each object's metadata in one attribute set on the temp file before the rename, so the rename
 * commits bytes and metadata together. There is no fallback: without libc every call here
 * refuses, naming it, and assertXattrSupport refuses the data directory at start.
 */

import { cName, cPath, cPathText, cString } from "./c-path.ts";
import { errnoReader, type Libc, type LibcSymbols, processLibc } from "./libc.ts";

const ENOENT = 2;
const ENOTDIR = 20;
const ENODATA = 61;
const ERANGE = 34;
const ENOTSUP = 95;

const encoder = new TextEncoder();
const decoder = new TextDecoder();

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

export interface Xattr {
  /** Why these calls cannot work (libc missing), or null when they can. */
  readonly unavailable: string | null;
  /** Reads one attribute; null when the file has no such attribute. */
  getXattr(path: string, name: string): Uint8Array | null;
  /**
   * Reads one attribute; null when the attribute is missing or the path is not there (ENOENT,
   * ENOTDIR). No exception on those: listings look up many paths that may not exist, and an
   * exception costs more than the syscall.
   */
  lookupXattr(path: string, name: string): Uint8Array | null;
  /**
   * Reads one attribute of a path in C form (c-path.ts) as UTF-8 text, with the same absences as
   * lookupXattr (null for a missing attribute or path). Allocation-free apart from the string:
   * the value is decoded from the shared value buffer. Listings call this once per listed entry,
   * where a fresh C string and value copy each were most of the garbage.
   */
  lookupXattrTextC(pathBytes: Uint8Array, name: string): string | null;
  setXattr(path: string, name: string, value: Uint8Array): void;
  /** Removes one attribute; a missing attribute is not an error. */
  removeXattr(path: string, name: string): void;
  /** Reads a JSON attribute; null when absent. */
  getJsonXattr<T>(path: string, name: string): T | null;
  setJsonXattr(path: string, name: string, value: unknown): void;
}

/** The xattr calls through `libc`; every one refuses, naming libc, where it is missing. */
export function createXattr(libc: Libc): Xattr {
  if (libc.available) return nativeXattr(libc.symbols);
  const unavailable = `Extended attributes need libc (getxattr, setxattr, removexattr), ` +
    `which could not be loaded: ${libc.reason}`;
  const refuse = (): never => {
    throw new Error(unavailable);
  };
  return {
    unavailable,
    getXattr: refuse,
    lookupXattr: refuse,
    lookupXattrTextC: refuse,
    setXattr: refuse,
    removeXattr: refuse,
    getJsonXattr: refuse,
    setJsonXattr: refuse,
  };
}

function nativeXattr(c: LibcSymbols): Xattr {
  const errno = errnoReader(c);
  // Reused buffers for the calls on the read path: they are synchronous, so one buffer each is
  // never used by two calls at once. Allocating a path string and a 4 KiB value buffer per read
  // cost more than the getxattr itself on small GETs.
  let valueBuffer = new Uint8Array(4096);
  /** valueBuffer's length as the BigInt getxattr takes (one BigInt per call is garbage too). */
  let valueLength = { length: valueBuffer.length, big: BigInt(valueBuffer.length) };
  /** Views of valueBuffer by length, for lookupXattrTextC (a subarray per call is garbage too). */
  let valueViews: Uint8Array[] = [];
  /** Scratch buffer for lookupXattr: most values fit, and a listing reads thousands of them. */
  let scratch = new Uint8Array(4096);

  /** The attribute as a view of the shared value buffer: valid until the next call. */
  const getXattrView = (path: string, name: string): Uint8Array | null => {
    const pathBytes = cPath(path);
    const nameBytes = cName(name);
    for (;;) {
      const n = Number(c.getxattr(pathBytes, nameBytes, valueBuffer, BigInt(valueBuffer.length)));
      if (n >= 0) return valueBuffer.subarray(0, n);
      const code = errno();
      if (code === ENODATA) return null;
      if (code === ERANGE && valueBuffer.length < 1 << 20) {
        valueBuffer = new Uint8Array(valueBuffer.length * 4);
        continue;
      }
      throw new XattrError("getxattr", path, code);
    }
  };

  const setXattr = (path: string, name: string, value: Uint8Array): void => {
    const copy = new Uint8Array(value);
    const rc = c.setxattr(cPath(path), cName(name), copy, BigInt(copy.length), 0);
    if (rc !== 0) throw new XattrError("setxattr", path, errno());
  };

  return {
    unavailable: null,
    getXattr(path, name) {
      const value = getXattrView(path, name);
      return value === null ? null : value.slice();
    },
    lookupXattr(path, name) {
      const pathC = cString(path);
      const nameC = cString(name);
      for (;;) {
        const n = Number(c.getxattr(pathC, nameC, scratch, BigInt(scratch.length)));
        if (n >= 0) return scratch.slice(0, n);
        const code = errno();
        if (code === ENODATA || code === ENOENT || code === ENOTDIR) return null;
        if (code === ERANGE && scratch.length < 1 << 20) {
          scratch = new Uint8Array(scratch.length * 4);
          continue;
        }
        throw new XattrError("getxattr", path, code);
      }
    },
    lookupXattrTextC(pathBytes, name) {
      const nameBytes = cName(name);
      for (;;) {
        if (valueLength.length !== valueBuffer.length) {
          valueLength = { length: valueBuffer.length, big: BigInt(valueBuffer.length) };
          valueViews = [];
        }
        const n = c.getxattr32(pathBytes, nameBytes, valueBuffer, valueLength.big);
        if (n >= 0) return decoder.decode(valueViews[n] ??= valueBuffer.subarray(0, n));
        const code = errno();
        if (code === ENODATA || code === ENOENT || code === ENOTDIR) return null;
        if (code === ERANGE && valueBuffer.length < 1 << 20) {
          valueBuffer = new Uint8Array(valueBuffer.length * 4);
          continue;
        }
        throw new XattrError("getxattr", cPathText(pathBytes), code);
      }
    },
    setXattr,
    removeXattr(path, name) {
      const rc = c.removexattr(cPath(path), cName(name));
      if (rc !== 0) {
        const code = errno();
        if (code !== ENODATA) throw new XattrError("removexattr", path, code);
      }
    },
    getJsonXattr<T>(path: string, name: string): T | null {
      const raw = getXattrView(path, name);
      return raw === null ? null : JSON.parse(decoder.decode(raw)) as T;
    },
    setJsonXattr(path, name, value) {
      setXattr(path, name, encoder.encode(JSON.stringify(value)));
    },
  };
}

/** The process's xattr calls. */
export const processXattr: Xattr = createXattr(processLibc);
export const {
  getXattr,
  lookupXattr,
  lookupXattrTextC,
  setXattr,
  removeXattr,
  getJsonXattr,
  setJsonXattr,
} = processXattr;

/**
 * Checks that `dir` supports user extended attributes by writing one on a probe file (through
 * `xattr`, the process's by default). Throws an Error whose message says what to do.
 */
export async function assertXattrSupport(dir: string, xattr = processXattr): Promise<void> {
  if (xattr.unavailable !== null) {
    throw new Error(
      `Data directory "${dir}" cannot be used: svc keeps object metadata in extended ` +
        `attributes. ${xattr.unavailable}`,
    );
  }
  const probe = `${dir}/.svc-xattr-probe-${crypto.randomUUID()}`;
  await Deno.writeFile(probe, new Uint8Array());
  try {
    xattr.setXattr(probe, "user.svc.probe", encoder.encode("1"));
    const back = xattr.getXattr(probe, "user.svc.probe");
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
