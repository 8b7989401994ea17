/**
 * The listing an anonymous reader gets from a bucket with public prefixes. It reads only the
 * key ranges of the public prefixes (see admission/public-prefix.ts for which entries are
 * shown), so private keys are never walked, and a page ends on an entry it returned, so the
 * continuation token or marker never names a private key. Pages hold exactly `maxKeys` entries
 * unless the listing ends, and `isTruncated` is exact: one entry beyond the page is looked for.
 *
 * An IAM principal's listing goes the same way when its grants' prefixes are exact (the ranges
 * hold only keys it may see). When some keys inside them are hidden, list-ops.ts takes
 * filtered-list.ts instead, which builds common prefixes from visible keys only and bounds the
 * hidden keys a request reads. The optional `visible` predicate here (drop entries inside the
 * ranges; a dropped entry never ends a page) has no production caller since then.
 */
import { compareBytes, rangeBefore, rollUp, scanRanges } from "../../admission/mod.ts";
import type { ListOptions, ListPage, ObjectInfo } from "../../storage/mod.ts";

export interface PublicListParams {
  prefix: string;
  delimiter: string;
  /** At least 1. */
  maxKeys: number;
  /** Resume after this key or common prefix ("" for the start). */
  startAfter: string;
}

type Entry = { key: string; info?: ObjectInfo };

/** One backend page as entries in listing order (objects and common prefixes interleaved). */
function pageEntries(page: ListPage): Entry[] {
  const entries: Entry[] = [
    ...page.objects.map((info) => ({ key: info.key, info })),
    ...page.commonPrefixes.map((key) => ({ key })),
  ];
  return entries.sort((a, b) => compareBytes(a.key, b.key));
}

/** Whether the range under `prefix` holds a key `visible` shows (any key without a predicate). */
async function rangeHasKey(
  list: (options: ListOptions) => Promise<ListPage>,
  prefix: string,
  visible?: (entry: string, kind: "object" | "prefix") => boolean,
): Promise<boolean> {
  let cursor: string | undefined;
  for (;;) {
    const page = await list({ prefix, startAfter: cursor, maxKeys: visible ? 1000 : 1 });
    if (page.objects.some((info) => !visible || visible(info.key, "object"))) return true;
    if (!visible || !page.isTruncated || page.nextStartAfter === undefined) return false;
    cursor = page.nextStartAfter;
  }
}

export async function listPublic(
  list: (options: ListOptions) => Promise<ListPage>,
  params: PublicListParams,
  publicPrefixes: readonly string[],
  visible?: (entry: string, kind: "object" | "prefix") => boolean,
): Promise<ListPage> {
  const { prefix, delimiter, startAfter } = params;
  const want = params.maxKeys + 1;
  const entries: Entry[] = [];
  const after = (key: string) => startAfter === "" || compareBytes(key, startAfter) > 0;
  const push = (entry: Entry) => {
    const last = entries[entries.length - 1];
    // Several keys (or ranges) rolling up into one common prefix show it once.
    if (entry.info === undefined && last?.info === undefined && last?.key === entry.key) return;
    if (entry.info === undefined && !after(entry.key)) return;
    if (visible && !visible(entry.key, entry.info === undefined ? "prefix" : "object")) return;
    entries.push(entry);
  };
  for (const range of scanRanges(publicPrefixes, prefix, delimiter)) {
    if (entries.length >= want) break;
    if (startAfter !== "" && rangeBefore(range.prefix, startAfter)) continue;
    if (range.rolledUpAs !== undefined) {
      // Every key of the range is the one common prefix: show it if the range has a key.
      const last = entries[entries.length - 1];
      if (last?.key === range.rolledUpAs || !after(range.rolledUpAs)) continue;
      if (await rangeHasKey(list, range.prefix, visible)) push({ key: range.rolledUpAs });
      continue;
    }
    let cursor = startAfter !== "" && startAfter.startsWith(range.prefix) ? startAfter : undefined;
    for (;;) {
      const page = await list({
        prefix: range.prefix,
        delimiter: delimiter || undefined,
        startAfter: cursor,
        maxKeys: want - entries.length,
      });
      for (const entry of pageEntries(page)) {
        // Roll up from the request's prefix, not the range's, as the client asked.
        const commonPrefix = rollUp(entry.key, prefix, delimiter);
        push(commonPrefix === undefined ? entry : { key: commonPrefix });
        if (entries.length >= want) break;
      }
      if (entries.length >= want || !page.isTruncated || page.nextStartAfter === undefined) break;
      cursor = page.nextStartAfter;
    }
  }
  const shown = entries.slice(0, params.maxKeys);
  const isTruncated = entries.length > params.maxKeys;
  return {
    objects: shown.filter((e) => e.info !== undefined).map((e) => e.info!),
    commonPrefixes: shown.filter((e) => e.info === undefined).map((e) => e.key),
    isTruncated,
    ...(isTruncated ? { nextStartAfter: shown[shown.length - 1].key } : {}),
  };
}
