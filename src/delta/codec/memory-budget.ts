/**
 * A byte budget for codec processes whose memory grows with their input: `zstd --patch-from`
 * reads the whole baseline into memory and keeps a window covering baseline and target, about
 * 2.2x the larger of the two (docs/BENCHMARKS.md "Issue 28: codec choice"), so its concurrent
 * jobs are capped by the bytes they will hold, not by their count alone.
 *
 * - `tryReserve` (an encode): the bytes now or null; the caller then uses xdelta3 instead, so a
 *   write never waits for memory.
 * - `reserve` (a decode, which must use the codec that wrote the delta): waits, first come first
 *   served, until the bytes are free. A job larger than the whole budget is admitted alone (when
 *   nothing else holds any), so every stored delta stays readable whatever the budget.
 */

/** One held reservation; `release` is idempotent. */
export interface MemoryReservation {
  readonly bytes: number;
  release(): void;
}

interface Waiter {
  bytes: number;
  grant(): void;
}

export class MemoryBudget {
  readonly #limit: number;
  #held = 0;
  readonly #waiters: Waiter[] = [];

  constructor(limitBytes: number) {
    if (!(limitBytes >= 0)) throw new RangeError(`memory budget must be >= 0, got ${limitBytes}`);
    this.#limit = limitBytes;
  }

  get limit(): number {
    return this.#limit;
  }

  /** Bytes held by running jobs. */
  get held(): number {
    return this.#held;
  }

  #fits(bytes: number): boolean {
    return this.#held + bytes <= this.#limit || (this.#held === 0 && bytes > this.#limit);
  }

  #take(bytes: number): MemoryReservation {
    this.#held += bytes;
    let held = true;
    return {
      bytes,
      release: () => {
        if (!held) return;
        held = false;
        this.#held -= bytes;
        this.#drain();
      },
    };
  }

  #drain(): void {
    while (this.#waiters.length > 0 && this.#fits(this.#waiters[0].bytes)) {
      this.#waiters.shift()!.grant();
    }
  }

  /** The bytes now, when they fit inside the budget (never past it), else null. */
  tryReserve(bytes: number): MemoryReservation | null {
    if (this.#waiters.length > 0 || this.#held + bytes > this.#limit) return null;
    return this.#take(bytes);
  }

  /** Waits until the bytes fit (or nothing else is held); rejects with the signal's reason. */
  reserve(bytes: number, signal?: AbortSignal): Promise<MemoryReservation> {
    if (signal?.aborted) return Promise.reject(signal.reason);
    if (this.#waiters.length === 0 && this.#fits(bytes)) {
      return Promise.resolve(this.#take(bytes));
    }
    return new Promise((resolve, reject) => {
      const onAbort = () => {
        const i = this.#waiters.indexOf(waiter);
        if (i >= 0) this.#waiters.splice(i, 1);
        reject(signal!.reason);
        this.#drain(); // a large waiter leaving may let smaller ones behind it in
      };
      const waiter: Waiter = {
        bytes,
        grant: () => {
          signal?.removeEventListener("abort", onAbort);
          resolve(this.#take(bytes));
        },
      };
      this.#waiters.push(waiter);
      signal?.addEventListener("abort", onAbort, { once: true });
    });
  }
}
