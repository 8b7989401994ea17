/**
 * The replication planner: what to do with one key, given what the source and the destination
 * hold. The full reconcile and the event consumer both decide through it.
 *
 * - Source present, destination absent: copy.
 * - Both present: the rule's conflict policy decides. `newer-wins` copies only when the source
 *   is strictly newer (a tie skips); `content-diff` copies when the sizes differ or both logical
 *   SHA-256 values are known and differ; `skip-if-dest-exists` never copies onto an existing
 *   object.
 * - Source absent, destination present: delete when the rule replicates deletes (the caller
 *   confirms the absence with a source HEAD first), else skip.
 *
 * Times are compared in whole seconds when either side is an S3 backend: an HTTP Last-Modified
 * has no milliseconds, so a fresh copy of an object written at 12:00:00.700 reads back as
 * 12:00:00 there and would otherwise look older than its source forever. A tie in whole seconds
 * still copies when size or a digest both sides know differs (an overwrite within the second of
 * the last copy).
 */
import type { ReplicationRule } from "../../config/mod.ts";
import type { ObjectMeta } from "../../storage/mod.ts";

export type ConflictPolicy = ReplicationRule["conflict"];

/** What a side holds, as far as the planner looks. */
export type SideMeta = Pick<ObjectMeta, "size" | "sha256" | "lastModified"> & {
  /** Hex MD5 of the body; "" when unknown (multipart). */
  md5?: string;
};

export interface Plan {
  action: "copy" | "skip" | "delete";
  /** Why, in a few words (previews and tests read it). */
  reason: string;
}

export interface PlanOptions {
  conflict: ConflictPolicy;
  replicateDeletes: boolean;
  /** Compare times in whole seconds (an S3 backend on either side). */
  wholeSeconds: boolean;
}

export function plan(
  source: SideMeta | null,
  destination: SideMeta | null,
  options: PlanOptions,
): Plan {
  if (source === null) {
    if (destination === null) return { action: "skip", reason: "absent on both sides" };
    return options.replicateDeletes
      ? { action: "delete", reason: "absent at the source" }
      : { action: "skip", reason: "absent at the source; deletes are not replicated" };
  }
  if (destination === null) return { action: "copy", reason: "absent at the destination" };
  switch (options.conflict) {
    case "skip-if-dest-exists":
      return { action: "skip", reason: "the destination exists" };
    case "content-diff":
      if (source.size !== destination.size) return { action: "copy", reason: "sizes differ" };
      if (source.sha256 && destination.sha256 && source.sha256 !== destination.sha256) {
        return { action: "copy", reason: "contents differ" };
      }
      return { action: "skip", reason: "same content" };
    case "newer-wins":
    default: {
      const time = (ms: number) => options.wholeSeconds ? Math.floor(ms / 1000) : ms;
      const [s, d] = [time(source.lastModified), time(destination.lastModified)];
      if (s > d) return { action: "copy", reason: "the source is newer" };
      // Whole seconds can hide an overwrite made in the same second as the last copy: a tie
      // there copies when the contents are known to differ.
      if (s === d && options.wholeSeconds && knownDifferent(source, destination)) {
        return { action: "copy", reason: "same second, different content" };
      }
      return { action: "skip", reason: "the destination is as new or newer" };
    }
  }
}

/** Whether the two bodies differ as far as size and the digests both sides know tell. */
function knownDifferent(a: SideMeta, b: SideMeta): boolean {
  if (a.size !== b.size) return true;
  if (a.sha256 && b.sha256) return a.sha256 !== b.sha256;
  return Boolean(a.md5 && b.md5 && a.md5 !== b.md5);
}

/** Whether the policy needs more than existence to decide about a key on both sides. */
export function needsDetail(conflict: ConflictPolicy): boolean {
  return conflict !== "skip-if-dest-exists";
}

/**
 * Whether the listing's metadata suffices for the policy: content-diff needs SHA-256 values,
 * which an S3 backend's listing lacks (it carries size, ETag and time only).
 */
export function listingSuffices(conflict: ConflictPolicy, meta: SideMeta): boolean {
  return conflict !== "content-diff" || meta.sha256 !== "";
}
