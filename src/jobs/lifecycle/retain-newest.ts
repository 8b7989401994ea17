/**
 * retain-newest (SPEC "Lifecycle rule"): of the objects passing every `qualify` filter, the
 * newest `count` by created_at (Last-Modified; ties: the greater key counts as newer) are kept,
 * the rest deleted, except those younger than `protect_younger_than`, spared for this run and
 * never promoted into the keep set. Objects failing `qualify` are ignored (never counted, never
 * deleted). The ranking needs the whole candidate set: it is the one bounded thing a lifecycle
 * run holds in memory (key, time, size, ETag per candidate); beyond the cap the rule fails.
 */
import type { ObjectInfo } from "../../storage/mod.ts";
import type { RetainNewest } from "./lifecycle-plan.ts";

/** SPEC Limits: more candidates than this make the rule fail. */
export const RETAIN_NEWEST_CAP = 200_000;

export function qualifies(retain: RetainNewest, info: ObjectInfo, now: number): boolean {
  if (retain.minSizeBytes !== null && info.meta.size < retain.minSizeBytes) return false;
  if (retain.minAgeMs !== null && now - info.meta.lastModified < retain.minAgeMs) return false;
  return true;
}

/** Newest first: created_at descending, then key descending (UTF-16 order, stable). */
export function newestFirst(a: ObjectInfo, b: ObjectInfo): number {
  const byTime = b.meta.lastModified - a.meta.lastModified;
  if (byTime !== 0) return byTime;
  return a.key < b.key ? 1 : a.key > b.key ? -1 : 0;
}

export interface RetainDecision {
  /** The newest `count`. */
  keep: ObjectInfo[];
  /** Beyond the keep set and old enough: to delete, newest first. */
  remove: ObjectInfo[];
  /** Beyond the keep set but younger than `protect_younger_than`. */
  protect: ObjectInfo[];
}

/** Ranks the candidates (sorted in place) and splits them. */
export function decideRetain(
  retain: RetainNewest,
  candidates: ObjectInfo[],
  now: number,
): RetainDecision {
  candidates.sort(newestFirst);
  const keep = candidates.slice(0, retain.count);
  const remove: ObjectInfo[] = [];
  const protect: ObjectInfo[] = [];
  for (const info of candidates.slice(retain.count)) {
    const young = retain.protectYoungerThanMs !== null &&
      now - info.meta.lastModified < retain.protectYoungerThanMs;
    (young ? protect : remove).push(info);
  }
  return { keep, remove, protect };
}

const NO_FIELDS: Record<string, string> = Object.freeze({}) as Record<string, string>;

/** Only what the ranking and the delete need: a listing page's records carry more. */
export function slim(info: ObjectInfo): ObjectInfo {
  return {
    key: info.key,
    storedSize: info.storedSize,
    meta: {
      size: info.meta.size,
      etag: info.meta.etag,
      md5: "",
      sha256: "",
      contentType: "",
      userMeta: NO_FIELDS,
      headers: NO_FIELDS,
      lastModified: info.meta.lastModified,
      storage: info.meta.storage,
    },
  };
}
