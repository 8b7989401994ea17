/**
 * A small object read through one file descriptor, with libc calls (Deno has no fgetxattr and no
 * way to reach an FsFile's descriptor). A small GET was six syscalls through Deno ops (lstat and
 * getxattr by path, open, fstat to check the inode, read, close) plus an FsFile object and a
 * thrown NotFound for every miss. Here it is open, statx, fgetxattr, pread, close on one
 * descriptor: the metadata, the size and the bytes come from the same inode by construction, so
 * no inode check is needed, and a miss is an errno, not an exception.
 *
 * Only the common case is served (a regular file holding a passthrough object whose bytes fit
 * in one small read); anything else answers null and the caller takes its general path.
 */

import { cName, cPath } from "./c-path.ts";
import { denoLstatOrNull } from "./lean-stat.ts";
import { errnoReader, type Libc, type LibcSymbols, processLibc } from "./libc.ts";
import {
  AT_EMPTY_PATH,
  AT_FDCWD,
  AT_SYMLINK_NOFOLLOW,
  S_IFDIR,
  S_IFMT,
  S_IFREG,
  STATX_BYTES,
  STATX_INO,
  STATX_SIZE,
  STATX_TYPE,
  STX_INO,
  STX_MODE,
  STX_SIZE,
} from "./statx-layout.ts";

const O_RDONLY = 0;
/** A FIFO placed by hand in the data directory must not block the open. */
const O_NONBLOCK = 0o4000;
const O_CLOEXEC = 0o2000000;
/** A symlink is no object (the general path's lstat says so too). Differs by architecture. */
const O_NOFOLLOW = Deno.build.arch === "aarch64" ? 0o100000 : 0o400000;
const OPEN_FLAGS = O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOFOLLOW;

const ERANGE = 34;
const EINTR = 4;

const ENOENT = 2;
const ENOTDIR = 20;
const ENODATA = 61;

/** A regular file open for reading, inside withRegularFile's callback. */
export interface OpenRegularFile {
  /** The file's size in bytes. */
  readonly size: number;
  /** Attribute `name`; null when the file has none. A view valid until the next call here. */
  attribute(name: string): Uint8Array | null;
  /** Exactly `length` bytes from `start`. */
  read(start: number, length: number): Uint8Array<ArrayBuffer>;
}

/** What lstatNoThrow found at a path. */
export interface PathKind {
  isFile: boolean;
  isDirectory: boolean;
  size: number;
  ino: number;
}

export interface FdRead {
  /**
   * Opens `path` and, when it is a regular file, hands it to `use`; closes it after. null when
   * the path cannot be opened (absent, a missing or non-directory parent, a symlink) or is not a
   * regular file, and always where libc or its statx is missing: the caller then takes its
   * general path, which knows what that means. Errors thrown by `use` pass through.
   */
  withRegularFile<T>(path: string, use: (file: OpenRegularFile) => T): T | null;
  /**
   * lstat without an exception for a missing path: null when nothing is there (ENOENT, ENOTDIR).
   * Deno.lstatSync throws NotFound, whose construction cost more than the syscall on the write
   * path, which looks up names that mostly do not exist (a key's `.delta` twin, a new key).
   * Where libc or its statx is missing, Deno.lstatSync answers (and the exception is caught).
   */
  lstatNoThrow(path: string): PathKind | null;
}

/** The descriptor reads through `libc`; without statx, the fallbacks each method names. */
export function createFdRead(libc: Libc): FdRead {
  const statx = libc.available ? libc.symbols.statx : null;
  if (!libc.available || statx === null) {
    return { withRegularFile: () => null, lstatNoThrow: lstatWithDeno };
  }
  return nativeFdRead(libc.symbols, statx);
}

function nativeFdRead(c: LibcSymbols, statx: NonNullable<LibcSymbols["statx"]>): FdRead {
  const errno = errnoReader(c);
  // Reused buffers: every call here is synchronous, so one of each is never used by two reads
  // at once. A fresh path string buffer and 4 KiB value buffer per read cost more than the calls.
  let valueBuffer = new Uint8Array(4096);
  const statBuffer = new Uint8Array(STATX_BYTES);
  const statView = new DataView(statBuffer.buffer);
  const emptyPath = new Uint8Array(1);

  const fgetxattr = (fd: number, name: string, path: string): Uint8Array | null => {
    const nameBytes = cName(name);
    for (;;) {
      const n = Number(c.fgetxattr(fd, nameBytes, valueBuffer, BigInt(valueBuffer.length)));
      if (n >= 0) return valueBuffer.subarray(0, n);
      const code = errno();
      if (code === ENODATA) return null;
      if (code === ERANGE && valueBuffer.length < 1 << 20) {
        valueBuffer = new Uint8Array(valueBuffer.length * 4);
        continue;
      }
      throw new Error(`fgetxattr "${path}" failed: errno ${code}`);
    }
  };

  const pread = (fd: number, start: number, length: number, path: string) => {
    const bytes = new Uint8Array(length);
    for (let offset = 0; offset < length;) {
      const n = Number(
        c.pread(fd, bytes.subarray(offset), BigInt(length - offset), BigInt(start + offset)),
      );
      if (n < 0) {
        const code = errno();
        if (code === EINTR) continue;
        throw new Error(`Reading "${path}" failed: errno ${code}`);
      }
      if (n === 0) {
        throw new Error(`File "${path}" ended ${length - offset} bytes before the range`);
      }
      offset += n;
    }
    return bytes;
  };

  return {
    withRegularFile(path, use) {
      const fd = c.open(cPath(path), OPEN_FLAGS, 0);
      if (fd < 0) return null;
      try {
        if (statx(fd, emptyPath, AT_EMPTY_PATH, STATX_TYPE | STATX_SIZE, statBuffer) !== 0) {
          return null;
        }
        if ((statView.getUint16(STX_MODE, true) & S_IFMT) !== S_IFREG) return null;
        return use({
          size: Number(statView.getBigUint64(STX_SIZE, true)),
          attribute: (name) => fgetxattr(fd, name, path),
          read: (start, length) => pread(fd, start, length, path),
        });
      } finally {
        c.close(fd);
      }
    },
    lstatNoThrow(path) {
      const mask = STATX_TYPE | STATX_SIZE | STATX_INO;
      if (statx(AT_FDCWD, cPath(path), AT_SYMLINK_NOFOLLOW, mask, statBuffer) !== 0) {
        const code = errno();
        if (code === ENOENT || code === ENOTDIR) return null;
        throw new Error(`lstat "${path}" failed: errno ${code}`);
      }
      const type = statView.getUint16(STX_MODE, true) & S_IFMT;
      return {
        isFile: type === S_IFREG,
        isDirectory: type === S_IFDIR,
        size: Number(statView.getBigUint64(STX_SIZE, true)),
        ino: Number(statView.getBigUint64(STX_INO, true)),
      };
    },
  };
}

function lstatWithDeno(path: string): PathKind | null {
  const stat = denoLstatOrNull(path);
  if (stat === null) return null;
  return {
    isFile: stat.isFile,
    isDirectory: stat.isDirectory,
    size: stat.size,
    ino: stat.ino ?? 0,
  };
}

/** The process's descriptor reads. */
export const { withRegularFile, lstatNoThrow } = createFdRead(processLibc);
