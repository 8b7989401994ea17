/**
 * One run of a replication rule (scheduler or run-now; a preview is the same run with `dryRun`):
 * checks the destination (a maintenance write gate fails the run; a missing bucket is created,
 * since a `replication_target_only` bucket belongs to replication), resumes the walk from the
 * rule's cursor when it was stamped with the same scope, and judges the outcome per SPEC:
 * a listing that failed fails the run with a single failure row; a run whose every copy failed
 * is failed; some failed copies leave it succeeded with `errors` > 0 (the next run catches up).
 */
import type { ReplicationRule } from "../../config/mod.ts";
import type { RuleEnv } from "../rules/rule-env.ts";
import type { RunContext, RunOutcome } from "../rules/rule-model.ts";
import { ReconcileWalk } from "./reconcile-walk.ts";
import { Replicator } from "./replicator.ts";
import { ListingError } from "./side-reader.ts";
import { trackLive } from "../live-progress.ts";

/** The resume cursor in the rule's state: valid only for the scope it was stamped with. */
export interface ReplicationCursor {
  scope: string;
  after: string;
}

export async function reconcileRun(
  rule: ReplicationRule,
  env: RuleEnv,
  context: RunContext,
): Promise<RunOutcome> {
  const config = env.config();
  const { recorder, signal } = context;
  const sourceBucket = rule.source.bucket;
  const destinationBucket = rule.destination.bucket;
  const [sourceKind, destinationKind] = await Promise.all([
    env.backendKind(sourceBucket),
    env.backendKind(destinationBucket),
  ]);
  const replicator = new Replicator(
    rule,
    env,
    recorder,
    context.dryRun,
    sourceKind === "s3" || destinationKind === "s3",
  );
  const blocked = replicator.destinationBlocked();
  if (blocked !== null) {
    recorder.fail(destinationBucket, "", blocked);
    return { status: "failed", error: blocked };
  }
  await ensureBucket(env, destinationBucket, context.dryRun);
  const saved = context.state.cursor as ReplicationCursor | null | undefined;
  const scope = replicator.scope.stamp;
  const resumeAfter = !context.dryRun && saved?.scope === scope ? saved.after : undefined;
  const walk = new ReconcileWalk({
    env,
    replicator,
    batchSize: rule.batch_size,
    transfers: config.advanced.replication_transfers,
    dirConcurrency: config.storage.replication.dir_concurrency,
    signal,
    resumeAfter,
    checkpoint: (after) => context.saveState({ cursor: { scope, after } }),
  });
  // The row shows the walk's counters while it goes (live-progress.ts); a walk knows no total.
  const counters = recorder.counters;
  const untrack = trackLive(`replication:${rule.name}`, () => ({
    ...counters,
    phase: context.dryRun ? "preview" : "walk",
    objects_done: counters.objects_scanned,
    objects_failed: counters.errors,
    bytes_done: counters.bytes_affected,
    objects_total: null,
    bytes_total: null,
  }), () => context.clock.now());
  try {
    await walk.run();
  } catch (err) {
    if (signal.aborted || !(err instanceof ListingError)) throw err;
    recorder.fail(err.bucket, err.prefix, err);
    return { status: "failed", error: err.message };
  } finally {
    untrack();
  }
  // A finished walk: the next one starts from the top.
  await context.saveState({ cursor: null });
  const { attempted, failed } = replicator.tally;
  if (attempted > 0 && failed === attempted) {
    return { status: "failed", error: `Every copy failed (${failed})` };
  }
  return { status: "succeeded" };
}

/** Creates the destination bucket when it does not exist (a preview only notes it). */
export async function ensureBucket(env: RuleEnv, bucket: string, dryRun: boolean): Promise<void> {
  const objects = env.objects();
  const entry = await objects.backend.headBucket(bucket);
  if (entry === null && !dryRun) await objects.createBucket(bucket);
}
