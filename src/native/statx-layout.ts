/**
 * `statx(2)` as the lean stat calls use it (lean-stat.ts, fd-read.ts; the symbol is in libc.ts):
 * the flags and mask bits, and where the fields sit in `struct statx` (linux/stat.h, the same
 * stable kernel ABI on every architecture).
 */

export const AT_FDCWD = -100;
export const AT_SYMLINK_NOFOLLOW = 0x100;
export const AT_EMPTY_PATH = 0x1000;

export const STATX_TYPE = 0x1;
export const STATX_INO = 0x100;
export const STATX_SIZE = 0x200;

export const S_IFMT = 0o170000;
export const S_IFREG = 0o100000;
export const S_IFDIR = 0o040000;

/** Bytes of `struct statx`; stx_mode (u16) at 28, stx_ino (u64) at 32, stx_size (u64) at 40. */
export const STATX_BYTES = 256;
export const STX_MODE = 28;
export const STX_INO = 32;
export const STX_SIZE = 40;
