/**
 * The unified jobs surface (SPEC "Job row", "Job status values"): the kinds, the actions each
 * kind supports, the status values and the transitions between them. Replication and lifecycle
 * join as further kinds; maintenance one-offs (bucket re-encrypt, bucket migrate) are built now.
 */

import type { JobProgress } from "./job-progress.ts";
import { type ProgressView, progressView } from "./job-progress.ts";
import { liveProgress } from "./live-progress.ts";

export const JOB_KINDS = ["replication", "lifecycle", "maintenance"] as const;
export type JobKind = typeof JOB_KINDS[number];

export const JOB_ACTIONS = [
  "pause",
  "resume",
  "run-now",
  "preview",
  "verify",
  "kill",
  "cancel",
  "delete",
] as const;
export type JobAction = typeof JOB_ACTIONS[number];

/** SPEC's matrix: an action outside it answers 405 listing the supported ones. */
export const KIND_ACTIONS: Readonly<Record<JobKind, readonly JobAction[]>> = {
  replication: ["pause", "resume", "run-now", "verify", "kill", "delete"],
  lifecycle: ["pause", "resume", "run-now", "preview", "delete"],
  maintenance: ["cancel"],
};

export const JOB_STATUSES = [
  "idle",
  "queued",
  "running",
  "cancelling",
  "succeeded",
  "failed",
  "cancelled",
] as const;
export type JobStatus = typeof JOB_STATUSES[number];

/** Statuses after which a maintenance one-off never runs again. */
export const TERMINAL: ReadonlySet<JobStatus> = new Set(["succeeded", "failed", "cancelled"]);
/** Statuses of a job that holds its bucket (write gate engaged, no second job allowed). */
export const ACTIVE: ReadonlySet<JobStatus> = new Set(["queued", "running", "cancelling"]);

/**
 * Allowed transitions. `queued` is reachable from `running` and `cancelling` only through a
 * restart (a job left by a dead process is re-queued); recurring kinds go back to `idle` or
 * `queued` after a run ends, a one-off never leaves a terminal status.
 */
const TRANSITIONS: Readonly<Record<JobStatus, readonly JobStatus[]>> = {
  idle: ["queued", "running"],
  queued: ["running", "cancelling", "cancelled"],
  running: ["succeeded", "failed", "cancelling", "queued"],
  // A cancel that arrives as the work ends loses: the job finished.
  cancelling: ["cancelled", "failed", "succeeded", "queued"],
  succeeded: ["idle", "queued"],
  failed: ["idle", "queued"],
  cancelled: ["idle", "queued"],
};

export function canTransition(kind: JobKind, from: JobStatus, to: JobStatus): boolean {
  if (kind === "maintenance" && TERMINAL.has(from)) return false;
  return TRANSITIONS[from].includes(to);
}

/** Where a job works: a bucket (and prefix), and for a migration the target backend. */
export interface JobScope {
  bucket: string;
  prefix: string;
  /** Migration target backend; replication destination later. */
  target?: string;
}

export { emptyProgress } from "./job-progress.ts";
export type { JobProgress } from "./job-progress.ts";

/** A job as the store holds it. `state` is the kind's private resume state. */
export interface JobRecord<State = Record<string, unknown>> {
  id: string;
  kind: JobKind;
  /** The work within the kind: `reencrypt` or `migrate` for maintenance. */
  type: string;
  scope: JobScope;
  status: JobStatus;
  paused: boolean;
  cancelRequested: boolean;
  progress: JobProgress;
  state: State;
  error: string | null;
  createdBy: string;
  /** Unix ms. */
  createdAt: number;
  startedAt: number | null;
  finishedAt: number | null;
  updatedAt: number;
}

export interface RunRecord {
  id: number | string;
  jobId: string;
  triggeredBy: string;
  status: JobStatus;
  counters: Record<string, number>;
  error: string | null;
  startedAt: number;
  finishedAt: number | null;
}

export interface FailureRecord {
  id: number;
  jobId: string;
  runId: number | null;
  bucket: string;
  key: string;
  message: string;
  occurredAt: number;
}

/** Parses `maintenance:<n>` (and the other kinds' ids); null when it is not a job id. */
export function parseJobId(id: string): { kind: JobKind; name: string } | null {
  const colon = id.indexOf(":");
  if (colon <= 0) return null;
  const kind = id.slice(0, colon) as JobKind;
  const name = id.slice(colon + 1);
  if (!JOB_KINDS.includes(kind) || name === "") return null;
  if (kind === "maintenance" && !/^[1-9]\d{0,15}$/.test(name)) return null;
  return { kind, name };
}

/**
 * The row's progress: the live counters and rates of a job running in this process, else the
 * stored ones. A rule row reads `idle` or its last outcome while a run goes (a preview changes
 * no status): it shows as running.
 */
function rowProgress(job: JobRecord): ProgressView {
  const live = liveProgress(job.id);
  if (live === null) return progressView(job.progress as unknown as Record<string, unknown>, job);
  return progressView(
    live.progress as unknown as Record<string, unknown>,
    {
      status: job.kind === "maintenance" ? job.status : "running",
      startedAt: job.startedAt,
      finishedAt: null,
    },
    live.rates,
  );
}

const iso = (ms: number | null) => ms === null ? null : new Date(ms).toISOString();

/**
 * The normalized row of `GET /jobs` (field names documented in docs/ARCHITECTURE.md, "Jobs").
 * A maintenance one-off's `last_run` is its single run, synthesized from the job.
 */
export function jobRow(job: JobRecord): Record<string, unknown> {
  return {
    id: job.id,
    kind: job.kind,
    type: job.type,
    scope: job.scope,
    status: job.status,
    paused: job.paused,
    progress: rowProgress(job),
    last_run: job.kind === "maintenance" ? runRow(synthesizedRun(job)) : null,
    actions: KIND_ACTIONS[job.kind],
    error: job.error,
    created_by: job.createdBy,
    created_at: iso(job.createdAt),
  };
}

/** The one run of a maintenance one-off (`null` before it started). */
export function synthesizedRun(job: JobRecord): RunRecord | null {
  if (job.startedAt === null) return null;
  // The run's counters are the numbers of its progress (totals once counted); a rate is a
  // reading of the moment, not a counter.
  const counters: Record<string, number> = {};
  for (const [name, value] of Object.entries(job.progress)) {
    if (name !== "phase" && !name.startsWith("rate_") && typeof value === "number") {
      counters[name] = value;
    }
  }
  return {
    id: `${job.id}/1`,
    jobId: job.id,
    triggeredBy: "admin",
    status: job.status,
    counters,
    error: job.error,
    startedAt: job.startedAt,
    finishedAt: job.finishedAt,
  };
}

export function runRow(run: RunRecord | null): Record<string, unknown> | null {
  if (run === null) return null;
  return {
    id: run.id,
    job_id: run.jobId,
    triggered_by: run.triggeredBy,
    status: run.status,
    counters: run.counters,
    error: run.error,
    started_at: iso(run.startedAt),
    finished_at: iso(run.finishedAt),
  };
}

export function failureRow(failure: FailureRecord): Record<string, unknown> {
  return {
    id: failure.id,
    job_id: failure.jobId,
    run_id: failure.runId,
    bucket: failure.bucket,
    object_key: failure.key,
    error_message: failure.message,
    occurred_at: iso(failure.occurredAt),
  };
}
