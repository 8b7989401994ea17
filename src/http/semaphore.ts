/**
 * A counting semaphore with a FIFO queue: requests over `max_concurrent_requests` wait their turn
 * instead of being refused, and a waiter whose request is abandoned leaves the queue.
 */
export class Semaphore {
  #available: number;
  readonly #waiters: Array<() => void> = [];

  constructor(permits: number) {
    this.#available = permits;
  }

  get available(): number {
    return this.#available;
  }

  get waiting(): number {
    return this.#waiters.length;
  }

  /** Resolves when a permit is held; rejects with the signal's reason if aborted first. */
  acquire(signal?: AbortSignal): Promise<void> {
    if (this.#available > 0) {
      this.#available--;
      return Promise.resolve();
    }
    return new Promise((resolve, reject) => {
      const grant = () => {
        signal?.removeEventListener("abort", onAbort);
        resolve();
      };
      const onAbort = () => {
        const index = this.#waiters.indexOf(grant);
        if (index >= 0) this.#waiters.splice(index, 1);
        reject(signal!.reason);
      };
      signal?.addEventListener("abort", onAbort, { once: true });
      this.#waiters.push(grant);
    });
  }

  release(): void {
    const next = this.#waiters.shift();
    if (next) next();
    else this.#available++;
  }
}
