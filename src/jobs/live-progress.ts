/**
 * Progress of the rule runs going on in this process (lifecycle, replication), by job id. A rule
 * row stores its counters only when a run ends (rules/rule-store.ts), so while a run goes its
 * row reads the counters here: the run registers a reader of its live counters and removes it
 * when it ends. Each read also feeds the entry's ProgressMeter, so the window rate needs no
 * timer: it is measured between the reads (and from the start of the run).
 *
 * Process-wide on purpose: a run and the admin route that shows its row meet here without the
 * scheduler in between. Only runs of this process are seen; a run on another instance shows its
 * stored counters until it ends.
 */
import { ProgressMeter, type Rates } from "./progress-meter.ts";
import type { JobProgress } from "./job-progress.ts";

interface LiveEntry {
  read: () => JobProgress;
  now: () => number;
  meter: ProgressMeter;
}

const runs = new Map<string, LiveEntry>();

/**
 * Registers a running job's counters; the answer removes them (call it when the run ends). A
 * second registration under the same id replaces the first.
 */
export function trackLive(id: string, read: () => JobProgress, now: () => number): () => void {
  const meter = new ProgressMeter();
  meter.record({ at: now(), objects: 0, bytes: 0 });
  const entry = { read, now, meter };
  runs.set(id, entry);
  return () => {
    if (runs.get(id) === entry) runs.delete(id);
  };
}

/** The live counters and window rates of a run of this process, or null when none runs. */
export function liveProgress(id: string): { progress: JobProgress; rates: Rates | null } | null {
  const entry = runs.get(id);
  if (entry === undefined) return null;
  const progress = entry.read();
  const at = entry.now();
  entry.meter.record({
    at,
    objects: progress.objects_done + progress.objects_failed,
    bytes: progress.bytes_done,
  });
  return { progress, rates: entry.meter.rates(at) };
}
