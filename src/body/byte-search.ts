/**
 * Byte searches of the multipart/form-data reader: where a delimiter is, and how much of a
 * piece's tail could be the start of one continuing in the next read.
 */

/**
 * Length of the longest tail of `hay` that is a proper prefix of `needle` (0 if none): bytes that
 * may be the start of a needle continuing in the next piece. Assumes no whole needle in `hay`.
 */
export function partialDelimiterAtEnd(hay: Uint8Array, needle: Uint8Array): number {
  const first = needle[0];
  for (let start = Math.max(0, hay.length - needle.length + 1); start < hay.length; start++) {
    start = hay.indexOf(first, start);
    if (start < 0) return 0;
    let j = 1;
    while (start + j < hay.length && hay[start + j] === needle[j]) j++;
    if (start + j === hay.length) return j;
  }
  return 0;
}

/** Position of `needle` in `hay` at or after `from`, or -1. */
export function indexOf(hay: Uint8Array, needle: Uint8Array, from = 0): number {
  const first = needle[0];
  const last = hay.length - needle.length;
  // indexOf on one byte is native and fast; candidates are then checked in full.
  for (let i = hay.indexOf(first, from); i >= 0 && i <= last; i = hay.indexOf(first, i + 1)) {
    let j = 1;
    while (j < needle.length && hay[i + j] === needle[j]) j++;
    if (j === needle.length) return i;
  }
  return -1;
}
