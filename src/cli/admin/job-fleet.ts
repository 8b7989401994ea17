/**
 * What `svc admin jobs` shows of a fleet (docs/ARCHITECTURE.md "Admin in a fleet"): the holder of
 * a maintenance job another instance runs (its row's `held_by`), and the instance of each run of
 * a rule's history. Columns appear only when a row carries them, so a single instance's output is
 * unchanged. Pure, so it is unit-tested.
 */
import { humanDuration } from "./format.ts";

type Json = Record<string, unknown>;

/** `host-1a2b3c4d (heartbeat 2s ago)` for a job another instance runs, else null. */
export function holderText(job: Json, now: number): string | null {
  const held = job.held_by as { instance?: unknown; heartbeat_at?: unknown } | null | undefined;
  if (typeof held?.instance !== "string") return null;
  const at = typeof held.heartbeat_at === "string" ? Date.parse(held.heartbeat_at) : NaN;
  // Another instance's clock may run slightly ahead of this one: never a negative age.
  const age = Number.isFinite(at)
    ? ` (heartbeat ${humanDuration(Math.max(0, now - at) / 1000)} ago)`
    : "";
  return `${held.instance}${age}`;
}

/** Whether any row names an instance under `field` (then the table gets that column). */
export function anyHas(rows: Json[], field: "held_by" | "instance"): boolean {
  return rows.some((row) => row[field] !== undefined && row[field] !== null);
}
