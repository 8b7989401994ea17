// The order and grouping of object keys that every listing shares: S3 lists keys in UTF-8 byte
// order and rolls keys up into common prefixes at a delimiter.

/**
 * Compares two strings in UTF-8 byte order, which is Unicode code point order. JavaScript's `<`
 * compares UTF-16 code units, which puts U+E000..U+FFFF after astral characters (surrogates
 * 0xD800..0xDFFF); shifting the two ranges past each other at the first difference fixes that.
 */
export function compareUtf8(a: string, b: string): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    const x = a.charCodeAt(i);
    const y = b.charCodeAt(i);
    if (x !== y) return codePointRank(x) - codePointRank(y);
  }
  return a.length - b.length;
}

function codePointRank(unit: number): number {
  if (unit < 0xd800) return unit;
  return unit >= 0xe000 ? unit - 0x800 : unit + 0x2000;
}

/**
 * The common prefix `key` rolls up into: the prefix plus everything up to and including the
 * first delimiter after it; undefined when there is no delimiter after the prefix.
 */
export function commonPrefixOf(
  key: string,
  prefix: string,
  delimiter: string,
): string | undefined {
  const at = key.indexOf(delimiter, prefix.length);
  return at < 0 ? undefined : key.slice(0, at + delimiter.length);
}
