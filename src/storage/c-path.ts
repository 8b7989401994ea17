/**
 * A path as a NUL-terminated C string in one shared buffer, for the libc calls a listing makes
 * per entry (lean-stat.ts, xattr.ts lookupXattrText). ASCII paths (the usual case) are copied
 * by hand: TextEncoder.encodeInto returns a fresh result object per call, garbage a listing of
 * millions of keys does not need. The buffer is valid until the next call; the callers are
 * synchronous, so no two uses overlap.
 */

const encoder = new TextEncoder();
let buffer = new Uint8Array(4096);

export function cPath(path: string): Uint8Array {
  const length = path.length;
  // UTF-8 needs at most 3 bytes per UTF-16 code unit.
  if (buffer.length < length * 3 + 1) buffer = new Uint8Array(length * 3 + 1);
  for (let i = 0; i < length; i++) {
    const unit = path.charCodeAt(i);
    if (unit >= 0x80) {
      const { written } = encoder.encodeInto(path, buffer);
      buffer[written] = 0;
      return buffer;
    }
    buffer[i] = unit;
  }
  buffer[length] = 0;
  return buffer;
}
