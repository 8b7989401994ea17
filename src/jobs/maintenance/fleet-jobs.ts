/**
 * The jobs service's steps in fleet mode (fleet-gate.ts): the claim of a new job's gate, the
 * re-claim of a resumed one, and the hooks through which the fleet gate reaches local jobs.
 */
import type { AuditFn } from "../../observability/mod.ts";
import { JobsError } from "../jobs-error.ts";
import { type JobRecord, jobRow, TERMINAL } from "../job-model.ts";
import type { JobsStore } from "../jobs-store.ts";
import type { MaintenanceFleet } from "./maintenance-deps.ts";
import type { MigrateState } from "./migrate.ts";

/** Refuses a job on a bucket another instance's job holds (409), before the job exists. */
export async function checkFleetFree(fleet: MaintenanceFleet | undefined, bucket: string) {
  const held = await fleet?.check(bucket).catch((err) => {
    throw unreachable(err);
  });
  if (held) throw new JobsError("conflict", held);
}

function unreachable(err: unknown): JobsError {
  const why = err instanceof Error ? err.message : String(err);
  return new JobsError("unavailable", `The fleet's coordination bucket cannot be reached: ${why}`);
}

/** Claims a new job's gate; when another instance won the race, the job fails and 409. */
export async function claimNew(fleet: MaintenanceFleet, store: JobsStore, job: JobRecord) {
  let refusal: JobsError;
  try {
    if ((await fleet.claim(job)) !== "held") return;
    refusal = new JobsError(
      "conflict",
      `Bucket "${job.scope.bucket}" is held by a job on another instance`,
    );
  } catch (err) {
    refusal = unreachable(err); // never run a job the fleet does not see gated
  }
  await failUnrun(store, job.id, refusal.message);
  throw refusal;
}

/**
 * Re-claims the gate of a job resumed at boot; false when the job must not run. Its own gate
 * still there: it goes on as in one process. The gate lapsed meanwhile (the holder was down
 * longer than its heartbeat's expiry, so writes passed): a re-encrypt goes on (every object
 * reads whichever key sealed it; objects written meanwhile are sealed with the current one); a
 * migration that had begun copying is marked so its worker unwinds and fails (writes reached the
 * source after their keys were copied). Another job holds the bucket now: a re-encrypt fails, a
 * migration unwinds.
 */
export async function reclaim(
  fleet: MaintenanceFleet,
  store: JobsStore,
  job: JobRecord,
  audit: AuditFn,
): Promise<boolean> {
  const outcome = await fleet.claim(job);
  if (outcome === "own") return true;
  const state = job.state as Partial<MigrateState>;
  const copying = job.type === "migrate" && state.cursor !== null && state.cursor !== undefined;
  if (outcome === "created" && !copying) return true;
  audit("job_fleet_gate_lapsed", { job: job.id, bucket: job.scope.bucket, outcome });
  if (job.type === "migrate") {
    await store.update(job.id, { state: { ...job.state, gateLapsed: true } });
    return true;
  }
  await failUnrun(
    store,
    job.id,
    `Bucket "${job.scope.bucket}" was taken by another job while this one was down`,
  );
  return false;
}

/** Ends a queued job that must not run as failed (a queued job reaches it through running). */
async function failUnrun(store: JobsStore, id: string, error: string): Promise<void> {
  await store.update(id, { status: "running" });
  await store.update(id, { status: "failed", error, finishedAt: Date.now() });
}

/** The row of a local job still active, else null (the fleet gate's heartbeat reads it). */
export async function activeRow(store: JobsStore, id: string) {
  const job = await store.get(id);
  return job === null || TERMINAL.has(job.status) ? null : jobRow(job);
}
