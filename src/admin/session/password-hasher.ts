/**
 * bcrypt off the main thread. bcryptjs is pure JavaScript: `compareSync` at cost 12 holds the
 * event loop ~0.4 s, and its "async" compare only slices the work into 100 ms chunks, which
 * still stalled timers by 200-950 ms here (scripts/bench/admin-sessions.ts), so S3 requests
 * would stall during a login. One worker thread runs every bcrypt call, one at a time, started
 * at the first call and ended after `idleMs` without work (an isolate costs ~20 MB).
 *
 * Calls queue in arrival order; at most `maxQueued` may wait (a login storm from many addresses
 * gets 429 instead of an ever-longer queue).
 */
import { AdminError } from "../admin-error.ts";
import type { BcryptReply, BcryptRequest } from "./bcrypt-worker.ts";

export interface PasswordHasher {
  compare(plain: string, hash: string): Promise<boolean>;
  hash(plain: string, cost: number): Promise<string>;
}

interface Pending {
  resolve: (value: boolean | string) => void;
  reject: (err: Error) => void;
}

/** A request without its id (each variant kept apart). */
type Job = BcryptRequest extends infer R ? R extends BcryptRequest ? Omit<R, "id"> : never : never;

export class WorkerPasswordHasher implements PasswordHasher {
  readonly #maxQueued: number;
  readonly #idleMs: number;
  readonly #pending = new Map<number, Pending>();
  #worker: Worker | null = null;
  #idleTimer: ReturnType<typeof setTimeout> | undefined;
  #nextId = 1;

  constructor(options: { maxQueued?: number; idleMs?: number } = {}) {
    this.#maxQueued = options.maxQueued ?? 64;
    this.#idleMs = options.idleMs ?? 60_000;
  }

  /** True while the worker thread exists. */
  get running(): boolean {
    return this.#worker !== null;
  }

  compare(plain: string, hash: string): Promise<boolean> {
    return this.#run({ op: "compare", plain, hash }) as Promise<boolean>;
  }

  hash(plain: string, cost: number): Promise<string> {
    return this.#run({ op: "hash", plain, cost }) as Promise<string>;
  }

  /** Ends the worker now (shutdown, tests); calls in flight fail. */
  terminate(): void {
    clearTimeout(this.#idleTimer);
    this.#worker?.terminate();
    this.#worker = null;
    this.#failAll(new Error("The password worker was stopped"));
  }

  #failAll(err: Error): void {
    const pending = [...this.#pending.values()];
    this.#pending.clear();
    for (const entry of pending) entry.reject(err);
  }

  #spawn(): Worker {
    const worker = new Worker(new URL("./bcrypt-worker.ts", import.meta.url), { type: "module" });
    worker.onmessage = (event: MessageEvent<BcryptReply>) => {
      const reply = event.data;
      const entry = this.#pending.get(reply.id);
      if (!entry) return;
      this.#pending.delete(reply.id);
      if (reply.error !== undefined) entry.reject(new Error(reply.error));
      else entry.resolve(reply.result);
      this.#armIdle();
    };
    worker.onerror = (event) => {
      event.preventDefault();
      worker.terminate();
      if (this.#worker === worker) this.#worker = null;
      this.#failAll(new Error(`The password worker failed: ${event.message}`));
    };
    return worker;
  }

  #armIdle(): void {
    clearTimeout(this.#idleTimer);
    if (this.#pending.size > 0) return;
    const timer = setTimeout(() => {
      if (this.#pending.size === 0) {
        this.#worker?.terminate();
        this.#worker = null;
      }
    }, this.#idleMs);
    // An idle worker's timer never keeps the process (or a test) alive.
    Deno.unrefTimer(timer);
    this.#idleTimer = timer;
  }

  #run(job: Job): Promise<boolean | string> {
    if (this.#pending.size >= this.#maxQueued) {
      return Promise.reject(
        new AdminError("too_many_requests", "Too many password checks in progress; retry soon", {
          retry_after_secs: 1,
        }),
      );
    }
    clearTimeout(this.#idleTimer);
    this.#worker ??= this.#spawn();
    const id = this.#nextId++;
    return new Promise((resolve, reject) => {
      this.#pending.set(id, { resolve, reject });
      this.#worker!.postMessage({ ...job, id } as BcryptRequest);
    });
  }
}

const shared = new WorkerPasswordHasher();

/** The process's one hasher. */
export const passwordHasher: PasswordHasher = shared;

/** Ends the shared worker (shutdown); a later call starts it again. */
export function terminatePasswordWorker(): void {
  shared.terminate();
}
