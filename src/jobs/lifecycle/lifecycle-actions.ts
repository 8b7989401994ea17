/**
 * What a lifecycle run does to one object, through the object service in use (each bucket's
 * compression and encryption apply; the observers — usage counters, the outbox — hear it):
 *
 * - `expireObject`: deletes the key only if it is still the object the run decided on (same ETag
 *   and size) and, for expiry, still old enough by its own HEAD, judged under the key lock: a
 *   version written after the listing is never removed.
 * - `transitionObject`: copy-first. Copies to the destination (the copy re-reads the source and
 *   refuses a body whose SHA-256 or length differs from the source's record), HEADs the
 *   destination and compares size and SHA-256 (the ETag when a side has no SHA-256), and only
 *   then, with `delete_source_after_success`, deletes the source if it is still the version
 *   copied. Any failure before that leaves the source untouched.
 *
 * Each returns whether it acted; false means the object changed or went meanwhile (skipped, the
 * next run decides again). Errors throw (a per-object failure for the run).
 *
 * A removal's events (`ObjectDeleted`, `LifecycleExpired`) are journaled before the removal,
 * under the key lock (src/events/outbox-writer.ts): a run killed at any point leaves no removed
 * object without its events. Other events are awaited until committed before the next step.
 */
import { deletedEvent, type ObjectEvent } from "../../events/mod.ts";
import { SvcError } from "../../lib/mod.ts";
import type { WriteContext } from "../../objects/mod.ts";
import type { ObjectInfo } from "../../storage/mod.ts";
import type { RuleEnv } from "../rules/rule-env.ts";
import { expiredEvent, LIFECYCLE_WRITE, transitionedEvent } from "./lifecycle-events.ts";
import { destinationKey, type LifecyclePlan } from "./lifecycle-plan.ts";

/** The source changed between the listing and the copy. */
class ChangedMeanwhile extends Error {}

function sameVersion(a: ObjectInfo, b: ObjectInfo): boolean {
  return a.meta.etag === b.meta.etag && a.meta.size === b.meta.size;
}

/**
 * Removes `key` while `still` accepts it, its events (`ObjectDeleted` and `expired` of the object
 * removed) journaled first when the outbox can; else recorded after. Whether it removed.
 */
async function removeRecorded(
  env: RuleEnv,
  bucket: string,
  key: string,
  still: (current: ObjectInfo) => boolean,
  expired: (removed: ObjectInfo) => ObjectEvent,
): Promise<boolean> {
  const context: WriteContext = { ...LIFECYCLE_WRITE };
  let removed: ObjectInfo | null = null;
  const deleted = await env.objects().deleteIf(bucket, key, async (current) => {
    if (!still(current)) return false;
    removed = { ...current, key };
    context.journal = await env.journalRemoval?.(
      { bucket, key, etag: current.meta.etag },
      [deletedEvent(bucket, removed, LIFECYCLE_WRITE), expired(removed)],
    );
    return true;
  }, context);
  if (!deleted || removed === null) {
    if (context.journal !== undefined) await env.dropJournal?.(context.journal);
    return false;
  }
  if (context.journal === undefined) await env.recordEvent(expired(removed));
  return true;
}

export async function expireObject(
  env: RuleEnv,
  plan: LifecyclePlan,
  listed: ObjectInfo,
  now: number,
): Promise<boolean> {
  const action = plan.action === "retain-newest" ? "retain-newest" : "expire";
  return await removeRecorded(env, plan.bucket, listed.key, (current) => {
    if (!sameVersion(current, listed)) return false;
    const age = now - current.meta.lastModified;
    return plan.expireAfterMs === null || age >= plan.expireAfterMs;
  }, (removed) => expiredEvent(plan, removed, action, now));
}

export async function transitionObject(
  env: RuleEnv,
  plan: LifecyclePlan,
  listed: ObjectInfo,
  now: number,
  signal: AbortSignal,
): Promise<boolean> {
  const transition = plan.transition!;
  const target = { bucket: transition.bucket, key: destinationKey(plan, listed.key) };
  let source: ObjectInfo | null = null;
  try {
    await env.objects().copy({ bucket: plan.bucket, key: listed.key }, target, {
      metadata: null,
      sourceCheck: (info) => {
        if (!sameVersion(info, listed)) throw new ChangedMeanwhile();
        source = info;
      },
      signal,
      context: LIFECYCLE_WRITE,
    });
  } catch (err) {
    if (err instanceof ChangedMeanwhile) return false;
    if (err instanceof SvcError && err.code === "NoSuchKey") return false;
    throw err;
  }
  const copied = source as ObjectInfo | null;
  if (copied === null) throw new Error(`The copy of "${listed.key}" never read its source`);
  const head = await env.objects().head(target.bucket, target.key);
  const shaKnown = copied.meta.sha256 !== "" && head.meta.sha256 !== "";
  if (
    head.meta.size !== copied.meta.size ||
    (shaKnown ? head.meta.sha256 !== copied.meta.sha256 : head.meta.etag !== copied.meta.etag)
  ) {
    throw new Error(
      `The copy at "${target.bucket}/${target.key}" failed verification (size ${head.meta.size}` +
        ` of ${copied.meta.size}, sha256 ${head.meta.sha256 || "unknown"}); the source is kept`,
    );
  }
  await env.recordEvent(transitionedEvent(plan, copied, target, head.meta.size));
  if (!transition.deleteSource) return true;
  // A source rewritten after the copy stays: the destination holds the older version only.
  await removeRecorded(
    env,
    plan.bucket,
    listed.key,
    (current) => sameVersion(current, copied),
    () => expiredEvent(plan, copied, "transition-source-delete", now),
  );
  return true;
}
