/**
 * A lifecycle rule as a run needs it: its action in one shape, durations in milliseconds, and
 * where a transition puts each key. Built once per run from the validated config.
 */
import { type LifecycleRule, parseDuration } from "../../config/mod.ts";

/** The candidate action words of the run report. */
export type CandidateAction = "expire" | "transition" | "retain-newest";

export interface Transition {
  bucket: string;
  prefix: string;
  deleteSource: boolean;
}

export interface RetainNewest {
  count: number;
  minSizeBytes: number | null;
  minAgeMs: number | null;
  protectYoungerThanMs: number | null;
}

export interface LifecyclePlan {
  name: string;
  bucket: string;
  prefix: string;
  action: CandidateAction;
  /** Keys younger than this are skipped (expire and transition); null: no age limit. */
  expireAfterMs: number | null;
  /** The rule's `expire_after` as written (events). */
  expireAfter: string | null;
  batchSize: number;
  transition: Transition | null;
  retain: RetainNewest | null;
}

function durationMs(text: string | undefined): number | null {
  if (text === undefined) return null;
  const seconds = parseDuration(text);
  return seconds === null ? null : Math.round(seconds * 1000);
}

export function planOf(rule: LifecycleRule): LifecyclePlan {
  const base = {
    name: rule.name,
    bucket: rule.bucket,
    prefix: rule.prefix,
    batchSize: rule.batch_size,
    expireAfterMs: durationMs(rule.expire_after),
    expireAfter: rule.expire_after ?? null,
    transition: null,
    retain: null,
  };
  const action = rule.action;
  if (action === "delete") return { ...base, action: "expire" };
  if (action.type === "retain-newest") {
    // SPEC: `expire_after` does not apply to retain-newest.
    return {
      ...base,
      action: "retain-newest",
      expireAfterMs: null,
      expireAfter: null,
      retain: {
        count: action.count,
        minSizeBytes: action.qualify?.min_size_bytes ?? null,
        minAgeMs: durationMs(action.qualify?.min_age),
        protectYoungerThanMs: durationMs(action.protect_younger_than),
      },
    };
  }
  return {
    ...base,
    action: "transition",
    transition: {
      bucket: action.destination.bucket,
      // Like the job row's scope: without a destination prefix, keys keep the rule's prefix.
      prefix: action.destination.prefix ?? rule.prefix,
      deleteSource: action.delete_source_after_success,
    },
  };
}

/** Where a transition puts `key`: the destination prefix replaces the rule's prefix. */
export function destinationKey(plan: LifecyclePlan, key: string): string {
  return plan.transition!.prefix + key.slice(plan.prefix.length);
}

/**
 * A transition within one bucket whose destination lies below the rule's prefix would meet its
 * own copies later in the same walk (and again every run): those keys are skipped.
 */
export function isOwnDestination(plan: LifecyclePlan, key: string): boolean {
  const t = plan.transition;
  return t !== null && t.bucket === plan.bucket && t.prefix.length > plan.prefix.length &&
    key.startsWith(t.prefix);
}
