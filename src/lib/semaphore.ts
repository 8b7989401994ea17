/**
 * A counting semaphore with a FIFO queue: requests over `max_concurrent_requests` wait their turn
 * instead of being refused, and a waiter whose request is abandoned leaves the queue. How long the
 * oldest waiter has waited feeds readiness (a full house for long = not ready).
 */
interface Waiter {
  grant: () => void;
  since: number;
}

export class Semaphore {
  #available: number;
  readonly #waiters: Waiter[] = [];

  constructor(permits: number, private readonly now: () => number = () => performance.now()) {
    this.#available = permits;
  }

  get available(): number {
    return this.#available;
  }

  get waiting(): number {
    return this.#waiters.length;
  }

  /** How long the longest waiter has been queued, ms (0 when nobody waits). */
  oldestWaitMs(): number {
    const oldest = this.#waiters[0];
    return oldest === undefined ? 0 : Math.max(0, this.now() - oldest.since);
  }

  /** Resolves when a permit is held; rejects with the signal's reason if aborted first. */
  acquire(signal?: AbortSignal): Promise<void> {
    if (this.#available > 0) {
      this.#available--;
      return Promise.resolve();
    }
    if (signal?.aborted) return Promise.reject(signal.reason);
    return new Promise((resolve, reject) => {
      const waiter: Waiter = {
        grant: () => {
          signal?.removeEventListener("abort", onAbort);
          resolve();
        },
        since: this.now(),
      };
      const onAbort = () => {
        const index = this.#waiters.indexOf(waiter);
        if (index >= 0) this.#waiters.splice(index, 1);
        reject(signal!.reason);
      };
      signal?.addEventListener("abort", onAbort, { once: true });
      this.#waiters.push(waiter);
    });
  }

  release(): void {
    const next = this.#waiters.shift();
    if (next) next.grant();
    else this.#available++;
  }
}
