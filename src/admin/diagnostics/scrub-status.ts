/**
 * The JSON of `GET /diagnostics/scan/status`: the run, totals over its buckets, each bucket's
 * progress (the all-buckets map), and the findings newest first. With a bucket: that bucket's
 * progress and findings only.
 */
import type { BucketProgress, ScrubState } from "../../objects/mod.ts";

const COUNTERS = [
  "objects_checked",
  "objects_ok",
  "objects_failed",
  "objects_unchecked",
  "baselines_checked",
  "markers_checked",
  "bytes_read",
  "findings",
] as const;

function totalsOf(progress: BucketProgress[]): Record<string, number> {
  const totals: Record<string, number> = {};
  for (const name of COUNTERS) totals[name] = progress.reduce((sum, p) => sum + p[name], 0);
  return totals;
}

export function scrubStatus(
  state: ScrubState | null,
  running: boolean,
  bucket?: string,
  findingsLimit = Infinity,
): Record<string, unknown> {
  if (state === null) {
    return {
      state: "idle",
      running: false,
      ...(bucket !== undefined ? { bucket, progress: null } : { buckets: {} }),
      totals: totalsOf([]),
      findings: [],
      findings_total: 0,
      findings_dropped: 0,
    };
  }
  const findings = state.findings
    .filter((f) => bucket === undefined || f.bucket === bucket)
    .slice(-findingsLimit)
    .reverse();
  const head = {
    state: state.state,
    running,
    run_id: state.run_id,
    started_at: state.started_at,
    updated_at: state.updated_at,
    finished_at: state.finished_at ?? null,
    started_by: state.started_by ?? null,
    bucket_filter: state.bucket_filter,
    resumes: state.resumes,
    bytes_per_sec: state.bytes_per_sec,
    max_findings: state.max_findings,
    cursor: state.cursor,
    buckets_total: state.buckets.length,
    buckets_done: state.buckets.filter((b) => state.per_bucket[b]?.state === "done").length,
    ...(state.error ? { error: state.error } : {}),
  };
  if (bucket !== undefined) {
    const progress = state.per_bucket[bucket] ?? null;
    return {
      ...head,
      bucket,
      progress,
      totals: totalsOf(progress ? [progress] : []),
      findings,
      findings_total: progress?.findings ?? 0,
    };
  }
  return {
    ...head,
    totals: totalsOf(Object.values(state.per_bucket)),
    buckets: state.per_bucket,
    findings,
    findings_total: state.findings_total,
    findings_dropped: state.findings_dropped,
  };
}

const encoder = new TextEncoder();

/**
 * `GET /diagnostics/scan/stream`: a `progress` event with the status (its newest 20 findings)
 * at once and then every `intervalMs` while it changes, a heartbeat comment every 15 s, until
 * the client goes. Only snapshots are sent, so a slow reader costs nothing: a tick whose event
 * the reader has not taken yet is skipped.
 */
export function scrubEventStream(
  status: () => Record<string, unknown>,
  intervalMs: number,
  signal?: AbortSignal,
): ReadableStream<Uint8Array> {
  let timer: ReturnType<typeof setInterval> | undefined;
  let last = "";
  let quietTicks = 0;
  let id = 0;
  const stop = () => clearInterval(timer);
  return new ReadableStream<Uint8Array>({
    start(controller) {
      const tick = () => {
        if ((controller.desiredSize ?? 0) <= 0) return;
        const text = JSON.stringify(status());
        if (text === last) {
          if (++quietTicks * intervalMs >= 15_000) {
            quietTicks = 0;
            controller.enqueue(encoder.encode(": heartbeat\n\n"));
          }
          return;
        }
        last = text;
        quietTicks = 0;
        controller.enqueue(encoder.encode(`id: ${++id}\nevent: progress\ndata: ${text}\n\n`));
      };
      const end = () => {
        stop();
        try {
          controller.close();
        } catch { /* already closed */ }
      };
      if (signal?.aborted) return end();
      signal?.addEventListener("abort", end, { once: true });
      controller.enqueue(encoder.encode(": connected\n\n"));
      tick();
      timer = setInterval(tick, intervalMs);
    },
    cancel: stop,
  }, { highWaterMark: 2 });
}
