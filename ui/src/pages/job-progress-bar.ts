/**
 * A job's progress as a bar and a line of words: percent, done of total (objects and bytes),
 * rate and ETA, from the row's `progress` (docs/ARCHITECTURE.md "Jobs"). A job that knows no
 * total (a rule's listing walk) shows an indeterminate bar while it runs and its counts; a
 * finished one a full bar when it succeeded.
 */
import { html } from "../html.ts";
import { formatBytes, formatCount, formatDuration, formatPercent, formatRate } from "../format.ts";

export interface JobProgressFields {
  phase?: string;
  objects_done?: number;
  objects_failed?: number;
  bytes_done?: number;
  objects_total?: number | null;
  bytes_total?: number | null;
  percent?: number | null;
  rate_bytes_per_sec?: number | null;
  rate_objects_per_sec?: number | null;
  eta_seconds?: number | null;
}

const ACTIVE = new Set(["queued", "running", "cancelling"]);

/** The words under the bar (also what a screen reader hears). */
export function progressWords(p: JobProgressFields, status: string): string {
  const parts: string[] = [];
  if (p.phase) parts.push(p.phase);
  if (typeof p.percent === "number") parts.push(formatPercent(p.percent));
  const done = (p.objects_done ?? 0) + (p.objects_failed ?? 0);
  parts.push(
    typeof p.objects_total === "number"
      ? `${formatCount(done)} of ${formatCount(p.objects_total)} objects`
      : `${formatCount(done)} objects`,
  );
  if (p.objects_failed) parts.push(`${formatCount(p.objects_failed)} failed`);
  parts.push(
    typeof p.bytes_total === "number"
      ? `${formatBytes(p.bytes_done ?? 0)} of ${formatBytes(p.bytes_total)}`
      : formatBytes(p.bytes_done ?? 0),
  );
  if (typeof p.rate_bytes_per_sec === "number" && (p.bytes_done ?? 0) > 0) {
    parts.push(formatRate(p.rate_bytes_per_sec));
  } else if (typeof p.rate_objects_per_sec === "number") {
    parts.push(`${formatCount(p.rate_objects_per_sec)} objects/s`);
  }
  if (ACTIVE.has(status) && typeof p.eta_seconds === "number") {
    parts.push(`ETA ${formatDuration(p.eta_seconds)}`);
  }
  return parts.join(" · ");
}

/** A native `<progress>` (like the upload panel's): indeterminate while a walk knows no total. */
export function JobProgressBar(
  { progress, status }: { progress: JobProgressFields | undefined; status: string },
) {
  const p = progress ?? {};
  const percent = typeof p.percent === "number"
    ? p.percent
    : status === "succeeded"
    ? 100
    : ACTIVE.has(status)
    ? undefined
    : 0;
  const words = progressWords(p, status);
  return html`
    <div class="job-progress" data-status=${status} data-percent=${p.percent ?? ""}>
      <progress max="100" value=${percent} aria-label=${words}></progress>
      <small class="progress-words">${words}</small>
    </div>
  `;
}
