/**
 * A directory's entry names and types, read with `getdents64(2)` through libc into one reused
 * buffer. `Deno.readDirSync` builds every entry as an object (and, for a large directory, all of
 * them at once before the first is seen): ~500 bytes of garbage per entry, for entries a listing
 * keeps only the name of. Here an entry costs its name string: the ASCII names of one
 * buffer-full are decoded as one string (windows-1252, one character per byte, so byte offsets
 * stay character offsets) and each is a slice of it; any other name is decoded as UTF-8 alone.
 * Where libc lacks getdents64 (glibc < 2.30, or no libc at all), Deno.readDirSync is used.
 */

import { cPath } from "./c-path.ts";
import { errnoReader, type Libc, type LibcSymbols, processLibc } from "./libc.ts";

export const ENTRY_FILE = 1;
export const ENTRY_DIRECTORY = 2;
/** Symlinks, sockets, devices. */
export const ENTRY_OTHER = 3;

/** Called once per entry except `.` and `..`; `type` is ENTRY_FILE, ENTRY_DIRECTORY or OTHER. */
export type EntryVisitor = (name: string, type: number) => void;

const O_DIRECTORY = 0o200000;
const O_CLOEXEC = 0o2000000;
const DT_UNKNOWN = 0;
const DT_DIR = 4;
const DT_REG = 8;

const BUFFER_SIZE = 256 * 1024;
const BUFFER_SIZE_BIG = BigInt(BUFFER_SIZE);
/** Per ASCII-named record of one buffer-full: at most one per 24 bytes (header and a name). */
const MAX_RECORDS = BUFFER_SIZE / 24;
const bytesAsChars = new TextDecoder("windows-1252");
const utf8 = new TextDecoder();

/** The errno values a directory read can meet, by the names Deno's own errors carry. */
const ERRNO_NAMES: Record<number, string> = {
  1: "EPERM",
  2: "ENOENT",
  5: "EIO",
  12: "ENOMEM",
  13: "EACCES",
  20: "ENOTDIR",
  23: "ENFILE",
  24: "EMFILE",
  36: "ENAMETOOLONG",
  40: "ELOOP",
};

/** An error carrying the errno name the callers test (`err.code`), like Deno's own. */
function fsError(operation: string, path: string, errno: number): Error {
  const code = ERRNO_NAMES[errno] ?? `E${errno}`;
  return Object.assign(new Error(`${operation} "${path}" failed: errno ${errno}`), { code });
}

/**
 * Calls `visit` for every entry of `path` (in the directory's own order). Throws an error whose
 * `code` is "ENOENT" or "ENOTDIR" when the path is not a directory there, as Deno.readDirSync does.
 */
export type DirectoryReader = (path: string, visit: EntryVisitor) => void;

/** The directory reader through `libc`'s getdents64, or through Deno where it has none. */
export function createDirectoryReader(libc: Libc): DirectoryReader {
  const getdents64 = libc.available ? libc.symbols.getdents64 : null;
  return !libc.available || getdents64 === null
    ? readWithDeno
    : nativeReader(libc.symbols, getdents64);
}

function nativeReader(
  c: LibcSymbols,
  getdents64: NonNullable<LibcSymbols["getdents64"]>,
): DirectoryReader {
  const errno = errnoReader(c);
  // One buffer for every read: the reads are synchronous, so never two at once.
  const buffer = new Uint8Array(BUFFER_SIZE);
  const view = new DataView(buffer.buffer);
  const nameStarts = new Int32Array(MAX_RECORDS);
  const nameEnds = new Int32Array(MAX_RECORDS);
  const types = new Uint8Array(MAX_RECORDS);

  /**
   * The entries in the first `length` bytes of the buffer (struct linux_dirent64 records). The
   * record headers and non-ASCII names are zeroed once read, so that the one string decoded from
   * the block holds only ASCII: a one-byte string, whose slices cost a byte per character.
   */
  const visitBlock = (dirPath: string, length: number, visit: EntryVisitor): void => {
    let records = 0;
    for (let offset = 0; offset < length;) {
      const recordLength = view.getUint16(offset + 16, true);
      const dtype = buffer[offset + 18];
      buffer.fill(0, offset, offset + 19);
      const start = offset + 19;
      let end = start;
      let ascii = true;
      for (; buffer[end] !== 0; end++) ascii &&= buffer[end] < 0x80;
      offset += recordLength;
      const size = end - start;
      if (size <= 2 && buffer[start] === 0x2e && (size === 1 || buffer[start + 1] === 0x2e)) {
        continue; // "." and ".."
      }
      if (ascii) {
        nameStarts[records] = start;
        nameEnds[records] = end;
        types[records++] = dtype;
      } else {
        const name = utf8.decode(buffer.subarray(start, end));
        buffer.fill(0, start, end);
        visit(name, entryType(dirPath, name, dtype));
      }
    }
    const chars = bytesAsChars.decode(buffer.subarray(0, length));
    for (let i = 0; i < records; i++) {
      const name = chars.slice(nameStarts[i], nameEnds[i]);
      visit(name, entryType(dirPath, name, types[i]));
    }
  };

  return (path, visit) => {
    const fd = c.open(cPath(path), O_DIRECTORY | O_CLOEXEC, 0);
    if (fd < 0) throw fsError("open", path, errno());
    try {
      for (;;) {
        const n = getdents64(fd, buffer, BUFFER_SIZE_BIG);
        if (n < 0) throw fsError("getdents64", path, errno());
        if (n === 0) return;
        visitBlock(path, n, visit);
      }
    } finally {
      c.close(fd);
    }
  };
}

function entryType(dirPath: string, name: string, dtype: number): number {
  return dtype === DT_REG
    ? ENTRY_FILE
    : dtype === DT_DIR
    ? ENTRY_DIRECTORY
    : dtype === DT_UNKNOWN
    ? typeByStat(`${dirPath}/${name}`)
    : ENTRY_OTHER;
}

/** Filesystems that do not fill in d_type: one lstat (a vanished entry is left out). */
function typeByStat(path: string): number {
  try {
    const stat = Deno.lstatSync(path);
    return stat.isFile ? ENTRY_FILE : stat.isDirectory ? ENTRY_DIRECTORY : ENTRY_OTHER;
  } catch {
    return ENTRY_OTHER;
  }
}

function readWithDeno(path: string, visit: EntryVisitor): void {
  for (const entry of Deno.readDirSync(path)) {
    const type = entry.isSymlink
      ? ENTRY_OTHER
      : entry.isFile
      ? ENTRY_FILE
      : entry.isDirectory
      ? ENTRY_DIRECTORY
      : ENTRY_OTHER;
    visit(entry.name, type);
  }
}

/** The process's directory reader (getdents64 where libc has it). */
export const readDirectoryEntries: DirectoryReader = createDirectoryReader(processLibc);
