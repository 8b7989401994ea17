/**
 * The archive codec's workers, kept between jobs: starting a worker (loading and compiling the
 * codec's modules) took 30-120 ms on the 2-core test host, a large share of a small archive's
 * expansion or contraction. One job per worker at a time, at most `size` workers (default: the
 * number of cores, since each job is one core's CPU work), jobs beyond that wait in order.
 *
 * - A job that is aborted or times out cannot be stopped inside the worker (the work is
 *   synchronous): its worker is terminated and dropped (`discard`), the next job starts a new one.
 * - An idle worker is terminated after IDLE_MS, so a quiet server holds no worker memory.
 * - `shutdown` (the server's stop) terminates every worker and refuses later jobs' waits, so no
 *   worker outlives the process's work.
 */

/** A worker of the pool, lent to one job at a time. */
export interface PooledWorker {
  readonly worker: Worker;
}

interface Member extends PooledWorker {
  idleTimer?: ReturnType<typeof setTimeout>;
}

interface Waiter {
  grant(member: Member): void;
  fail(err: unknown): void;
}

/** How long an idle worker is kept. */
export const IDLE_MS = 30_000;

/** The default pool size: one worker per core, 1 to 8. */
export function defaultPoolSize(): number {
  const cores = typeof navigator !== "undefined" ? navigator.hardwareConcurrency || 1 : 1;
  return Math.max(1, Math.min(8, cores));
}

export class WorkerPool {
  readonly #spawn: () => Worker;
  readonly #size: number;
  readonly #idleMs: number;
  readonly #members = new Set<Member>();
  readonly #idle: Member[] = [];
  readonly #waiters: Waiter[] = [];
  #started = 0;

  constructor(spawn: () => Worker, size = defaultPoolSize(), idleMs = IDLE_MS) {
    this.#spawn = spawn;
    this.#size = size;
    this.#idleMs = idleMs;
  }

  get size(): number {
    return this.#size;
  }

  /** Workers alive (busy or idle). */
  get alive(): number {
    return this.#members.size;
  }

  /** Workers started since the pool was made (a reused worker is not counted again). */
  get started(): number {
    return this.#started;
  }

  /** Jobs waiting for a worker. */
  get waiting(): number {
    return this.#waiters.length;
  }

  #create(): Member {
    const member: Member = { worker: this.#spawn() };
    this.#started++;
    this.#members.add(member);
    return member;
  }

  /** A worker for one job: an idle one, a new one while under `size`, else the next freed. */
  take(signal?: AbortSignal): Promise<PooledWorker> {
    if (signal?.aborted) return Promise.reject(signal.reason);
    const idle = this.#idle.pop();
    if (idle) {
      clearTimeout(idle.idleTimer);
      return Promise.resolve(idle);
    }
    if (this.#members.size < this.#size) {
      try {
        return Promise.resolve(this.#create());
      } catch (err) {
        return Promise.reject(err);
      }
    }
    return new Promise((resolve, reject) => {
      const onAbort = () => {
        const i = this.#waiters.indexOf(waiter);
        if (i >= 0) this.#waiters.splice(i, 1);
        reject(signal!.reason);
      };
      const waiter: Waiter = {
        grant: (member) => {
          signal?.removeEventListener("abort", onAbort);
          resolve(member);
        },
        fail: (err) => {
          signal?.removeEventListener("abort", onAbort);
          reject(err);
        },
      };
      this.#waiters.push(waiter);
      signal?.addEventListener("abort", onAbort, { once: true });
    });
  }

  /** A job ended normally: the worker serves the next job, or idles. */
  give(pooled: PooledWorker): void {
    const member = pooled as Member;
    if (!this.#members.has(member)) return;
    const next = this.#waiters.shift();
    if (next) return next.grant(member);
    member.idleTimer = setTimeout(() => this.discard(member), this.#idleMs);
    this.#idle.push(member);
  }

  /** The worker is unusable (aborted mid-job, failed): terminated; a waiting job gets a new one. */
  discard(pooled: PooledWorker): void {
    const member = pooled as Member;
    clearTimeout(member.idleTimer);
    const i = this.#idle.indexOf(member);
    if (i >= 0) this.#idle.splice(i, 1);
    if (this.#members.delete(member)) member.worker.terminate();
    const next = this.#waiters.shift();
    if (!next) return;
    try {
      next.grant(this.#create());
    } catch (err) {
      next.fail(err);
    }
  }

  /** Terminates every worker; waiting jobs fail. Jobs running now fail as their worker ends. */
  shutdown(): void {
    const waiters = this.#waiters.splice(0);
    for (const waiter of waiters) waiter.fail(new Error("Archive workers are shut down"));
    for (const member of [...this.#members]) {
      clearTimeout(member.idleTimer);
      member.worker.terminate();
    }
    this.#members.clear();
    this.#idle.length = 0;
  }
}
