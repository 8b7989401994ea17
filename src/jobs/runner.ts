/**
 * Runs jobs from the store, a few at a time, each with an AbortSignal. The runner owns the
 * `queued → running → succeeded | failed | cancelled` steps; the work itself is a `JobWorker`
 * chosen per job (a kind and type), so replication and lifecycle plug in as other workers.
 *
 * Two ways a job stops early:
 * - cancel: the signal aborts with `JobAborted("cancel")`; the worker unwinds what it must and
 *   returns `cancelled` (a queued job being cancelled starts at once, past the concurrency limit,
 *   so its worker can unwind).
 * - shutdown (`stop()`): the signal aborts with `JobAborted("shutdown")`; the worker gives up and
 *   the job keeps its `running` status, which the next boot turns back into `queued`
 *   (JobsStore.requeueUnfinished) so it resumes from its persisted cursor.
 */
import { type JobsStore, JobStateError } from "./jobs-store.ts";
import { getLogger } from "../observability/mod.ts";
import type { Clock } from "./clock.ts";
import { type JobRecord, type JobStatus, TERMINAL } from "./job-model.ts";
import { forgetLive } from "./live-progress.ts";

const log = getLogger("svc::jobs");

export class JobAborted extends Error {
  constructor(readonly why: "cancel" | "shutdown") {
    super(why === "cancel" ? "The job was cancelled" : "svc is shutting down");
    this.name = "JobAborted";
  }
}

/** True when `signal` aborted for a shutdown (the job must be left to resume). */
export function isShutdown(signal: AbortSignal): boolean {
  return signal.aborted && signal.reason instanceof JobAborted && signal.reason.why === "shutdown";
}

export interface WorkContext {
  job: JobRecord;
  /** Aborts on cancel or shutdown. */
  signal: AbortSignal;
  /** Aborts on shutdown only: an unwind after a cancel honours this one. */
  stopping: AbortSignal;
}

export interface JobOutcome {
  status: Extract<JobStatus, "succeeded" | "failed" | "cancelled">;
  error?: string | null;
}

export type JobWorker = (context: WorkContext) => Promise<JobOutcome>;

export interface RunnerOptions {
  store: JobsStore;
  clock: Clock;
  /** Jobs run at once (a cancelled queued job starts past it). */
  concurrency: number;
  workerFor(job: JobRecord): JobWorker;
  /** Told when a job reached a terminal status (gate, audit, metrics). */
  onEnd?(job: JobRecord): void;
}

export class JobRunner {
  readonly #options: RunnerOptions;
  readonly #queue: string[] = [];
  readonly #running = new Map<string, { abort: AbortController; done: Promise<void> }>();
  readonly #stopping = new AbortController();
  #idleWaiters: (() => void)[] = [];

  constructor(options: RunnerOptions) {
    this.#options = options;
  }

  /** Queues a job (already stored as `queued`) to run. */
  enqueue(id: string): void {
    if (this.#running.has(id) || this.#queue.includes(id) || this.#stopping.signal.aborted) return;
    this.#queue.push(id);
    this.#pump();
  }

  /**
   * Aborts a running job (its worker unwinds), or starts a queued one now so its worker can see
   * the stored cancel request. False when the runner does not know the job.
   */
  cancel(id: string): boolean {
    const running = this.#running.get(id);
    if (running) {
      running.abort.abort(new JobAborted("cancel"));
      return true;
    }
    const index = this.#queue.indexOf(id);
    if (index < 0) return false;
    this.#queue.splice(index, 1);
    this.#start(id);
    return true;
  }

  isRunning(id: string): boolean {
    return this.#running.has(id);
  }

  /** Aborts every running job for a shutdown and waits for the workers to return. */
  async stop(): Promise<void> {
    this.#stopping.abort(new JobAborted("shutdown"));
    this.#queue.length = 0;
    await Promise.all([...this.#running.values()].map((entry) => entry.done));
  }

  /** Resolves when nothing is queued or running (tests). */
  idle(): Promise<void> {
    if (this.#queue.length === 0 && this.#running.size === 0) return Promise.resolve();
    return new Promise((resolve) => this.#idleWaiters.push(resolve));
  }

  #pump(): void {
    while (this.#queue.length > 0 && this.#running.size < this.#options.concurrency) {
      this.#start(this.#queue.shift()!);
    }
    if (this.#queue.length === 0 && this.#running.size === 0) {
      const waiters = this.#idleWaiters;
      this.#idleWaiters = [];
      for (const wake of waiters) wake();
    }
  }

  #start(id: string): void {
    const abort = new AbortController();
    const signal = AbortSignal.any([abort.signal, this.#stopping.signal]);
    const done = this.#run(id, signal).catch((err) => {
      log.error("job runner failed", { job: id, error: (err as Error)?.message ?? String(err) });
    }).finally(() => {
      this.#running.delete(id);
      this.#pump();
    });
    this.#running.set(id, { abort, done });
  }

  async #run(id: string, signal: AbortSignal): Promise<void> {
    const { store, clock } = this.#options;
    let job = await store.get(id);
    if (job === null || TERMINAL.has(job.status)) return;
    const status = job.cancelRequested ? "cancelling" : "running";
    if (job.status !== status) {
      try {
        job = await store.update(id, { status, startedAt: job.startedAt ?? clock.now() }, [
          job.status,
        ]);
      } catch (err) {
        // A cancel changed the row between the read and this write: go on from what it says.
        if (!(err instanceof JobStateError)) throw err;
        job = await store.get(id);
        if (job === null || TERMINAL.has(job.status)) return;
      }
    }
    if (job.cancelRequested && !signal.aborted) {
      // Cancelled while queued (or before a restart): the worker unwinds from the stored state.
      this.#running.get(id)?.abort.abort(new JobAborted("cancel"));
    }
    let outcome: JobOutcome;
    try {
      outcome = await this.#options.workerFor(job)({
        job,
        signal,
        stopping: this.#stopping.signal,
      });
    } catch (err) {
      forgetLive(id);
      if (this.#stopping.signal.aborted) {
        log.info("job interrupted by shutdown; it resumes at the next start", { job: id });
        return;
      }
      outcome = { status: "failed", error: (err as Error)?.message ?? String(err) };
    }
    // The stored row speaks from here (the worker's live counters are its last save).
    forgetLive(id);
    if (this.#stopping.signal.aborted && outcome.status === "cancelled" && !job.cancelRequested) {
      return; // interrupted, not cancelled: resumes at the next start
    }
    const ended = await store.update(id, {
      status: outcome.status,
      error: outcome.error ?? null,
      finishedAt: clock.now(),
    });
    log.info("job ended", { job: id, status: ended.status, error: ended.error });
    this.#options.onEnd?.(ended);
  }
}
