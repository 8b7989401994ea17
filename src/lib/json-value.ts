/**
 * Plain-data helpers for config documents (parsed YAML/JSON): what counts as an object, and
 * equality that treats a member set to `undefined` as absent (as YAML and JSON output do).
 */

/** A JSON object: not null, not an array. */
export function isPlainObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}

export function deepEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (Array.isArray(a) && Array.isArray(b)) {
    return a.length === b.length && a.every((item, i) => deepEqual(item, b[i]));
  }
  if (isPlainObject(a) && isPlainObject(b)) {
    const keys = Object.keys(a).filter((k) => a[k] !== undefined);
    const other = Object.keys(b).filter((k) => b[k] !== undefined);
    return keys.length === other.length && keys.every((k) => deepEqual(a[k], b[k]));
  }
  return false;
}

/** How deep an admin JSON body may nest (a config document needs about 8 levels). */
export const MAX_JSON_DEPTH = 64;

/**
 * The first nesting depth of JSON `text` above `max`, or 0 when it stays within: one linear pass
 * over the text, before any parse, so a body nested 150,000 levels deep never reaches a recursive
 * walk (a stack overflow answered 500). Brackets inside strings do not count.
 */
export function jsonDepthOver(text: string, max = MAX_JSON_DEPTH): number {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const ch = text.charCodeAt(i);
    if (inString) {
      if (ch === 0x5c) i++; // backslash: skip the escaped character
      else if (ch === 0x22) inString = false;
    } else if (ch === 0x22) {
      inString = true;
    } else if (ch === 0x5b || ch === 0x7b) {
      if (++depth > max) return depth;
    } else if (ch === 0x5d || ch === 0x7d) {
      depth--;
    }
  }
  return 0;
}
