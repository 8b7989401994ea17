/**
 * The jobs' clock, injectable so tests never wait for real time: `now` for timestamps, `sleep`
 * for pacing and back-off (ends early, rejecting with the signal's reason, when it aborts).
 */
export interface Clock {
  now(): number;
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
}

export const systemClock: Clock = {
  now: () => Date.now(),
  sleep(ms, signal) {
    if (signal?.aborted) return Promise.reject(signal.reason);
    if (ms <= 0) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const onAbort = () => {
        clearTimeout(timer);
        reject(signal!.reason);
      };
      const timer = setTimeout(() => {
        signal?.removeEventListener("abort", onAbort);
        resolve();
      }, ms);
      signal?.addEventListener("abort", onAbort, { once: true });
    });
  },
};

/** A clock that moves only when told: `sleep` advances it at once (tests). */
export class ManualClock implements Clock {
  #now: number;
  readonly slept: number[] = [];
  constructor(start = Date.UTC(2026, 0, 1)) {
    this.#now = start;
  }
  now(): number {
    return this.#now;
  }
  advance(ms: number): void {
    this.#now += ms;
  }
  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    if (signal?.aborted) return Promise.reject(signal.reason);
    this.slept.push(ms);
    this.#now += ms;
    return Promise.resolve();
  }
}

/**
 * The system clock shifted by `offsetMs` (negative: in the past). Sleeps are real: only the
 * reading moves. Built from the test aid `SVC_TEST_CLOCK_OFFSET_SECS` (runtime/test-clock.ts).
 */
export function offsetClock(offsetMs: number): Clock {
  if (offsetMs === 0) return systemClock;
  return { now: () => Date.now() + offsetMs, sleep: systemClock.sleep };
}
