/**
 * One logical listing page of a compressed bucket: stored names mapped to logical keys (see
 * layout.ts), `reference.bin` hidden, and a key stored both ways (an overwrite that changed kind,
 * before its cleanup) shown once, as its later version. Entries are emitted only once no later
 * stored name can sort before them (isSettled), so pagination is exact for any page size.
 */

import type { Backend, ListOptions, ListPage, ObjectInfo } from "../storage/backend.ts";
import { compareUtf8 } from "../storage/fs-walk.ts";
import { isSettled, toLogicalEntries } from "./layout.ts";

export async function listLogicalPage(
  inner: Backend,
  bucket: string,
  options: ListOptions,
  innerPageKeys: number,
): Promise<ListPage> {
  const { prefix, delimiter, maxKeys } = options;
  const page: ListPage = { objects: [], commonPrefixes: [], isTruncated: false };
  if (maxKeys < 1) return page;
  // Logical entries seen so far, by key; a common prefix is an entry without info.
  const pending = new Map<string, ObjectInfo | null>();
  let innerAfter = options.startAfter;
  let exhausted = false;
  let settledCount = 0;
  let sorted: string[] = [];
  while (!exhausted && settledCount <= maxKeys) {
    const stored = await inner.listObjects(bucket, {
      prefix,
      delimiter,
      startAfter: innerAfter,
      maxKeys: innerPageKeys,
    });
    const logical = toLogicalEntries(stored.objects, { prefix, startAfter: options.startAfter });
    for (const info of logical) {
      const previous = pending.get(info.key);
      if (previous && previous.meta.lastModified >= info.meta.lastModified) continue;
      pending.set(info.key, info);
    }
    for (const common of stored.commonPrefixes) {
      if (!pending.has(common)) pending.set(common, null);
    }
    exhausted = !stored.isTruncated || stored.nextStartAfter === undefined;
    innerAfter = stored.nextStartAfter;
    sorted = [...pending.keys()].sort(compareUtf8);
    settledCount = exhausted ? sorted.length : countSettled(sorted, innerAfter!);
  }
  const emitted = sorted.slice(0, Math.min(maxKeys, settledCount));
  for (const key of emitted) {
    const info = pending.get(key);
    if (info) page.objects.push(info);
    else page.commonPrefixes.push(key);
  }
  if (settledCount > emitted.length || !exhausted) {
    page.isTruncated = true;
    page.nextStartAfter = emitted.at(-1);
  }
  return page;
}

/** How many of the sorted keys can no longer be preceded by a later stored name. */
function countSettled(sorted: readonly string[], lastStoredName: string): number {
  let count = 0;
  while (count < sorted.length && isSettled(sorted[count], lastStoredName)) count++;
  return count;
}
