/**
 * A job's `progress` (SPEC "Job row"): the counters every kind reports and, beside them, the
 * figures an operator watches (docs/ARCHITECTURE.md "Jobs", progress fields):
 *
 *     {phase, objects_done, objects_failed, bytes_done,            // counters (always present)
 *      objects_total, bytes_total,                                 // null when not known
 *      percent, rate_bytes_per_sec, rate_objects_per_sec, eta_seconds}
 *
 * Maintenance workers count their bucket before they start (totals) and store the window rates
 * with every save (job-steps.ts). Rule runs (lifecycle, replication) keep their run counters in
 * `progress`; while a run goes, live-progress.ts has its figures, and a listing walk knows no
 * total, so its percent and ETA stay null. After a run ends the rates are its average over the
 * whole run (a window rate of a finished job would be the rate of its last seconds).
 */
import { etaSeconds, percentOf, type Rates } from "./progress-meter.ts";

/** Counters every kind reports; `phase` is kind-specific (`count`, `copy`, `verify`, …). */
export interface JobProgress {
  phase: string;
  objects_done: number;
  objects_failed: number;
  bytes_done: number;
  /** Objects the job has to go through; null (or absent, in rows older than it) when unknown. */
  objects_total?: number | null;
  bytes_total?: number | null;
  /** The window rates the worker measured at its last save (running jobs). */
  rate_bytes_per_sec?: number | null;
  rate_objects_per_sec?: number | null;
}

/** The `progress` object of a job row: every field present, null where unknown. */
export interface ProgressView extends Record<string, unknown> {
  phase: string;
  objects_done: number;
  objects_failed: number;
  bytes_done: number;
  objects_total: number | null;
  bytes_total: number | null;
  percent: number | null;
  rate_bytes_per_sec: number | null;
  rate_objects_per_sec: number | null;
  eta_seconds: number | null;
}

export function emptyProgress(phase: string): JobProgress {
  return {
    phase,
    objects_done: 0,
    objects_failed: 0,
    bytes_done: 0,
    objects_total: null,
    bytes_total: null,
    rate_bytes_per_sec: null,
    rate_objects_per_sec: null,
  };
}

/** What a row needs of its job to show the figures. */
export interface ProgressTimes {
  status: string;
  startedAt: number | null;
  finishedAt: number | null;
}

const numberOr = (value: unknown, fallback: number | null): number | null =>
  typeof value === "number" && Number.isFinite(value) ? value : fallback;

/**
 * The counters of a stored `progress`, whatever wrote it: a maintenance worker's fields, or a
 * rule run's counters (`objects_scanned` walked, `errors`, `bytes_affected`), kept as they are.
 */
export function countersOf(stored: Record<string, unknown>, status: string): JobProgress {
  return {
    phase: typeof stored.phase === "string"
      ? stored.phase
      : status === "idle"
      ? "idle"
      : status === "running"
      ? "run"
      : "done",
    objects_done: numberOr(stored.objects_done, numberOr(stored.objects_scanned, 0))!,
    objects_failed: numberOr(stored.objects_failed, numberOr(stored.errors, 0))!,
    bytes_done: numberOr(stored.bytes_done, numberOr(stored.bytes_affected, 0))!,
    objects_total: numberOr(stored.objects_total, null),
    bytes_total: numberOr(stored.bytes_total, null),
    rate_bytes_per_sec: numberOr(stored.rate_bytes_per_sec, null),
    rate_objects_per_sec: numberOr(stored.rate_objects_per_sec, null),
  };
}

/**
 * The row's `progress`: the stored fields (a rule's own counters stay, under their names) plus
 * the figures. `rates` overrides the stored ones (a live run measured them just now).
 */
export function progressView(
  stored: Record<string, unknown>,
  times: ProgressTimes,
  rates?: Rates | null,
): ProgressView {
  const counters = countersOf(stored, times.status);
  const processed = counters.objects_done + counters.objects_failed;
  const total = counters.objects_total ?? null;
  const ended = times.finishedAt !== null &&
    ["succeeded", "failed", "cancelled"].includes(times.status);
  let percent = percentOf(processed, total);
  let perSecObjects = rates?.objects_per_sec ?? counters.rate_objects_per_sec ?? null;
  let perSecBytes = rates?.bytes_per_sec ?? counters.rate_bytes_per_sec ?? null;
  let eta = etaSeconds(total === null ? null : total - processed, perSecObjects);
  if (ended) {
    // The whole run's average; nothing remains of a run that ended.
    const seconds = times.startedAt === null
      ? 0
      : Math.max(0, times.finishedAt! - times.startedAt) / 1000;
    perSecObjects = seconds > 0 ? Math.round((processed / seconds) * 100) / 100 : null;
    perSecBytes = seconds > 0 ? Math.round(counters.bytes_done / seconds) : null;
    eta = times.status === "succeeded" ? 0 : null;
    if (times.status === "succeeded" && total !== null) percent = 100;
  }
  return {
    ...stored,
    phase: counters.phase,
    objects_done: counters.objects_done,
    objects_failed: counters.objects_failed,
    bytes_done: counters.bytes_done,
    objects_total: total,
    bytes_total: counters.bytes_total ?? null,
    percent,
    rate_bytes_per_sec: perSecBytes,
    rate_objects_per_sec: perSecObjects,
    eta_seconds: eta,
  };
}
