/**
 * The progress figures of a job (SPEC "Job row", `progress`): percent from done and total, rate
 * over a sliding window of samples, ETA from the rate and what remains. Pure arithmetic over
 * timestamps the caller passes (the jobs clock), so the tests need no timers.
 *
 * Rates are measured over the last `windowMs` (30 s) of samples rather than since the start: a
 * job that slowed down (a busy backend, bigger objects further on) shows its current speed, and
 * its ETA follows within the window. The ETA counts objects (remaining objects / objects per
 * second): failed objects never add bytes, so a byte-based ETA would overshoot after failures.
 */

/** One point of a job's counters at a time (unix ms). */
export interface ProgressSample {
  at: number;
  objects: number;
  bytes: number;
}

export interface Rates {
  objects_per_sec: number;
  bytes_per_sec: number;
}

/** The window rates are measured over. */
export const RATE_WINDOW_MS = 30_000;
/** Samples closer together than this replace each other (bounds the window's length). */
const MIN_GAP_MS = 250;
/** Below this span a rate is noise: none is reported. */
const MIN_SPAN_MS = 500;

export class ProgressMeter {
  readonly #windowMs: number;
  #samples: ProgressSample[] = [];

  constructor(windowMs = RATE_WINDOW_MS) {
    this.#windowMs = windowMs;
  }

  /** Adds a point; points older than the window go, except the one the window starts from. */
  record(sample: ProgressSample): void {
    const samples = this.#samples;
    const last = samples.at(-1);
    if (last !== undefined && sample.at < last.at) return; // a clock step back: ignore
    if (samples.length >= 2 && sample.at - samples[samples.length - 2].at < MIN_GAP_MS) {
      samples[samples.length - 1] = sample;
    } else {
      samples.push(sample);
    }
    const edge = sample.at - this.#windowMs;
    // Keep the newest sample at or before the edge, so the window spans its full width.
    while (samples.length > 2 && samples[1].at <= edge) samples.shift();
  }

  /**
   * Objects and bytes per second over the window, measured up to `now` (a job that stopped
   * moving sees its rate fall); null until the samples span at least half a second.
   */
  rates(now: number): Rates | null {
    const first = this.#samples[0];
    const last = this.#samples.at(-1);
    if (first === undefined || last === undefined || last === first) return null;
    const span = Math.max(now, last.at) - first.at;
    if (span < MIN_SPAN_MS) return null;
    return {
      objects_per_sec: round2(((last.objects - first.objects) * 1000) / span),
      bytes_per_sec: Math.round(((last.bytes - first.bytes) * 1000) / span),
    };
  }
}

/** Percent of `total` that `processed` is, one decimal, within 0..100; null without a total. */
export function percentOf(processed: number, total: number | null | undefined): number | null {
  if (total === null || total === undefined || !Number.isFinite(total) || total < 0) return null;
  if (total === 0) return 100;
  return Math.min(100, Math.max(0, Math.floor((1000 * processed) / total) / 10));
}

/**
 * Seconds left at `perSec` for `remaining` objects (whole seconds, rounded up); null when there
 * is no total or no movement to judge by.
 */
export function etaSeconds(remaining: number | null, perSec: number | null): number | null {
  if (remaining === null || !Number.isFinite(remaining)) return null;
  if (remaining <= 0) return 0;
  if (perSec === null || !(perSec > 0)) return null;
  return Math.ceil(remaining / perSec);
}

function round2(value: number): number {
  return Math.round(value * 100) / 100;
}
