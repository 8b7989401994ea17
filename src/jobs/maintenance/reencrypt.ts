/**
 * Re-encrypt: rewrites every stored object of a bucket in place on its backend, below the delta
 * store (baselines and deltas included), with the same metadata record. The backend's write path
 * applies its current encryption; reads dispatch on what each object says, so an object written
 * under an old key (or in plaintext) comes back under the current one.
 *
 * Resumable: the cursor is the last key rewritten and is saved after every object, so after a
 * crash the walk continues after it (at most the object in flight at the crash is rewritten
 * again, which is harmless: it is the same bytes). A cancel stops after the object in flight;
 * nothing needs unwinding, since every object is readable whichever key encrypted it. Before the
 * walk the bucket's stored objects are counted once (phase `count`): the totals of its percent.
 */
import type { JobOutcome, JobWorker } from "../runner.ts";
import { isShutdown } from "../runner.ts";
import { countStored, JobCursor, storedObjects, withAttempts } from "./job-steps.ts";
import type { MaintenanceDeps } from "./maintenance-deps.ts";
import { copyStoredObject } from "./raw-copy.ts";

export interface ReencryptState extends Record<string, unknown> {
  /** The last key rewritten (key order); null before the first. */
  cursor: string | null;
}

export function reencryptWorker(deps: MaintenanceDeps): JobWorker {
  return async ({ job, signal }): Promise<JobOutcome> => {
    const bucket = job.scope.bucket;
    const cursor = new JobCursor<ReencryptState>(job, deps);
    if (job.cancelRequested) return { status: "cancelled" };
    try {
      await cursor.phase("drain");
      await deps.gate.drained(bucket, signal);
      const route = await deps.route(bucket);
      const place = { backend: route.backend, bucket: route.real };
      const { batchSize, paceMs } = deps.settings();
      if (!cursor.counted) {
        // The gate holds the bucket: the count stays true for the whole walk.
        await cursor.phase("count");
        const found = await countStored(place, batchSize, signal);
        await cursor.totals(found.objects, found.bytes);
      }
      await cursor.phase("rewrite");
      cursor.measureFrom();
      for await (const object of storedObjects(place, cursor.state.cursor, batchSize, signal)) {
        try {
          const copied = await withAttempts(
            deps,
            signal,
            () => copyStoredObject(place, place, object.key, signal),
          );
          if (copied !== null) cursor.done(copied.bytes);
        } catch (err) {
          if (signal.aborted) throw err;
          await cursor.failed(bucket, object.key, err);
        }
        cursor.state.cursor = object.key;
        await cursor.save();
        if (paceMs > 0) await deps.clock.sleep(paceMs, signal);
      }
    } catch (err) {
      if (signal.aborted && !isShutdown(signal)) {
        await cursor.phase("cancelled");
        return { status: "cancelled" };
      }
      throw err;
    }
    await cursor.phase("done");
    const failed = cursor.progress.objects_failed;
    return failed > 0
      ? {
        status: "failed",
        error: `${failed} object(s) could not be re-encrypted; see the job's failures`,
      }
      : { status: "succeeded" };
  };
}
