/**
 * A path as a NUL-terminated C string in one shared buffer, for the libc calls a listing makes
 * per entry (lean-stat.ts, xattr.ts lookupXattrTextC). ASCII paths (the usual case) are copied
 * by hand: TextEncoder.encodeInto returns a fresh result object per call, garbage a listing of
 * millions of keys does not need. The buffer is valid until the next call; the callers are
 * synchronous, so no two uses overlap.
 */

const encoder = new TextEncoder();
const decoder = new TextDecoder();
let buffer = new Uint8Array(4096);

export function cPath(path: string): Uint8Array {
  // UTF-8 needs at most 3 bytes per UTF-16 code unit.
  if (buffer.length < path.length * 3 + 1) buffer = new Uint8Array(path.length * 3 + 1);
  const end = put(path, 0);
  if (end < 0) return encoded(path);
  buffer[end] = 0;
  return buffer;
}

/** `${dir}/${entry}` as a C string, without building that string (a listing's per-entry path). */
export function cJoinedPath(dir: string, entry: string): Uint8Array {
  const length = dir.length + 1 + entry.length;
  if (buffer.length < length * 3 + 1) buffer = new Uint8Array(length * 3 + 1);
  const slash = put(dir, 0);
  const end = slash < 0 ? -1 : put(entry, slash + 1);
  if (end < 0) return encoded(`${dir}/${entry}`);
  buffer[slash] = 0x2f;
  buffer[end] = 0;
  return buffer;
}

/** The C string in the buffer back as text (error messages). */
export function cPathText(bytes: Uint8Array): string {
  return decoder.decode(bytes.subarray(0, bytes.indexOf(0)));
}

/** Copies ASCII `text` to the buffer at `at`; the end, or -1 at the first non-ASCII unit. */
function put(text: string, at: number): number {
  for (let i = 0; i < text.length; i++) {
    const unit = text.charCodeAt(i);
    if (unit >= 0x80) return -1;
    buffer[at + i] = unit;
  }
  return at + text.length;
}

function encoded(path: string): Uint8Array {
  const { written } = encoder.encodeInto(path, buffer);
  buffer[written] = 0;
  return buffer;
}

/** A fresh NUL-terminated copy of `value` (for a call that takes two strings at once). */
export function cString(value: string): Uint8Array<ArrayBuffer> {
  const bytes = encoder.encode(value);
  const out = new Uint8Array(bytes.length + 1);
  out.set(bytes);
  return out;
}

const names = new Map<string, Uint8Array<ArrayBuffer>>();

/** An attribute name as a C string, made once per name. */
export function cName(name: string): Uint8Array<ArrayBuffer> {
  let found = names.get(name);
  if (!found) names.set(name, found = cString(name));
  return found;
}
