/**
 * Steps the maintenance workers share: walking a bucket's stored keys from a cursor, retrying
 * one object, saving progress, recording a failure.
 */
import type { ObjectInfo } from "../../storage/mod.ts";
import type { JobProgress, JobRecord } from "../job-model.ts";
import { ProgressMeter } from "../progress-meter.ts";
import { trackLive } from "../live-progress.ts";
import type { MaintenanceDeps } from "./maintenance-deps.ts";
import type { StoredPlace } from "./raw-copy.ts";

/** Every stored object of `place` after `startAfter`, in key order, a page at a time. */
export async function* storedObjects(
  place: StoredPlace,
  startAfter: string | null,
  pageSize: number,
  signal: AbortSignal,
): AsyncGenerator<ObjectInfo> {
  let after = startAfter ?? undefined;
  while (true) {
    signal.throwIfAborted();
    const page = await place.backend.listObjects(place.bucket, {
      prefix: "",
      maxKeys: pageSize,
      ...(after !== undefined ? { startAfter: after } : {}),
    });
    for (const object of page.objects) yield object;
    const last = page.objects.at(-1)?.key ?? page.nextStartAfter;
    if (!page.isTruncated || last === undefined) return;
    after = last;
  }
}

/** The stored objects of `place` and their bytes: a job's totals, counted before it starts. */
export async function countStored(
  place: StoredPlace,
  pageSize: number,
  signal: AbortSignal,
): Promise<{ objects: number; bytes: number }> {
  let objects = 0;
  let bytes = 0;
  for await (const object of storedObjects(place, null, pageSize, signal)) {
    objects++;
    bytes += object.storedSize;
  }
  return { objects, bytes };
}

export function messageOf(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

/** Runs `work` up to `attempts` times, backing off 100 ms, 200 ms, …; aborts end it at once. */
export async function withAttempts<T>(
  deps: MaintenanceDeps,
  signal: AbortSignal,
  work: () => Promise<T>,
): Promise<T> {
  const attempts = Math.max(1, deps.settings().attempts);
  for (let attempt = 1;; attempt++) {
    try {
      return await work();
    } catch (err) {
      if (signal.aborted || attempt >= attempts) throw err;
      await deps.clock.sleep(100 * 2 ** (attempt - 1), signal);
    }
  }
}

/**
 * The job's mutable view while a worker runs: progress and state, saved together. Every save
 * also stores the rates measured over the last 30 s (progress-meter.ts), from which the row
 * derives the ETA.
 */
export class JobCursor<State extends Record<string, unknown>> {
  progress: JobProgress;
  state: State;
  #meter = new ProgressMeter();
  constructor(readonly job: JobRecord, private readonly deps: MaintenanceDeps) {
    this.progress = { ...job.progress };
    this.state = { ...job.state } as State;
    this.measureFrom();
  }

  /**
   * Starts the rate window afresh (the counting before a walk must not read as a slow start).
   * The row reads the counters and this meter live while the job runs in this process
   * (live-progress.ts; the runner forgets them when the job ends).
   */
  measureFrom(): void {
    this.#meter = new ProgressMeter();
    this.#sample();
    trackLive(this.job.id, () => this.progress, () => this.deps.clock.now(), this.#meter);
  }

  /** Whether the totals are known (counted by this run or by the one before a restart). */
  get counted(): boolean {
    return typeof this.progress.objects_total === "number";
  }

  /** The totals the walk goes through (its percent and ETA follow from them). */
  async totals(objects: number, bytes: number): Promise<void> {
    this.progress.objects_total = objects;
    this.progress.bytes_total = bytes;
    await this.save();
  }

  #sample() {
    const at = this.deps.clock.now();
    const { objects_done, objects_failed, bytes_done } = this.progress;
    this.#meter.record({ at, objects: objects_done + objects_failed, bytes: bytes_done });
    const rates = this.#meter.rates(at);
    this.progress.rate_objects_per_sec = rates?.objects_per_sec ?? null;
    this.progress.rate_bytes_per_sec = rates?.bytes_per_sec ?? null;
  }

  async save(): Promise<void> {
    this.#sample();
    await this.deps.store.update(this.job.id, { progress: this.progress, state: this.state });
  }

  async phase(phase: string): Promise<void> {
    this.progress.phase = phase;
    await this.save();
  }

  /** One object done: counters, metrics; the caller saves (with its cursor). */
  done(bytes: number): void {
    this.progress.objects_done++;
    this.progress.bytes_done += bytes;
    this.deps.metrics?.objects(this.job.type, "done");
    this.deps.metrics?.bytes(this.job.type, bytes);
  }

  /** One object failed: recorded with its reason in the failures table. */
  async failed(bucket: string, key: string, err: unknown): Promise<void> {
    this.progress.objects_failed++;
    this.deps.metrics?.objects(this.job.type, "failed");
    await this.deps.store.addFailure({
      jobId: this.job.id,
      runId: null,
      bucket,
      key,
      message: messageOf(err),
      occurredAt: this.deps.clock.now(),
    });
  }
}
