/**
 * One run of one lifecycle rule (a preview is the same walk with `dryRun`: it decides
 * everything and changes nothing, so its candidates are what the run after it does, as long as
 * the objects and the clock stay put).
 *
 * The bucket is listed under the rule's prefix in pages of `batch_size`, one page in memory at a
 * time; retain-newest alone collects its qualifying candidates (bounded by the cap) to rank them.
 * The abort signal (kill, shutdown, lost lease) is honoured between objects and inside a copy.
 * A bucket held by a maintenance job's write gate (re-encrypt, migrate) is not touched: the run
 * stops with a failure row, and so it does when the gate engages between two pages. Ages are
 * judged against one `now` taken at the start of the run (the jobs clock).
 *
 * Counters: every listed object is scanned; skipped are the always-skipped keys, keys younger
 * than `expire_after`, the keys retain-newest keeps, and objects that changed or went between
 * the listing and the action; affected (and their bytes) are the objects expired or transitioned;
 * errors the per-object failures (the run goes on). retain-newest adds `objects_ignored` (failing
 * `qualify`) and `objects_protected`. A run whose every attempted action failed is `failed`.
 */
import type { LifecycleRule } from "../../config/mod.ts";
import type { ObjectInfo } from "../../storage/mod.ts";
import type { RuleEnv } from "../rules/rule-env.ts";
import type { RunContext, RunOutcome } from "../rules/rule-model.ts";
import { messageOf } from "../rules/run-recorder.ts";
import { expireObject, transitionObject } from "./lifecycle-actions.ts";
import { destinationKey, isOwnDestination, type LifecyclePlan, planOf } from "./lifecycle-plan.ts";
import { keyFilter } from "./key-filter.ts";
import { decideRetain, qualifies, slim } from "./retain-newest.ts";
import { trackLive } from "../live-progress.ts";

export interface LifecycleRunOptions {
  env: RuleEnv;
  /** retain-newest's candidate cap (SPEC: 200000). */
  retainCap: number;
}

/** The run cannot go on (gate, listing, cap): one failure row, status failed. */
class RunStopped extends Error {
  constructor(readonly bucket: string, message: string) {
    super(message);
  }
}

function gateMessage(bucket: string, job: string): string {
  return `Bucket "${bucket}" is held by maintenance job ${job} (writes gated); the rule ` +
    "skipped it this run";
}

function checkGates(env: RuleEnv, plan: LifecyclePlan): void {
  for (const bucket of [plan.bucket, ...(plan.transition ? [plan.transition.bucket] : [])]) {
    const job = env.gatedBy(bucket);
    if (job !== undefined) throw new RunStopped(bucket, gateMessage(bucket, job));
  }
}

/** The rule's listing, a page at a time (gates checked before each page). */
async function* pages(
  env: RuleEnv,
  plan: LifecyclePlan,
  signal: AbortSignal,
): AsyncGenerator<ObjectInfo[]> {
  let startAfter: string | undefined;
  for (;;) {
    signal.throwIfAborted();
    checkGates(env, plan);
    let page;
    try {
      page = await env.objects().listObjects(plan.bucket, {
        prefix: plan.prefix,
        startAfter,
        maxKeys: plan.batchSize,
      });
    } catch (err) {
      throw new RunStopped(plan.bucket, `Listing "${plan.bucket}" failed: ${messageOf(err)}`);
    }
    yield page.objects;
    if (!page.isTruncated || page.nextStartAfter === undefined) return;
    startAfter = page.nextStartAfter;
  }
}

export async function runLifecycle(
  rule: LifecycleRule,
  context: RunContext,
  options: LifecycleRunOptions,
): Promise<RunOutcome> {
  const { env } = options;
  const plan = planOf(rule);
  const { recorder, signal, dryRun } = context;
  const counters = recorder.counters;
  const now = context.clock.now();
  const metric = (outcome: "done" | "failed", bytes = 0) => {
    if (dryRun) return;
    env.metrics.lifecycle.objects.inc({ action: plan.action, outcome });
    if (bytes > 0) env.metrics.lifecycle.bytes.inc({ action: plan.action }, bytes);
  };
  let attempted = 0;
  /** Acts on one decided object (or, in a preview, records that it would). */
  const act = async (info: ObjectInfo) => {
    signal.throwIfAborted();
    attempted++;
    const destination = plan.transition
      ? {
        destination_bucket: plan.transition.bucket,
        destination_key: destinationKey(plan, info.key),
      }
      : {};
    let done = true;
    if (!dryRun) {
      try {
        done = plan.action === "transition"
          ? await transitionObject(env, plan, info, now, signal)
          : await expireObject(env, plan, info, now);
      } catch (err) {
        if (signal.aborted) throw signal.reason;
        recorder.fail(plan.bucket, info.key, err);
        metric("failed");
        return;
      }
    }
    if (!done) {
      counters.objects_skipped++;
      return;
    }
    counters.objects_affected++;
    counters.bytes_affected += info.meta.size;
    metric("done", info.meta.size);
    recorder.candidate({
      bucket: plan.bucket,
      key: info.key,
      action: plan.action,
      ...destination,
      created_at: new Date(info.meta.lastModified).toISOString(),
      size: info.meta.size,
    });
  };

  const skip = keyFilter(rule);
  // The row shows these while the run goes (live-progress.ts): the walk knows no total, except
  // retain-newest's deletions once it has ranked its candidates.
  let phase = dryRun ? "preview" : "scan";
  let toAct: number | null = null;
  const untrack = trackLive(`lifecycle:${rule.name}`, () => ({
    ...counters,
    phase,
    objects_done: toAct === null
      ? counters.objects_scanned
      : Math.max(0, attempted - counters.errors),
    objects_failed: counters.errors,
    bytes_done: counters.bytes_affected,
    objects_total: toAct,
    bytes_total: null,
  }), () => context.clock.now());
  try {
    if (plan.transition) {
      const t = plan.transition;
      if (t.bucket === plan.bucket && t.prefix === plan.prefix) {
        throw new RunStopped(plan.bucket, "The transition's destination is its own source");
      }
      checkGates(env, plan);
      try {
        await env.objects().headBucket(t.bucket);
      } catch (err) {
        throw new RunStopped(t.bucket, `Destination bucket "${t.bucket}": ${messageOf(err)}`);
      }
    }
    if (plan.retain) {
      const retain = plan.retain;
      counters.objects_ignored = 0;
      counters.objects_protected = 0;
      const candidates: ObjectInfo[] = [];
      for await (const page of pages(env, plan, signal)) {
        for (const info of page) {
          counters.objects_scanned++;
          if (skip(info.key) !== null) counters.objects_skipped++;
          else if (!qualifies(retain, info, now)) counters.objects_ignored++;
          else if (candidates.push(slim(info)) > options.retainCap) {
            throw new RunStopped(
              plan.bucket,
              `More than ${options.retainCap} retain-newest candidates under ` +
                `"${plan.bucket}/${plan.prefix}"; the rule does nothing (narrow its prefix or ` +
                "qualify filters)",
            );
          }
        }
      }
      const decision = decideRetain(retain, candidates, now);
      counters.objects_skipped += decision.keep.length;
      counters.objects_protected = decision.protect.length;
      phase = dryRun ? "preview" : "delete";
      toAct = decision.remove.length;
      for (const info of decision.remove) await act(info);
    } else {
      for await (const page of pages(env, plan, signal)) {
        for (const info of page) {
          signal.throwIfAborted();
          counters.objects_scanned++;
          const young = plan.expireAfterMs !== null &&
            now - info.meta.lastModified < plan.expireAfterMs;
          if (skip(info.key) !== null || isOwnDestination(plan, info.key) || young) {
            counters.objects_skipped++;
            continue;
          }
          await act(info);
        }
      }
    }
  } catch (err) {
    if (!(err instanceof RunStopped)) throw err;
    recorder.fail(err.bucket, "", err);
    return { status: "failed", error: err.message };
  } finally {
    untrack();
  }
  if (attempted > 0 && counters.objects_affected === 0 && counters.errors > 0) {
    return {
      status: "failed",
      error: `Every action of the run failed (${counters.errors}); see the failures`,
    };
  }
  return { status: "succeeded", error: null };
}
