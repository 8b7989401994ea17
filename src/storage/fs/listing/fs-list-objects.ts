/**
 * One page of ListObjects over a bucket directory: the walk's candidates (fs-walk.ts), verified
 * (listed-objects.ts) and rolled up into common prefixes by the delimiter.
 */

import type { ListOptions, ListPage, ObjectInfo } from "../../backend.ts";
import { commonPrefixOf, compareUtf8 } from "../../../lib/mod.ts";
import type { DirectoryListings } from "./fs-sorted-dir.ts";
import { walkKeys } from "./fs-walk.ts";
import { verifyCandidateSync } from "./listed-objects.ts";

/**
 * The page of `options` in the bucket at `bucketDir` (which the caller checked exists), its
 * directories read through `listings` (the root's listing cache).
 */
export function listObjectsSync(
  listings: DirectoryListings,
  bucketDir: string,
  options: ListOptions,
): ListPage {
  const { prefix, startAfter, maxKeys } = options;
  const delimiter = options.delimiter || undefined;
  const page: ListPage = { objects: [], commonPrefixes: [], isTruncated: false };
  if (maxKeys < 1) return page;
  const skip: { prefix?: string } = {};
  // With "/" a directory is exactly a common prefix, so it is reported without reading it.
  const walk = walkKeys(listings, bucketDir, {
    prefix,
    startAfter,
    rollUpDirectories: delimiter === "/",
    skip,
    omitBaseNames: options.omitBaseNames,
  });
  let last: string | undefined;
  for (const item of walk) {
    let commonPrefix: string | undefined;
    let info: ObjectInfo | null = null;
    if (item.kind === "prefix") {
      commonPrefix = item.key;
    } else {
      info = verifyCandidateSync(item);
      if (!info) continue;
      commonPrefix = delimiter ? commonPrefixOf(item.key, prefix, delimiter) : undefined;
      if (commonPrefix !== undefined) {
        skip.prefix = commonPrefix;
        // A common prefix at or before startAfter was returned by an earlier page (or lies
        // before the requested start): its keys are skipped, never reported again.
        if (startAfter !== undefined && compareUtf8(commonPrefix, startAfter) <= 0) continue;
      }
    }
    if (commonPrefix !== undefined && commonPrefix === last) continue;
    if (page.objects.length + page.commonPrefixes.length === maxKeys) {
      page.isTruncated = true;
      page.nextStartAfter = last;
      break;
    }
    if (commonPrefix !== undefined) page.commonPrefixes.push(commonPrefix);
    else if (info) page.objects.push(info);
    last = commonPrefix ?? item.key;
  }
  return page;
}
