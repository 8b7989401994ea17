/**
 * For the lifecycle unit tests: a real filesystem-backed object service whose Last-Modified
 * stamps come from a ManualClock, the RuleEnv around it (events and gates recorded in memory),
 * and a run of one rule through the real recorder.
 */
import type { RuleEnv } from "../jobs/rules/rule-env.ts";
import { detachedRuleEnv } from "./rule-env-fixtures.ts";
import { buildConfig } from "../config/load.ts";
import type { LifecycleRule } from "../config/schema/schema-jobs.ts";
import type { ObjectEvent } from "../events/event.ts";
import { terminateHashWorkers } from "../body/body-digest.ts";
import { ObjectService } from "../objects/object-service.ts";
import { FilesystemBackend } from "../storage/fs/filesystem-backend.ts";
import { ManualClock } from "../jobs/clock.ts";
import type { RunOutcome, RunReport } from "../jobs/rules/rule-model.ts";
import { RunRecorder } from "../jobs/rules/run-recorder.ts";
import { lifecycleDriver } from "../jobs/lifecycle/lifecycle-driver.ts";

export const DAY = 86_400_000;

export interface LifecycleFixture {
  objects: ObjectService;
  clock: ManualClock;
  env: RuleEnv;
  events: ObjectEvent[];
  gates: Map<string, string>;
  /** PUTs `key` (`size` bytes) stamped `ageMs` before the clock's now. */
  put(bucket: string, key: string, ageMs: number, size?: number): Promise<void>;
  keys(bucket: string): Promise<string[]>;
  /** Runs (or previews) `rule` now: the report the scheduler would answer. */
  run(
    rule: Record<string, unknown>,
    options?: { dryRun?: boolean; retainCap?: number; signal?: AbortSignal },
  ): Promise<RunReport>;
}

/** A rule as the config schema completes it. */
export function ruleOf(rule: Record<string, unknown>): LifecycleRule {
  const config = buildConfig({
    access: { authentication: "none" },
    storage: { lifecycle: { enabled: true, rules: [{ name: "r", enabled: true, ...rule }] } },
  }, { env: {} }).config;
  return config.storage.lifecycle.rules![0];
}

export async function withLifecycle(
  test: (fixture: LifecycleFixture) => Promise<void>,
  buckets: string[] = ["b"],
): Promise<void> {
  const dir = await Deno.makeTempDir({ prefix: "svc-lifecycle-" });
  const clock = new ManualClock();
  let stamp = clock.now();
  const objects = new ObjectService(
    await FilesystemBackend.open(dir),
    () => ({ maxObjectSize: 1 << 30 }),
    () => stamp,
  );
  const events: ObjectEvent[] = [];
  const gates = new Map<string, string>();
  const env = detachedRuleEnv(objects, clock, {
    gatedBy: (bucket) => gates.get(bucket),
    recordEvent: (event) => void events.push(event),
  });
  try {
    for (const bucket of buckets) await objects.createBucket(bucket);
    await test({
      objects,
      clock,
      env,
      events,
      gates,
      async put(bucket, key, ageMs, size = 10) {
        stamp = clock.now() - ageMs;
        await objects.put(bucket, key, new Blob([new Uint8Array(size).fill(7)]).stream(), {
          metadata: { userMeta: {}, headers: {} },
          contentLength: size,
        });
        stamp = clock.now();
      },
      async keys(bucket) {
        const page = await objects.listObjects(bucket, { prefix: "", maxKeys: 1000 });
        return page.objects.map((o) => o.key);
      },
      async run(rule, options = {}) {
        const dryRun = options.dryRun ?? false;
        const recorder = new RunRecorder(100, () => clock.now());
        const driver = lifecycleDriver(env, { retainCap: options.retainCap });
        let outcome: RunOutcome;
        try {
          outcome = await driver.run(ruleOf(rule), {
            trigger: dryRun ? "preview" : "run-now",
            dryRun,
            signal: options.signal ?? new AbortController().signal,
            clock,
            recorder,
            state: {},
            saveState: () => Promise.resolve(),
          });
        } catch (err) {
          outcome = { status: "cancelled", error: (err as Error).message };
        }
        return {
          ...recorder.counters,
          status: outcome.status,
          error: outcome.error ?? null,
          candidates: recorder.candidates,
          failures: recorder.failures,
        };
      },
    });
  } finally {
    terminateHashWorkers();
    await Deno.remove(dir, { recursive: true });
  }
}
