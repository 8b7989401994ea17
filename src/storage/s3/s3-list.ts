/**
 * One listing page over ListObjectsV2, with exactly the filesystem backend's semantics
 * (src/storage/fs/listing/fs-walk.ts and fs-list-objects.ts):
 *
 * - UTF-8 byte order; objects and common prefixes merged into one sequence, `maxKeys` entries;
 * - `nextStartAfter` is the last key or common prefix returned, and `isTruncated` is exact (true
 *   only when another entry exists);
 * - a common prefix at or before `startAfter` is never reported again, nor any key below it: when
 *   the next page starts after the common prefix `a/`, keys `a/…` (which sort after `a/`) stay
 *   skipped. S3 itself would report `a/` again there, so such entries are filtered out, and one
 *   extra entry is requested per round to make up for it.
 *
 * Metadata: a listing entry carries size, ETag and time. Entries whose ETag has no `-` were
 * uploaded as plain PUTs of "listable" objects (s3-upload.ts), so size and ETag are the logical
 * ones and are trusted; other fields are defaults (no content type, user metadata or sha256).
 * Entries whose ETag has a `-` (multipart ETags, deltas, large objects) are HEADed, at most
 * `HEAD_CONCURRENCY` at once, for their real metadata; one deleted in between is left out.
 * Times are whole seconds everywhere (an HTTP Last-Modified has no milliseconds), so a HEAD and
 * a listing of the same object agree.
 */
import type { ListOptions, ListPage, ObjectInfo } from "../backend.ts";
import type { S3Client } from "./s3-client.ts";
import { metaFromListing } from "./s3-meta.ts";
import { type ListedObject, parseListObjects } from "./s3-xml.ts";
import { commonPrefixOf, compareUtf8, mapConcurrent } from "../../lib/mod.ts";

const HEAD_CONCURRENCY = 16;
/** The most entries one ListObjectsV2 request returns. */
const SERVER_PAGE_LIMIT = 1000;

type Entry = { kind: "object"; key: string; listed: ListedObject } | {
  kind: "prefix";
  key: string;
};

export async function listPage(
  client: S3Client,
  bucket: string,
  options: ListOptions,
  headObject: (key: string) => Promise<ObjectInfo | null>,
  /** HEAD every entry, not only those with a multipart ETag (see listingsNeedHeads). */
  headAll = false,
): Promise<ListPage> {
  const { prefix, maxKeys } = options;
  const delimiter = options.delimiter || undefined;
  const page: ListPage = { objects: [], commonPrefixes: [], isTruncated: false };
  if (maxKeys < 1) return page;
  const entries: Entry[] = [];
  let bound = options.startAfter;
  for (;;) {
    const response = await client.send({
      method: "GET",
      bucket,
      query: {
        "list-type": "2",
        delimiter,
        "encoding-type": "url",
        "max-keys": String(Math.min(SERVER_PAGE_LIMIT, maxKeys + 1 - entries.length)),
        prefix: prefix || undefined,
        "start-after": bound,
      },
      idempotent: true,
    });
    const listed = parseListObjects(response.text);
    const merged: Entry[] = [
      ...listed.objects.map((o): Entry => ({ kind: "object", key: o.key, listed: o })),
      ...listed.commonPrefixes.map((key): Entry => ({ kind: "prefix", key })),
    ].sort((a, b) => compareUtf8(a.key, b.key));
    for (const entry of merged) {
      if (!entry.key.startsWith(prefix)) continue;
      const rollUp = entry.kind === "prefix"
        ? entry.key
        : delimiter
        ? commonPrefixOf(entry.key, prefix, delimiter)
        : undefined;
      if (bound !== undefined) {
        if (compareUtf8(entry.key, bound) <= 0) continue;
        if (rollUp !== undefined && compareUtf8(rollUp, bound) <= 0) continue;
      }
      const last = entries[entries.length - 1];
      if (rollUp !== undefined) {
        // A server that did not roll a key up: report its common prefix, once.
        if (last?.kind === "prefix" && last.key === rollUp) continue;
        entries.push({ kind: "prefix", key: rollUp });
      } else {
        entries.push(entry);
      }
    }
    const lastMerged = merged[merged.length - 1]?.key;
    if (entries.length > maxKeys || !listed.isTruncated || lastMerged === undefined) break;
    if (bound !== undefined && compareUtf8(lastMerged, bound) <= 0) break; // no progress
    bound = lastMerged;
  }
  const taken = entries.slice(0, maxKeys);
  if (entries.length > maxKeys) {
    page.isTruncated = true;
    page.nextStartAfter = taken[taken.length - 1].key;
  }
  const infos = await mapConcurrent(taken, HEAD_CONCURRENCY, async (entry) => {
    if (entry.kind === "prefix") return null;
    const { key, size, etag } = entry.listed;
    const lastModified = wholeSeconds(entry.listed.lastModified);
    if (!headAll && !etag.includes("-")) {
      return { key, storedSize: size, meta: metaFromListing(size, etag, lastModified) };
    }
    const head = await headObject(key);
    return head && { key, storedSize: size, meta: { ...head.meta, lastModified } };
  });
  taken.forEach((entry, i) => {
    if (entry.kind === "prefix") page.commonPrefixes.push(entry.key);
    else if (infos[i]) page.objects.push(infos[i]!);
  });
  return page;
}

export function wholeSeconds(ms: number): number {
  return Math.floor(ms / 1000) * 1000;
}
