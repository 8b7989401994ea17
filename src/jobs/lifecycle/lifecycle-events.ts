/**
 * The events lifecycle runs record themselves (SPEC Events 1), beside the `ObjectDeleted` /
 * `ObjectCreated` (operation `lifecycle`) the object service's observers record for the same
 * change: `LifecycleExpired` for every object a rule deleted, `LifecycleTransitioned` for every
 * verified copy of a transition.
 */
import { deletedEvent, type ObjectEvent } from "../../events/mod.ts";
import type { ObjectInfo } from "../../storage/mod.ts";
import type { WriteContext } from "../../objects/mod.ts";
import type { LifecyclePlan } from "./lifecycle-plan.ts";

/** What every lifecycle write tells the observers (no request, no principal). */
export const LIFECYCLE_WRITE: WriteContext = {
  operation: "lifecycle",
  principal: null,
  sourceIp: null,
  requestId: null,
};

function iso(ms: number): string {
  return new Date(ms).toISOString();
}

export function expiredEvent(
  plan: LifecyclePlan,
  info: ObjectInfo,
  action: "expire" | "retain-newest" | "transition-source-delete",
  now: number,
): ObjectEvent {
  return {
    ...deletedEvent(plan.bucket, info, LIFECYCLE_WRITE),
    kind: "LifecycleExpired",
    lifecycle: {
      rule: plan.name,
      action,
      object_created_at: iso(info.meta.lastModified),
      expiration_age_seconds: Math.max(0, Math.floor((now - info.meta.lastModified) / 1000)),
      expire_after: plan.expireAfter,
      content_length: info.meta.size,
    },
  };
}

export function transitionedEvent(
  plan: LifecyclePlan,
  source: ObjectInfo,
  destination: { bucket: string; key: string },
  copiedBytes: number,
): ObjectEvent {
  return {
    ...deletedEvent(plan.bucket, source, LIFECYCLE_WRITE),
    kind: "LifecycleTransitioned",
    lifecycle: {
      rule: plan.name,
      action: "transition",
      object_created_at: iso(source.meta.lastModified),
      content_length: source.meta.size,
      source_bucket: plan.bucket,
      source_key: source.key,
      destination_bucket: destination.bucket,
      destination_key: destination.key,
      copied_bytes: copiedBytes,
    },
  };
}
