/**
 * Bounds how many delta codec subprocesses run at once (`codec_concurrency`) and kills a codec
 * that runs past `codec_timeout_secs`. GETs `acquire` and wait a bounded time (SlowDown after);
 * PUTs `acquireWithin` `codec_slot_wait_secs` and, when no slot freed, store the object
 * passthrough instead of failing (a write is never refused because compression is busy). The
 * limit can change at runtime (hot reload); slots already held stay valid and drain naturally.
 */

import { SvcError } from "../../lib/mod.ts";

/** `max(16, num_cpus * 4)`, the documented default for `codec_concurrency`. */
export function defaultCodecConcurrency(): number {
  const cpus = typeof navigator !== "undefined" && navigator.hardwareConcurrency
    ? navigator.hardwareConcurrency
    : 1;
  return Math.max(16, cpus * 4);
}

/** One held slot. `release` is idempotent. */
export interface CodecPermit {
  release(): void;
}

export interface RunOptions {
  /** Kill the codec (abort its signal) after this long; `codec_timeout_secs * 1000`. */
  timeoutMs: number;
  /** The caller's signal (client disconnect); combined with the timeout. */
  signal?: AbortSignal;
  /** Wait up to this long for a slot (GET); absent = SlowDown at once when full (PUT). */
  maxWaitMs?: number;
  /** Use this already-held slot instead of taking one; it is released when the run ends. */
  permit?: CodecPermit;
}

interface Waiter {
  grant(permit: CodecPermit): void;
}

function slowDown(detail: string): SvcError {
  return new SvcError("SlowDown", `Please reduce your request rate: ${detail}`);
}

export function codecTimeoutError(timeoutMs: number): SvcError {
  return new SvcError(
    "InternalError",
    `Delta codec failed: timed out after ${timeoutMs / 1000}s and was killed`,
  );
}

export class CodecPool {
  #limit: number;
  #inUse = 0;
  readonly #waiters: Waiter[] = [];

  constructor(concurrency: number = defaultCodecConcurrency()) {
    this.#limit = CodecPool.#check(concurrency);
  }

  static #check(n: number): number {
    if (!Number.isInteger(n) || n < 1) {
      throw new RangeError(`codec concurrency must be a positive integer, got ${n}`);
    }
    return n;
  }

  get concurrency(): number {
    return this.#limit;
  }

  /** Hot reload: a larger limit wakes waiters at once; a smaller one applies as slots free. */
  set concurrency(n: number) {
    this.#limit = CodecPool.#check(n);
    this.#drain();
  }

  /** Free slots, for the `svc_codec_semaphore_available` gauge. Never negative. */
  get available(): number {
    return Math.max(0, this.#limit - this.#inUse);
  }

  get inUse(): number {
    return this.#inUse;
  }

  /** Callers queued in `acquire`. */
  get waiting(): number {
    return this.#waiters.length;
  }

  #permit(): CodecPermit {
    this.#inUse++;
    let held = true;
    return {
      release: () => {
        if (!held) return;
        held = false;
        this.#inUse--;
        this.#drain();
      },
    };
  }

  #drain(): void {
    while (this.#waiters.length > 0 && this.#inUse < this.#limit) {
      this.#waiters.shift()!.grant(this.#permit());
    }
  }

  /** Takes a slot now or throws SlowDown (PUT path). */
  tryAcquire(): CodecPermit {
    if (this.#inUse >= this.#limit || this.#waiters.length > 0) {
      throw slowDown(`all ${this.#limit} delta codec slots are busy`);
    }
    return this.#permit();
  }

  /** Waits for a slot up to `maxWaitMs` (GET path); SlowDown on timeout, the reason on abort. */
  acquire(signal?: AbortSignal, maxWaitMs = Infinity): Promise<CodecPermit> {
    if (signal?.aborted) return Promise.reject(signal.reason);
    if (this.#inUse < this.#limit && this.#waiters.length === 0) {
      return Promise.resolve(this.#permit());
    }
    return new Promise<CodecPermit>((resolve, reject) => {
      let timer: ReturnType<typeof setTimeout> | undefined;
      const leave = () => {
        const i = this.#waiters.indexOf(waiter);
        if (i >= 0) this.#waiters.splice(i, 1);
        if (timer !== undefined) clearTimeout(timer);
        signal?.removeEventListener("abort", onAbort);
      };
      const onAbort = () => {
        leave();
        reject(signal!.reason);
      };
      const waiter: Waiter = {
        grant: (permit) => {
          leave();
          resolve(permit);
        },
      };
      this.#waiters.push(waiter);
      signal?.addEventListener("abort", onAbort, { once: true });
      if (Number.isFinite(maxWaitMs)) {
        timer = setTimeout(() => {
          leave();
          reject(slowDown(`no delta codec slot freed within ${maxWaitMs} ms`));
        }, Math.max(0, maxWaitMs));
      }
    });
  }

  /**
   * Waits for a slot up to `maxWaitMs` (PUT path): the permit, or null when none freed in time
   * (0 = only a slot free right now). Rejects only with the caller's abort reason.
   */
  async acquireWithin(signal: AbortSignal | undefined, maxWaitMs: number): Promise<
    CodecPermit | null
  > {
    signal?.throwIfAborted();
    if (this.#inUse < this.#limit && this.#waiters.length === 0) return this.#permit();
    if (!(maxWaitMs > 0)) return null;
    try {
      return await this.acquire(signal, maxWaitMs);
    } catch (err) {
      if (signal?.aborted) throw err;
      return null;
    }
  }

  async #take(options: RunOptions): Promise<CodecPermit> {
    if (options.permit) return options.permit;
    if (options.maxWaitMs === undefined) return this.tryAcquire();
    return await this.acquire(options.signal, options.maxWaitMs);
  }

  /**
   * Runs codec work in a slot. `work` gets a signal that fires on the caller's abort or when
   * `timeoutMs` passes; the codec kills its subprocess on it. A timeout rejects with an
   * InternalError even if `work` ignores the signal. The slot is freed when the run ends.
   */
  async run<T>(work: (signal: AbortSignal) => Promise<T>, options: RunOptions): Promise<T> {
    const permit = await this.#take(options);
    const timeout = new AbortController();
    const signal = options.signal
      ? AbortSignal.any([options.signal, timeout.signal])
      : timeout.signal;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const timedOut = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        const err = codecTimeoutError(options.timeoutMs);
        timeout.abort(err);
        reject(err);
      }, options.timeoutMs);
    });
    timedOut.catch(() => {});
    let running: Promise<T>;
    try {
      running = work(signal);
    } catch (err) {
      clearTimeout(timer);
      permit.release();
      throw err;
    }
    try {
      return await Promise.race([running, timedOut]);
    } finally {
      clearTimeout(timer);
      // Keep the slot until the work has really ended (its subprocess reaped).
      running.then(permit.release, permit.release);
    }
  }

  /**
   * Runs a streaming codec (decode) in a slot: the slot is held until the returned stream ends,
   * errors or is cancelled; past `timeoutMs` the signal fires and the codec kills its process.
   */
  async runStream(
    work: (signal: AbortSignal) => ReadableStream<Uint8Array>,
    options: RunOptions,
  ): Promise<ReadableStream<Uint8Array>> {
    const permit = await this.#take(options);
    const timeout = new AbortController();
    const signal = options.signal
      ? AbortSignal.any([options.signal, timeout.signal])
      : timeout.signal;
    const timer = setTimeout(
      () => timeout.abort(codecTimeoutError(options.timeoutMs)),
      options.timeoutMs,
    );
    const end = () => {
      clearTimeout(timer);
      permit.release();
    };
    let reader: ReadableStreamDefaultReader<Uint8Array>;
    try {
      reader = work(signal).getReader();
    } catch (err) {
      end();
      throw err;
    }
    return new ReadableStream<Uint8Array>({
      async pull(controller) {
        try {
          const { done, value } = await reader.read();
          if (done) {
            end();
            controller.close();
          } else controller.enqueue(value);
        } catch (err) {
          end();
          controller.error(err);
        }
      },
      async cancel(reason) {
        try {
          await reader.cancel(reason);
        } finally {
          end();
        }
      },
    }, { highWaterMark: 0 });
  }
}
