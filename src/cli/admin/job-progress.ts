/**
 * How a job's progress reads: a bar on a terminal, one plain line otherwise. It reads whatever
 * the job row carries: totals, a percentage and an ETA when the server reports them
 * (`progress.total` / `objects_total`, `bytes_total`, `percent`, `eta_seconds`), else the
 * counters every job has (`objects_done`, `objects_failed`, `bytes_done`, `phase`). Pure, so it
 * is unit-tested.
 */
import { humanBytes, humanDuration } from "./format.ts";

type Json = Record<string, unknown>;

export interface ProgressView {
  phase?: string;
  done?: number;
  total?: number;
  failed?: number;
  bytesDone?: number;
  bytesTotal?: number;
  /** 0–100, given by the server or derived from done/total. */
  percent?: number;
  etaSeconds?: number;
}

/** Statuses of a job still at work; `follow` waits while the job is in one. */
export const ACTIVE_STATUSES: ReadonlySet<string> = new Set(["queued", "running", "cancelling"]);
/** Statuses `follow` exits 1 on. */
export const FAILED_STATUSES: ReadonlySet<string> = new Set(["failed", "cancelled"]);

const num = (value: unknown): number | undefined =>
  typeof value === "number" && Number.isFinite(value) ? value : undefined;

const first = (record: Json, names: string[]): number | undefined => {
  for (const name of names) {
    const value = num(record[name]);
    if (value !== undefined) return value;
  }
  return undefined;
};

/** The progress of a job row, whichever fields it has. */
export function progressView(job: Json): ProgressView {
  const progress = (job.progress && typeof job.progress === "object" ? job.progress : {}) as Json;
  const view: ProgressView = {
    phase: typeof progress.phase === "string" ? progress.phase : undefined,
    done: first(progress, ["objects_done", "done", "processed"]),
    total: first(progress, ["total", "objects_total", "total_objects"]),
    failed: first(progress, ["objects_failed", "failed"]),
    bytesDone: first(progress, ["bytes_done"]),
    bytesTotal: first(progress, ["bytes_total", "total_bytes"]),
    etaSeconds: first(progress, ["eta_seconds", "eta_secs", "eta"]),
  };
  let percent = first(progress, ["percent", "percentage"]);
  if (percent === undefined && view.total && view.done !== undefined) {
    percent = (view.done / view.total) * 100;
  } else if (percent === undefined && view.bytesTotal && view.bytesDone !== undefined) {
    percent = (view.bytesDone / view.bytesTotal) * 100;
  }
  if (percent !== undefined) view.percent = Math.min(100, Math.max(0, percent));
  return view;
}

/** `[#####-----]` of `width` cells (brackets included). */
export function renderBar(percent: number, width: number): string {
  const inner = Math.max(1, width - 2);
  const filled = Math.round((Math.min(100, Math.max(0, percent)) / 100) * inner);
  return `[${"#".repeat(filled)}${"-".repeat(inner - filled)}]`;
}

/** The counters as text: `52% 120/230 objects, 3 failed, 12.0 MiB/40.0 MiB, eta 3m05s`. */
export function progressText(view: ProgressView): string {
  const parts: string[] = [];
  if (view.percent !== undefined) parts.push(`${Math.floor(view.percent)}%`);
  if (view.done !== undefined) {
    parts.push(`${view.done}${view.total !== undefined ? `/${view.total}` : ""} objects`);
  }
  if (view.failed) parts.push(`${view.failed} failed`);
  if (view.bytesDone !== undefined) {
    parts.push(
      `${humanBytes(view.bytesDone)}${
        view.bytesTotal !== undefined ? `/${humanBytes(view.bytesTotal)}` : ""
      }`,
    );
  }
  if (view.etaSeconds !== undefined) parts.push(`eta ${humanDuration(view.etaSeconds)}`);
  return parts.join(", ");
}

/** `maintenance:3 running (copy)`: who and where the job is. */
export function statusText(job: Json): string {
  const view = progressView(job);
  const paused = job.paused === true ? " paused" : "";
  return `${job.id} ${job.status}${paused}${view.phase ? ` (${view.phase})` : ""}`;
}

/**
 * One line for a job: with a bar filling what `columns` leaves (a terminal), or without
 * (`columns` undefined: pipes and files). No bar without a percentage to draw.
 */
export function progressLine(job: Json, columns?: number): string {
  const view = progressView(job);
  const head = statusText(job);
  const counters = progressText(view);
  if (columns === undefined || view.percent === undefined) {
    return counters ? `${head} ${counters}` : head;
  }
  const room = columns - head.length - counters.length - 3;
  if (room < 12) return `${head} ${counters}`.slice(0, Math.max(1, columns - 1));
  return `${head} ${renderBar(view.percent, Math.min(42, room))} ${counters}`;
}
