/**
 * The listing an IAM principal gets when some keys inside its granted ranges are hidden from it
 * (a Deny on part of a grant, a key it may list but not read: KeyVisibility.visible). Keys are
 * read one by one (never rolled up by the backend) and judged; common prefixes are built from the
 * visible keys only, so a prefix appears only when a visible key lies under it and a delimiter
 * never cuts a name out of a hidden key (`prefix=team/&delimiter=t` shows no `team/secret`
 * built from hidden keys). Once a common prefix is shown the walk jumps past it, and past every
 * range an unconditional Deny hides (`hiddenRange`), so neither is read key by key.
 *
 * Pages and continuation stay exact: a page holds `maxKeys` visible entries unless the listing
 * ends, one more visible entry is looked for so `isTruncated` is exact, and the next position is
 * the last entry returned, so no visible entry is skipped or repeated. One bound: a request reads
 * at most `hiddenLimit` hidden keys. When it reaches it first, the page ends there (possibly
 * empty) with `isTruncated` true and the position after the last key read, which is hidden and
 * therefore sealed (list-position.ts); the next request resumes from it, so a long run of hidden
 * keys costs the client a few extra round trips, never an endless series of empty pages.
 */
import { compareBytes, rangeBefore, rollUp, scanRanges } from "../../admission/mod.ts";
import type { ListOptions, ListPage, ObjectInfo } from "../../storage/mod.ts";
import type { KeyVisibility } from "../access.ts";
import type { PublicListParams } from "./public-list.ts";

/** Hidden keys one request reads at most before it answers a truncated page. */
export const HIDDEN_READ_LIMIT = 10_000;

/** Sorts after every key starting with the prefix it is appended to (but for U+10FFFF runs). */
const PAST = "\u{10FFFF}";

/** Keys read at a time by a delimiter listing after it jumped past a common prefix. */
const SMALL_BATCH = 32;

export interface FilteredListParams extends PublicListParams {
  /** `startAfter` is a raw position (a sealed one), not an entry an earlier page returned. */
  resumeRaw?: boolean;
}

/** A page whose `nextStartAfter` must be sealed: it names a hidden key. */
export type FilteredPage = ListPage & { nextSealed?: boolean };

type Entry = { key: string; info?: ObjectInfo };

export async function listFiltered(
  list: (options: ListOptions) => Promise<ListPage>,
  params: FilteredListParams,
  visibility: KeyVisibility,
  hiddenLimit = HIDDEN_READ_LIMIT,
): Promise<FilteredPage> {
  const { prefix, delimiter, maxKeys } = params;
  const visible = visibility.visible ?? (() => true);
  const want = maxKeys + 1;
  const entries: Entry[] = [];
  // Everything up to `position` was read by this request or returned by an earlier page.
  let position = params.startAfter;
  if (position !== "" && !params.resumeRaw) {
    // An entry returned inside a common prefix stands for the whole prefix, as in S3.
    const shown = rollUp(position, prefix, delimiter);
    if (shown !== undefined) position = shown + PAST;
  }
  let hidden = 0;
  let bounded = false;
  const small = Math.min(SMALL_BATCH, want);
  let batch = delimiter === "" ? want : small;
  let shownPrefix: string | undefined;
  walk: for (const range of scanRanges(visibility.prefixes, prefix, delimiter)) {
    for (;;) {
      if (position !== "" && rangeBefore(range.prefix, position)) break;
      const inside = position !== "" && compareBytes(position, range.prefix) > 0;
      const page = await list({
        prefix: range.prefix,
        startAfter: inside ? position : undefined,
        maxKeys: Math.min(1000, batch),
      });
      // A delimiter listing jumps after the first visible key of each common prefix: read few
      // keys at a time there, more after each read that ended without a jump.
      batch = delimiter === "" ? Math.max(want - entries.length, hidden) : batch * 2;
      let jumped = false;
      for (const info of page.objects) {
        position = info.key;
        if (shownPrefix !== undefined && info.key.startsWith(shownPrefix)) continue;
        if (!visible(info.key, "object")) {
          const denied = visibility.hiddenRange?.(info.key);
          if (denied !== undefined) [position, jumped] = [denied + PAST, true];
          if (++hidden >= hiddenLimit) {
            bounded = true;
            break walk;
          }
          if (jumped) break;
          continue;
        }
        const commonPrefix = rollUp(info.key, prefix, delimiter);
        if (commonPrefix === undefined) {
          entries.push({ key: info.key, info });
        } else {
          // The rest of the prefix adds nothing: jump past it. A Deny on `s3:prefix` may still
          // refuse to show it.
          if (visible(commonPrefix, "prefix")) entries.push({ key: commonPrefix });
          shownPrefix = commonPrefix;
          [position, jumped] = [commonPrefix + PAST, true];
        }
        if (entries.length >= want) break walk;
        if (jumped) break;
      }
      if (jumped && delimiter !== "") batch = small;
      if (!jumped && (!page.isTruncated || page.objects.length === 0)) break;
    }
  }
  const shown = entries.slice(0, maxKeys);
  const objects = shown.filter((e) => e.info !== undefined).map((e) => e.info!);
  const commonPrefixes = shown.filter((e) => e.info === undefined).map((e) => e.key);
  if (entries.length > maxKeys) {
    return { objects, commonPrefixes, isTruncated: true, nextStartAfter: shown.at(-1)!.key };
  }
  if (bounded) {
    return {
      objects,
      commonPrefixes,
      isTruncated: true,
      nextStartAfter: position,
      nextSealed: true,
    };
  }
  return { objects, commonPrefixes, isTruncated: false };
}
