/**
 * Steps the maintenance workers share: walking a bucket's stored keys from a cursor, retrying
 * one object, saving progress, recording a failure.
 */
import type { ObjectInfo } from "../../storage/mod.ts";
import type { JobProgress, JobRecord } from "../job-model.ts";
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

/** The job's mutable view while a worker runs: progress and state, saved together. */
export class JobCursor<State extends Record<string, unknown>> {
  progress: JobProgress;
  state: State;
  constructor(readonly job: JobRecord, private readonly deps: MaintenanceDeps) {
    this.progress = { ...job.progress };
    this.state = { ...job.state } as State;
  }

  async save(): Promise<void> {
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
