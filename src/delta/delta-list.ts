/**
 * One logical listing page of a compressed bucket: stored names mapped to logical keys (see
 * layout.ts), `reference.bin` hidden, and a key stored both ways (an overwrite that changed kind,
 * before its cleanup) shown once, as its later version. Entries are emitted only once no later
 * stored name can sort before them, so pagination is exact for any page size.
 *
 * Cost is O(page): the only stored names after an inner page that could still sort before its
 * keys are a few `p.delta` names (blockingDeltaNames), looked up directly; once they are, every
 * key seen is settled (isSettled holds for all of them). Waiting for the listing to pass them
 * instead could mean reading the whole subtree (`x/1.delta` sorts after every `x/1.0.<n>/…`).
 * Inner pages are sized from the hidden-to-shown ratio seen so far (a deltaspace per key hides
 * one `reference.bin` per key), so a page reads about what it shows.
 *
 * Caveats: common prefixes come from the inner backend, which is exact for the delimiter "/" (a
 * deltaspace never spans a "/"). With another delimiter a delta's stored name can roll up where
 * its logical key would not (`x` stored as `x.delta` with delimiter "." reports prefix `x.`
 * instead of object `x`); S3 clients use "/" in practice.
 *
 * Group baselines and markers (`.dg/…`) never show, nor does the common prefix `.dg/`: a listing
 * that enters that range jumps past it (`.dg/` names are svc's own, hex after the prefix).
 */

import type { Backend, ListOptions, ListPage, ObjectInfo } from "../storage/mod.ts";
import {
  blockingDeltaNames,
  DELTA_SUFFIX,
  GROUP_PREFIX,
  REFERENCE_NAME,
  sortUtf8,
  toLogicalEntries,
} from "./layout.ts";
import { commonPrefixOf, compareUtf8 } from "../lib/mod.ts";

/** A startAfter past every `.dg/<hex id>/…` name and before `.dg0`. */
const PAST_GROUPS = `${GROUP_PREFIX}\u{10FFFF}`;

/** Stored names a logical listing never shows; the inner backend may skip them (ListOptions). */
const BASELINE_NAMES: ReadonlySet<string> = new Set([REFERENCE_NAME]);

export async function listLogicalPage(
  inner: Backend,
  bucket: string,
  options: ListOptions,
  innerPageKeys: number,
): Promise<ListPage> {
  const { prefix, delimiter, maxKeys } = options;
  const page: ListPage = { objects: [], commonPrefixes: [], isTruncated: false };
  if (maxKeys < 1 || prefix.startsWith(GROUP_PREFIX)) return page;
  // Logical entries seen so far, by key; a common prefix is an entry without info.
  const pending = new Map<string, ObjectInfo | null>();
  const add = (info: ObjectInfo) => {
    const previous = pending.get(info.key);
    if (previous && previous.meta.lastModified >= info.meta.lastModified) return;
    pending.set(info.key, info);
  };
  // Keys p whose stored `p.delta` was looked up directly (see blockingDeltaNames).
  const resolved = new Set<string>();
  let innerAfter = options.startAfter;
  let exhausted = false;
  let innerSeen = 0;
  // One entry more than the page, to know whether it is truncated.
  while (!exhausted && pending.size <= maxKeys) {
    const missing = maxKeys + 1 - pending.size;
    const ratio = pending.size === 0 ? 1 : Math.max(1, innerSeen / pending.size);
    const stored = await inner.listObjects(bucket, {
      prefix,
      delimiter,
      startAfter: innerAfter,
      maxKeys: Math.min(innerPageKeys, Math.ceil(missing * ratio) + 1),
      omitBaseNames: BASELINE_NAMES,
    });
    innerSeen += stored.objects.length + stored.commonPrefixes.length;
    const logical = toLogicalEntries(stored.objects, { prefix, startAfter: options.startAfter });
    for (const info of logical) add(info);
    for (const common of stored.commonPrefixes) {
      if (!pending.has(common) && !common.startsWith(GROUP_PREFIX)) pending.set(common, null);
    }
    exhausted = !stored.isTruncated || stored.nextStartAfter === undefined;
    innerAfter = stored.nextStartAfter;
    if (exhausted) break;
    if (innerAfter!.startsWith(GROUP_PREFIX)) innerAfter = PAST_GROUPS;
    else await resolveBlockingDeltas(innerAfter!);
  }
  const sorted = sortUtf8([...pending.keys()]);
  const emitted = sorted.slice(0, maxKeys);
  for (const key of emitted) {
    const info = pending.get(key);
    if (info) page.objects.push(info);
    else page.commonPrefixes.push(key);
  }
  if (sorted.length > emitted.length || !exhausted) {
    page.isTruncated = true;
    page.nextStartAfter = emitted.at(-1);
  }
  return page;

  /** Looks up the few `p.delta` names after `lastStoredName` that could sort before it. */
  async function resolveBlockingDeltas(lastStoredName: string): Promise<void> {
    const wanted = blockingDeltaNames(lastStoredName).filter((p) => !resolved.has(p));
    const found = await Promise.all(
      wanted.map((p) => inner.headObject(bucket, p + DELTA_SUFFIX)),
    );
    for (const [i, p] of wanted.entries()) {
      resolved.add(p);
      const info = found[i];
      if (!info) continue;
      const entries = toLogicalEntries([{ ...info, key: p + DELTA_SUFFIX }], {
        prefix,
        startAfter: options.startAfter,
      });
      for (const entry of entries) {
        const common = delimiter ? commonPrefixOf(entry.key, prefix, delimiter) : undefined;
        if (common === undefined) add(entry);
        else if (
          !pending.has(common) &&
          (options.startAfter === undefined || compareUtf8(common, options.startAfter) > 0)
        ) pending.set(common, null);
      }
    }
  }
}

/**
 * The stored names of a bucket when every one of them is svc's own (a parent folder's
 * `reference.bin`, or a group's baseline or marker under `.dg/`); null as soon as anything else
 * turns up. A bucket left holding only these is empty to its clients, and DeleteBucket removes
 * them first.
 */
export async function onlyArtifacts(
  inner: Backend,
  bucket: string,
  pageKeys: number,
): Promise<string[] | null> {
  const artifacts: string[] = [];
  let startAfter: string | undefined;
  for (;;) {
    const page = await inner.listObjects(bucket, { prefix: "", startAfter, maxKeys: pageKeys });
    for (const info of page.objects) {
      const name = info.key;
      const baseline = name.slice(name.lastIndexOf("/") + 1) === REFERENCE_NAME;
      if (!baseline && !name.startsWith(GROUP_PREFIX)) return null;
      artifacts.push(name);
    }
    if (!page.isTruncated || page.nextStartAfter === undefined) return artifacts;
    startAfter = page.nextStartAfter;
  }
}
