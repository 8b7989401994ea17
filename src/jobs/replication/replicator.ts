/**
 * Applies the planner's decision for one key of one rule: copies the logical object (each side
 * applies its own compression and encryption; content type, user metadata, tags and a multipart
 * ETag travel with it), or deletes at the destination after a source HEAD confirmed the key is
 * gone. Shared by the full reconcile and the event consumer; it reports through a recorder
 * (counters, candidates, per-object failures) and never throws for one key's trouble.
 */
import { SvcError } from "../../lib/mod.ts";
import type { ReplicationRule } from "../../config/mod.ts";
import type { WriteContext } from "../../objects/mod.ts";
import type { ObjectInfo } from "../../storage/mod.ts";
import type { RuleEnv } from "../rules/rule-env.ts";
import type { RunRecorder } from "../rules/rule-model.ts";
import { type Plan, plan, type PlanOptions, type SideMeta } from "./replication-planner.ts";
import { RuleScope } from "./replication-scope.ts";

/** The write context of every replication write (the outbox records it as such). */
export const REPLICATION_WRITE: WriteContext = {
  operation: "replication",
  principal: null,
  sourceIp: null,
  requestId: null,
};

/** Copies attempted and how many failed: a run whose every copy failed is a failed run. */
export interface Tally {
  attempted: number;
  failed: number;
}

export class Replicator {
  readonly scope: RuleScope;
  readonly planOptions: PlanOptions;
  readonly tally: Tally = { attempted: 0, failed: 0 };

  constructor(
    readonly rule: ReplicationRule,
    readonly env: RuleEnv,
    readonly recorder: RunRecorder,
    readonly dryRun: boolean,
    wholeSeconds: boolean,
  ) {
    this.scope = new RuleScope(rule);
    this.planOptions = {
      conflict: rule.conflict,
      replicateDeletes: rule.replicate_deletes,
      wholeSeconds,
    };
  }

  /** Why the destination takes no writes now (a maintenance job holds it), or null. */
  destinationBlocked(): string | null {
    const holder = this.env.gatedBy(this.scope.destinationBucket);
    return holder === undefined
      ? null
      : `The destination bucket "${this.scope.destinationBucket}" is held by maintenance job ${holder}; replication skips it until the job ends`;
  }

  /**
   * Settles a key without any I/O when the plan is a skip (the common case of a reconcile with
   * little to do: no promise, no closure per key). Returns false when `apply` must act.
   */
  skipNow(source: ObjectInfo | null, destination: SideMeta | null): boolean {
    if (plan(source?.meta ?? null, destination, this.planOptions).action !== "skip") return false;
    this.recorder.counters.objects_scanned++;
    this.recorder.counters.objects_skipped++;
    return true;
  }

  /**
   * Decides and acts for source key `key` given both sides' metadata (null: absent). Returns the
   * plan. `signal` interrupts a copy mid-object.
   */
  async apply(
    key: string,
    source: ObjectInfo | null,
    destination: SideMeta | null,
    signal?: AbortSignal,
  ): Promise<Plan> {
    const counters = this.recorder.counters;
    counters.objects_scanned++;
    const decided = plan(source?.meta ?? null, destination, this.planOptions);
    if (decided.action === "skip") {
      counters.objects_skipped++;
      return decided;
    }
    const target = this.scope.toDestination(key);
    const bucket = this.scope.sourceBucket;
    const blocked = this.destinationBlocked();
    if (decided.action === "copy") {
      this.tally.attempted++;
      if (blocked) return this.#failed(key, blocked, decided);
      if (!this.dryRun) {
        try {
          await this.env.objects().copy(
            { bucket, key },
            { bucket: this.scope.destinationBucket, key: target },
            { metadata: null, signal, context: REPLICATION_WRITE },
          );
        } catch (err) {
          if (signal?.aborted) throw signal.reason;
          return this.#failed(key, copyError(key, err), decided);
        }
      }
      this.#affected(key, "copy", source);
      return decided;
    }
    // delete: only once a source HEAD says the key is gone (an error keeps the destination).
    let present: ObjectInfo | null;
    try {
      present = await this.env.objects().backend.headObject(bucket, key);
      this.env.metrics.replication.headCalls.inc();
    } catch (err) {
      counters.objects_skipped++;
      this.recorder.fail(
        bucket,
        key,
        `Source HEAD failed; the destination copy is kept: ${
          err instanceof Error ? err.message : String(err)
        }`,
      );
      return { action: "skip", reason: "source HEAD failed" };
    }
    if (present !== null) {
      counters.objects_skipped++;
      return { action: "skip", reason: "the source exists again" };
    }
    if (blocked) return this.#failed(key, blocked, decided);
    if (!this.dryRun) {
      try {
        await this.env.objects().deleteOne(this.scope.destinationBucket, target, REPLICATION_WRITE);
      } catch (err) {
        return this.#failed(key, err, decided);
      }
    }
    this.#affected(key, "delete", null);
    return decided;
  }

  #affected(key: string, action: "copy" | "delete", source: ObjectInfo | null): void {
    const counters = this.recorder.counters;
    counters.objects_affected++;
    counters.bytes_affected += source?.meta.size ?? 0;
    this.recorder.candidate({
      bucket: this.scope.sourceBucket,
      key,
      action,
      destination_bucket: this.scope.destinationBucket,
      destination_key: this.scope.toDestination(key),
      created_at: source ? new Date(source.meta.lastModified).toISOString() : null,
      size: source?.meta.size ?? 0,
    });
  }

  #failed(key: string, error: unknown, decided: Plan): Plan {
    if (decided.action === "copy") this.tally.failed++;
    this.recorder.fail(this.scope.sourceBucket, key, error);
    return decided;
  }
}

/** A copy's failure in words: a source gone mid-run says so. */
function copyError(key: string, err: unknown): string {
  if (err instanceof SvcError && err.code === "NoSuchKey") {
    return `The source object "${key}" was deleted during the run`;
  }
  return err instanceof Error ? err.message : String(err);
}
