/**
 * Migrate: moves a bucket to another backend. Phases, each resumable after a crash:
 *
 * 1. `drain`: the write gate is engaged (at creation); writes in flight end first. Then `count`:
 *    the source's stored objects and bytes are counted once (the totals of the job's percent and
 *    ETA; a resumed job keeps the ones it counted).
 * 2. `copy`: every stored object (below the delta store: baselines, deltas and passthrough
 *    objects, each with its metadata record) is copied to the target backend and verified
 *    (read back, same length and SHA-256; same metadata record). The cursor (last key done, in
 *    key order) is saved after every object, so a restart neither skips nor redoes work beyond
 *    the one object in flight.
 * 3. `verify`: both listings are walked side by side; every source key must be on the target.
 * 4. `flip`: `storage.buckets.<bucket>.backend` becomes the target through the one config apply
 *    path (persisted to the config file); the write gate lifts at once.
 * 5. `cleanup`: with `delete_source`, the source objects (and then the emptied source bucket)
 *    are deleted.
 *
 * A cancel before the flip, or a failed copy or verify, unwinds: the copies on the target are
 * deleted (and the target bucket, when the job created it); the source is never touched. After
 * the flip the bucket lives on the target and a cancel is refused (maintenance-service.ts).
 */
import type { JobOutcome, JobWorker } from "../runner.ts";
import { isShutdown } from "../runner.ts";
import { countStored, JobCursor, messageOf, storedObjects, withAttempts } from "./job-steps.ts";
import type { MaintenanceDeps } from "./maintenance-deps.ts";
import { copyStoredObject, type StoredPlace } from "./raw-copy.ts";
import { compareUtf8 } from "../../lib/mod.ts";

export interface MigrateState extends Record<string, unknown> {
  from: string;
  to: string;
  /** The bucket's name on both backends. */
  real: string;
  deleteSource: boolean;
  /** Last key copied and verified; null before the first. */
  cursor: string | null;
  /** The job created the bucket on the target (an unwind deletes it again). */
  createdTarget: boolean;
  flipped: boolean;
  /** Last source key deleted in cleanup. */
  cleanupCursor: string | null;
  /**
   * Fleet mode: the bucket's fleet gate lapsed while this job was down after it had begun
   * copying (writes reached the source meanwhile), so its copies cannot be trusted.
   */
  gateLapsed?: boolean;
}

function places(deps: MaintenanceDeps, state: MigrateState): [StoredPlace, StoredPlace] {
  const from = deps.backend(state.from);
  const to = deps.backend(state.to);
  if (!from) throw new Error(`Backend "${state.from}" is no longer configured`);
  if (!to) throw new Error(`Backend "${state.to}" is no longer configured`);
  return [{ backend: from, bucket: state.real }, { backend: to, bucket: state.real }];
}

/** Keys of `source` missing on `target` (both walked in key order), at most `limit`. */
async function missingOnTarget(
  source: StoredPlace,
  target: StoredPlace,
  pageSize: number,
  signal: AbortSignal,
  limit = 100,
): Promise<string[]> {
  const missing: string[] = [];
  const theirs = storedObjects(target, null, pageSize, signal);
  let next = await theirs.next();
  for await (const object of storedObjects(source, null, pageSize, signal)) {
    while (!next.done && compareUtf8(next.value.key, object.key) < 0) next = await theirs.next();
    if (next.done || next.value.key !== object.key) {
      missing.push(object.key);
      if (missing.length >= limit) break;
    }
  }
  await theirs.return(undefined);
  return missing;
}

export function migrateWorker(deps: MaintenanceDeps): JobWorker {
  return async ({ job, signal, stopping }): Promise<JobOutcome> => {
    const bucket = job.scope.bucket;
    const cursor = new JobCursor<MigrateState>(job, deps);
    const state = cursor.state;
    // A crash between the config apply and saving `flipped` leaves the bucket already routed
    // (read from the config, not a backend: an outage must never read as "not flipped"). The
    // flip is made again (the apply changes nothing here): in a fleet its route record and the
    // gate's flip may not have been written, and the source cleanup must not start before.
    if (!state.flipped && deps.routedTo(bucket) === state.to) {
      await deps.routeBucket(bucket, state.to);
      state.flipped = true;
      await cursor.save();
    }
    const unwind = async (why: "cancelled" | "failed", error?: string): Promise<JobOutcome> => {
      await cursor.phase("unwind");
      const [, target] = places(deps, state);
      const { batchSize } = deps.settings();
      // The target held nothing of this bucket when the job was created (checked then): every
      // object there is a copy this job made.
      const exists = (await target.backend.headBucket(target.bucket)) !== null;
      const copies = exists ? storedObjects(target, null, batchSize, stopping) : [];
      for await (const object of copies) {
        await withAttempts(
          deps,
          stopping,
          () => target.backend.deleteObject(target.bucket, object.key),
        );
      }
      if (state.createdTarget && exists) {
        await target.backend.deleteBucket(target.bucket).catch(() => {});
        state.createdTarget = false;
      }
      state.cursor = null;
      await cursor.phase(why);
      return why === "cancelled" ? { status: "cancelled" } : { status: "failed", error };
    };

    if (!state.flipped) {
      if (job.cancelRequested) return await unwind("cancelled");
      if (state.gateLapsed) {
        return await unwind(
          "failed",
          `The fleet write gate of bucket "${bucket}" lapsed while the job was down; writes ` +
            `reached "${state.from}" meanwhile, so the copies were removed: start it again`,
        );
      }
      try {
        const outcome = await copyAndVerify(deps, cursor, signal);
        if (outcome !== null) return await unwind("failed", outcome);
      } catch (err) {
        if (signal.aborted && !isShutdown(signal)) return await unwind("cancelled");
        if (isShutdown(signal)) throw err;
        return await unwind("failed", `Migration failed: ${messageOf(err)}`);
      }
      if (signal.aborted) {
        if (isShutdown(signal)) throw signal.reason;
        return await unwind("cancelled");
      }
      await cursor.phase("flip");
      try {
        await deps.routeBucket(bucket, state.to);
      } catch (err) {
        // The apply changes nothing when it fails (config-runtime.ts): the bucket is still on
        // the source, so the copies go.
        if (deps.routedTo(bucket) !== state.to) {
          return await unwind("failed", `Routing flip failed: ${messageOf(err)}`);
        }
        // Applied here but not published (a fleet's route record or gate): made again until it
        // is, the gate holding the bucket meanwhile; never a cleanup that others route to.
        await flipAgain(deps, bucket, state.to, err, stopping);
      }
      state.flipped = true;
      await cursor.save();
      deps.gate.lift(bucket, job.id);
      deps.audit("job_bucket_flipped", { job: job.id, bucket, from: state.from, to: state.to });
    } else {
      deps.gate.lift(bucket, job.id);
    }

    if (state.deleteSource && signal.aborted && !isShutdown(signal)) {
      // A cancel that lost the race with the flip: the bucket has moved, but the operator asked
      // to stop, so the source copy is kept rather than deleted.
      deps.audit("job_source_bucket_kept", { job: job.id, bucket, reason: "cancel requested" });
    } else if (state.deleteSource) {
      // After the flip the job always completes: only a shutdown interrupts it (and it resumes).
      await cursor.phase("cleanup");
      const [source] = places(deps, state);
      const { batchSize } = deps.settings();
      for await (const object of storedObjects(source, state.cleanupCursor, batchSize, stopping)) {
        await withAttempts(
          deps,
          stopping,
          () => source.backend.deleteObject(source.bucket, object.key),
        );
        state.cleanupCursor = object.key;
        await cursor.save();
      }
      await source.backend.deleteBucket(source.bucket).catch((err) =>
        deps.audit("job_source_bucket_kept", { job: job.id, bucket, reason: messageOf(err) })
      );
    }
    await cursor.phase("done");
    return { status: "succeeded" };
  };
}

/** Repeats a flip applied here but not published, every 2 s (a shutdown ends it: resumed). */
async function flipAgain(
  deps: MaintenanceDeps,
  bucket: string,
  to: string,
  first: unknown,
  stopping: AbortSignal,
): Promise<void> {
  deps.audit("job_bucket_flip_retried", { bucket, to, error: messageOf(first) });
  for (;;) {
    await deps.clock.sleep(2000, stopping);
    try {
      return await deps.routeBucket(bucket, to);
    } catch { /* retried: the first failure was audited */ }
  }
}

/** Copy and verify phases; a message when the migration cannot flip, else null. */
async function copyAndVerify(
  deps: MaintenanceDeps,
  cursor: JobCursor<MigrateState>,
  signal: AbortSignal,
): Promise<string | null> {
  const { state, job } = cursor;
  const bucket = job.scope.bucket;
  await cursor.phase("drain");
  await deps.gate.drained(bucket, signal);
  const [source, target] = places(deps, state);
  if ((await target.backend.headBucket(target.bucket)) === null) {
    await target.backend.createBucket(target.bucket);
    state.createdTarget = true;
  }
  const { batchSize, paceMs } = deps.settings();
  if (!cursor.counted) {
    // The gate holds the bucket: the count stays true for the whole copy.
    await cursor.phase("count");
    const found = await countStored(source, batchSize, signal);
    await cursor.totals(found.objects, found.bytes);
  }
  await cursor.phase("copy");
  cursor.measureFrom();
  for await (const object of storedObjects(source, state.cursor, batchSize, signal)) {
    try {
      const copied = await withAttempts(
        deps,
        signal,
        () => copyStoredObject(source, target, object.key, signal),
      );
      if (copied !== null) cursor.done(copied.bytes);
    } catch (err) {
      if (signal.aborted) throw err;
      await cursor.failed(bucket, object.key, err);
    }
    state.cursor = object.key;
    await cursor.save();
    if (paceMs > 0) await deps.clock.sleep(paceMs, signal);
  }
  const failed = cursor.progress.objects_failed;
  if (failed > 0) {
    return `${failed} object(s) could not be copied; the bucket stays on "${state.from}"`;
  }
  await cursor.phase("verify");
  const missing = await missingOnTarget(source, target, batchSize, signal);
  for (const key of missing) await cursor.failed(bucket, key, "Missing on the target after copy");
  if (missing.length > 0) {
    return `${missing.length} object(s) are missing on "${state.to}" after the copy; ` +
      `the bucket stays on "${state.from}"`;
  }
  return null;
}
