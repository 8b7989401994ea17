/**
 * The scrub's persisted state: the cursor (bucket + last stored name checked), counters, findings
 * and what orphan detection has gathered in the current bucket. Written atomically (temp, fsync,
 * rename, directory fsync) at most once a second while a run goes and at every bucket boundary,
 * stop and end, so a restart resumes from the last cursor written: the few objects checked after
 * it are checked again, and the counters and findings written with that cursor match it.
 */
import { writePrivateFile } from "../../lib/mod.ts";

export type ScrubRunState = "idle" | "running" | "stopped" | "finished" | "failed";

export type FindingKind =
  | "corrupt_object"
  | "corrupt_baseline"
  | "missing_baseline"
  | "unrebuildable"
  | "unreadable"
  | "orphan_baseline"
  | "orphan_marker"
  | "stale_delta"
  | "stale_passthrough";

export interface Finding {
  bucket: string;
  /** The logical key (or the artifact's stored name for baselines and markers). */
  key: string;
  stored_name: string;
  kind: FindingKind;
  detail: string;
  found_at: number;
}

export interface BucketProgress {
  state: "pending" | "scanning" | "done" | "failed";
  objects_checked: number;
  objects_ok: number;
  objects_failed: number;
  /** Objects whose metadata records no sha256 (read, not comparable). */
  objects_unchecked: number;
  baselines_checked: number;
  markers_checked: number;
  bytes_read: number;
  findings: number;
  error?: string;
  started_at?: number;
  finished_at?: number;
}

export interface ScrubState {
  version: 1;
  run_id: string;
  state: ScrubRunState;
  started_at: number;
  updated_at: number;
  finished_at?: number;
  started_by?: string;
  /** The one bucket asked for, or null for all buckets. */
  bucket_filter: string | null;
  buckets: string[];
  /** Where the next check starts: the bucket, and the last stored name done in it. */
  cursor: { bucket: string; after: string | null } | null;
  /** How many times the run was resumed after a restart. */
  resumes: number;
  bytes_per_sec: number;
  max_findings: number;
  per_bucket: Record<string, BucketProgress>;
  /** Oldest first, at most max_findings (the first ones found are kept). */
  findings: Finding[];
  findings_total: number;
  findings_dropped: number;
  /** Orphan detection in the cursor's bucket: deltaspaces deltas use, baselines seen. */
  open: { referenced: string[]; baselines: Record<string, string>; since: number };
  error?: string;
}

export function emptyProgress(): BucketProgress {
  return {
    state: "pending",
    objects_checked: 0,
    objects_ok: 0,
    objects_failed: 0,
    objects_unchecked: 0,
    baselines_checked: 0,
    markers_checked: 0,
    bytes_read: 0,
    findings: 0,
  };
}

export async function loadScrubState(path: string): Promise<ScrubState | null> {
  let text: string;
  try {
    text = await Deno.readTextFile(path);
  } catch (err) {
    if (err instanceof Deno.errors.NotFound) return null;
    throw err;
  }
  try {
    const state = JSON.parse(text) as ScrubState;
    return state?.version === 1 && typeof state.run_id === "string" ? state : null;
  } catch {
    return null; // a damaged file: the next start begins afresh
  }
}

export async function saveScrubState(path: string, state: ScrubState): Promise<void> {
  await writePrivateFile(path, JSON.stringify(state));
}
