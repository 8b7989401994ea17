/**
 * Public prefixes of a bucket (`storage.buckets.<bucket>.public_prefixes`): which keys anonymous
 * readers may see, and what an anonymous listing may show.
 *
 * Matching is a plain key prefix test. A prefix ending in `/` is therefore directory-aligned by
 * construction (`releases/` covers `releases/x`, never `releases-internal/x`), a prefix without
 * one covers every key that starts with it (`rel` covers `releases-internal/x` too), and `""`
 * covers the whole bucket.
 *
 * Listing rule. An anonymous listing shows an object key only when a public prefix covers it. It
 * shows a common prefix only when (a) it lies inside a public prefix (every key it stands for is
 * public), or (b) it is an ancestor of a public prefix that holds at least one object, so a
 * reader can browse down to the public part. A common prefix that merely shares leading
 * characters with a public prefix (`releases-internal/` next to `releases/`) is never shown.
 * The listing only ever reads the key ranges of the public prefixes, so it never walks private
 * keys, and its continuation tokens only ever name entries it returned.
 */

/** True when `key` lies under `prefix` (see the module comment for the alignment rule). */
export function coveredBy(key: string, prefix: string): boolean {
  return key.startsWith(prefix);
}

/** True when some prefix of `prefixes` covers `key`. */
export function coveredByAny(key: string, prefixes: readonly string[]): boolean {
  return prefixes.some((prefix) => coveredBy(key, prefix));
}

/** True when the prefixes make the whole bucket public. */
export function wholeBucket(prefixes: readonly string[]): boolean {
  return prefixes.includes("");
}

/**
 * The common prefix `key` rolls up into for a listing of `requestPrefix` with `delimiter`, or
 * undefined when it is reported as itself.
 */
export function rollUp(
  key: string,
  requestPrefix: string,
  delimiter: string,
): string | undefined {
  if (delimiter === "" || !key.startsWith(requestPrefix)) return undefined;
  const at = key.indexOf(delimiter, requestPrefix.length);
  return at < 0 ? undefined : key.slice(0, at + delimiter.length);
}

/** One key range an anonymous listing reads: every key that starts with `prefix`. */
export interface ScanRange {
  prefix: string;
  /**
   * Set when every key of the range rolls up into this one common prefix (the public prefix
   * lies below a delimiter of the request): the range then shows just that entry, if non-empty.
   */
  rolledUpAs?: string;
}

/**
 * The key ranges an anonymous listing of `requestPrefix` must read, in listing order: the
 * public prefixes intersected with the request prefix, nested ones merged into their parent.
 * Empty when no public key can match the request.
 */
export function scanRanges(
  publicPrefixes: readonly string[],
  requestPrefix: string,
  delimiter: string,
): ScanRange[] {
  const prefixes = new Set<string>();
  for (const prefix of publicPrefixes) {
    if (prefix.startsWith(requestPrefix)) prefixes.add(prefix);
    else if (requestPrefix.startsWith(prefix)) prefixes.add(requestPrefix);
  }
  const sorted = [...prefixes].sort(compareBytes);
  const ranges: ScanRange[] = [];
  for (const prefix of sorted) {
    // Sorted order puts a prefix right before the ones it contains.
    const last = ranges[ranges.length - 1];
    if (last !== undefined && prefix.startsWith(last.prefix)) continue;
    const rolledUpAs = rollUp(prefix, requestPrefix, delimiter);
    ranges.push(rolledUpAs === undefined ? { prefix } : { prefix, rolledUpAs });
  }
  return ranges;
}

const encoder = new TextEncoder();

/** UTF-8 byte order, the order S3 listings use. */
export function compareBytes(a: string, b: string): number {
  const x = encoder.encode(a), y = encoder.encode(b);
  const n = Math.min(x.length, y.length);
  for (let i = 0; i < n; i++) if (x[i] !== y[i]) return x[i] - y[i];
  return x.length - y.length;
}

/** True when every key under `prefix` sorts at or before `position` (a listing resume point). */
export function rangeBefore(prefix: string, position: string): boolean {
  return !position.startsWith(prefix) && compareBytes(position, prefix) > 0;
}
