/**
 * Progress of the jobs running in this process, by job id. A rule row (lifecycle, replication)
 * stores its counters only when a run ends (rules/rule-store.ts), so while a run goes its row
 * reads the counters here: the run registers a reader of its live counters and removes it when
 * it ends. Each read also feeds the entry's ProgressMeter, so the window rate needs no timer: it
 * is measured between the reads (and from the start of the run). A maintenance worker registers
 * its JobCursor too (with the meter it samples at every save), so its row's rate is measured up
 * to the moment of the read rather than the last save.
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
 * second registration under the same id replaces the first. `meter` is the run's own meter when
 * it samples its counters itself (a maintenance worker at every save); by default the reads
 * feed a new one, starting from the counters as they are now (a resumed job's earlier work is
 * not counted into its rate).
 */
export function trackLive(
  id: string,
  read: () => JobProgress,
  now: () => number,
  meter?: ProgressMeter,
): () => void {
  const entry = { read, now, meter: meter ?? new ProgressMeter() };
  if (meter === undefined) sample(entry);
  runs.set(id, entry);
  return () => {
    if (runs.get(id) === entry) runs.delete(id);
  };
}

/** Forgets the live counters of `id`, whoever registered them (the runner, when a job ends). */
export function forgetLive(id: string): void {
  runs.delete(id);
}

function sample(entry: LiveEntry): { progress: JobProgress; at: number } {
  const progress = entry.read();
  const at = entry.now();
  entry.meter.record({
    at,
    objects: progress.objects_done + progress.objects_failed,
    bytes: progress.bytes_done,
  });
  return { progress, at };
}

/**
 * The live counters and window rates of a run of this process, or null when none runs. The read
 * is a sample too: a run that stopped moving sees its rate fall (and its ETA grow) between saves.
 */
export function liveProgress(id: string): { progress: JobProgress; rates: Rates | null } | null {
  const entry = runs.get(id);
  if (entry === undefined) return null;
  const { progress, at } = sample(entry);
  return { progress, rates: entry.meter.rates(at) };
}
