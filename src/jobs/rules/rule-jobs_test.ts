import assert from "node:assert/strict";
import { HASH_A } from "../../../tests/helpers/config-db.ts";
import { buildConfig } from "../../config/load.ts";
import type { Config } from "../../config/schema/schema.ts";
import { type ConfigDb, openConfigDb } from "../../db/config-db.ts";
import { JobsStore } from "../jobs-store.ts";
import { RuleStore } from "./rule-store.ts";
import { systemClock } from "../clock.ts";
import { DbLeases } from "./leases.ts";
import { RuleJobs, type RuleJobsOptions } from "./rule-jobs.ts";
import type { RuleDriver, RunContext, RunOutcome } from "./rule-model.ts";
import { lifecycleSettings } from "./rule-config.ts";

type Rule = { name: string; enabled: boolean };
type Step = (context: RunContext) => Promise<RunOutcome>;

function configWith(rules: Rule[], enabled = true): Config {
  return buildConfig({
    access: { authentication: "none" },
    storage: {
      lifecycle: {
        enabled,
        rules: rules.map((r) => ({ ...r, bucket: "b", action: "delete", expire_after: "1d" })),
      },
    },
  }, { env: {} }).config;
}

/** A lifecycle-shaped driver whose run is whatever the test sets in `step`. */
function fakeDriver(holder: { step: Step }): RuleDriver<Rule> {
  return {
    kind: "lifecycle",
    settings: (config) => ({ ...lifecycleSettings(config), heartbeatMs: 20, leaseTtlMs: 60_000 }),
    rules: (config) => config.storage.lifecycle.rules ?? [],
    type: () => "delete",
    scope: () => ({ bucket: "b", prefix: "" }),
    intervalMs: () => 3_600_000,
    run: (_rule, context) => holder.step(context),
  };
}

async function withJobs(
  fn: (t: {
    jobs: RuleJobs<Rule>;
    store: RuleStore;
    holder: { step: Step };
    setConfig: (config: Config) => void;
    db: ConfigDb;
    options: RuleJobsOptions;
  }) => Promise<void>,
) {
  const dir = await Deno.makeTempDir({ prefix: "svc-rule-jobs-" });
  const db = await openConfigDb({ dir, passwordHash: HASH_A });
  try {
    const store = new RuleStore(db);
    let config = configWith([{ name: "r1", enabled: true }, { name: "r2", enabled: true }]);
    const holder: { step: Step } = { step: () => Promise.resolve({ status: "succeeded" }) };
    const leases = new DbLeases(store, "me");
    const options: RuleJobsOptions = {
      store,
      config: () => config,
      clock: systemClock,
      leases: () => leases,
      audit: () => {},
    };
    const jobs = new RuleJobs(fakeDriver(holder), options);
    await fn({ jobs, store, holder, setConfig: (next) => config = next, db, options });
    await jobs.stop();
  } finally {
    await db.close();
    await Deno.remove(dir, { recursive: true });
  }
}

Deno.test("rule rows follow the config; a removed rule loses its row and history", async () => {
  await withJobs(async ({ jobs, store, setConfig, db }) => {
    await jobs.sync();
    assert.equal((await store.row("lifecycle:r1"))?.status, "idle");
    await jobs.runNow("r2", "admin");
    setConfig(configWith([{ name: "r1", enabled: true }]));
    await jobs.sync();
    assert.equal(await store.row("lifecycle:r2"), null);
    assert.deepEqual(await new JobsStore(db).runs("lifecycle:r2", 10), []);
    assert.notEqual(await store.row("lifecycle:r1"), null);
  });
});

Deno.test("run-now records a run, counters, capped failures and the next due time", async () => {
  await withJobs(async ({ jobs, store, holder, db }) => {
    holder.step = async (context) => {
      context.recorder.counters.objects_scanned = 7;
      context.recorder.counters.objects_affected = 2;
      for (let i = 0; i < 3; i++) context.recorder.fail("b", `k${i}`, new Error(`boom ${i}`));
      await context.saveState({ cursor: "k9" });
      return { status: "succeeded" };
    };
    const report = await jobs.runNow("r1", "admin");
    assert.equal(report.status, "succeeded");
    assert.equal(report.objects_scanned, 7);
    assert.equal(report.errors, 3);
    assert.equal(report.failures.length, 3);
    assert.equal(typeof report.run_id, "number");
    const runs = await new JobsStore(db).runs("lifecycle:r1", 10);
    assert.equal(runs.length, 1);
    assert.equal(runs[0].status, "succeeded");
    assert.equal(runs[0].counters.objects_affected, 2);
    const failures = await new JobsStore(db).failures("lifecycle:r1", 10);
    assert.deepEqual(failures.map((f) => f.key), ["k2", "k1", "k0"]);
    const row = await store.row("lifecycle:r1");
    assert.equal(row?.status, "succeeded");
    assert.equal(row?.state.cursor, "k9");
    assert.ok(Number(row?.state.next_due_at) > Date.now() + 3_500_000);
    assert.equal((row?.state.lifetime as Record<string, number>).objects_scanned, 7);
    // The lease went back: another runner may take it now.
    assert.equal(await store.lease("lifecycle:r1"), null);
  });
});

/** Resolves once `ready()` holds (polled; a loaded machine may take a while to start a run). */
async function until(ready: () => boolean): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (!ready()) {
    if (Date.now() > deadline) throw new Error("Timed out waiting for the run to start");
    await new Promise((r) => setTimeout(r, 5));
  }
}

Deno.test("a rule runs once at a time: running here or leased elsewhere is 409", async () => {
  await withJobs(async ({ jobs, store, holder }) => {
    let release: (() => void) | undefined;
    holder.step = () => new Promise((resolve) => release = () => resolve({ status: "succeeded" }));
    const first = jobs.runNow("r1", "admin");
    await assert.rejects(() => jobs.runNow("r1", "admin"), /already running/);
    await until(() => release !== undefined);
    release!();
    await first;
    const other = new DbLeases(store, "other");
    const lease = await other.acquire("lifecycle:r1", 60_000);
    assert.ok(lease);
    holder.step = () => Promise.resolve({ status: "succeeded" });
    await assert.rejects(() => jobs.runNow("r1", "admin"), /leased by another runner \(other/);
  });
});

Deno.test("kill interrupts a run: cancelled; a lost lease fails it with a failure row", async () => {
  await withJobs(async ({ jobs, store, holder, db }) => {
    let started = 0;
    holder.step = (context) =>
      new Promise((_, reject) => {
        started++;
        context.signal.addEventListener("abort", () => reject(context.signal.reason));
      });
    const killed = jobs.runNow("r1", "admin");
    await until(() => started === 1);
    jobs.kill("r1", "alice");
    const report = await killed;
    assert.equal(report.status, "cancelled");
    assert.match(report.error ?? "", /killed by alice/);
    assert.throws(() => jobs.kill("r1", "alice"), /no run in progress/);

    const lost = jobs.runNow("r2", "admin");
    await until(() => started === 2);
    // Another runner took the lease behind our back (as after an expiry).
    await db.execute("UPDATE job_leases SET token = 'stolen', holder = 'other'");
    const report2 = await lost;
    assert.equal(report2.status, "failed");
    assert.match(report2.error ?? "", /lease was lost/);
    const failures = await new JobsStore(db).failures("lifecycle:r2", 10);
    assert.match(failures[0].message, /lease was lost/);
    assert.equal((await store.row("lifecycle:r2"))?.status, "failed");
  });
});

Deno.test("preview changes nothing; the tick runs due, unpaused, enabled rules only", async () => {
  await withJobs(async ({ jobs, store, holder, db, setConfig }) => {
    let runs = 0;
    holder.step = async (context) => {
      runs++;
      await context.saveState({ touched: true });
      context.recorder.fail("b", "x", "nope");
      return { status: "succeeded" };
    };
    const preview = await jobs.preview("r1");
    assert.equal(preview.run_id, undefined);
    assert.equal(preview.errors, 1);
    assert.deepEqual(await new JobsStore(db).runs("lifecycle:r1", 10), []);
    assert.deepEqual(await new JobsStore(db).failures("lifecycle:r1", 10), []);
    assert.equal((await store.row("lifecycle:r1"))?.state.touched, undefined);

    await jobs.setPaused("r2", true);
    runs = 0;
    await jobs.tick();
    await new Promise((r) => setTimeout(r, 50));
    assert.equal(runs, 1, "r1 ran, r2 is paused");
    await jobs.tick(); // r1 is not due again for an hour
    await new Promise((r) => setTimeout(r, 50));
    assert.equal(runs, 1);
    await assert.rejects(() => jobs.runNow("r2", "admin"), /the rule is paused/);
    setConfig(configWith([{ name: "r1", enabled: true }, { name: "r2", enabled: true }], false));
    await assert.rejects(() => jobs.runNow("r1", "admin"), /lifecycle is disabled/);
  });
});

Deno.test("boot turns runs a dead process left running into failed with a diagnostic", async () => {
  await withJobs(async ({ jobs, store, db }) => {
    await jobs.sync();
    const runId = await store.beginRun("lifecycle:r1", "scheduler", Date.now());
    assert.deepEqual(await store.failAbandonedRuns(Date.now()), [runId]);
    const runs = await new JobsStore(db).runs("lifecycle:r1", 10);
    assert.equal(runs[0].status, "failed");
    const failures = await new JobsStore(db).failures("lifecycle:r1", 10);
    assert.match(failures[0].message, /abandoned/);
    assert.equal((await store.row("lifecycle:r1"))?.status, "failed");
  });
});

Deno.test("a lease whose release failed is taken over by its holder at once, not by others", async () => {
  await withJobs(async ({ jobs, store }) => {
    // What a release that failed (SQLITE_FULL) leaves: this process's unexpired lease.
    const stale = await new DbLeases(store, "me").acquire("lifecycle:r1", 60_000);
    assert.ok(stale);
    assert.equal((await store.lease("lifecycle:r1"))?.holder, "me");
    assert.equal(await new DbLeases(store, "other").acquire("lifecycle:r1", 60_000), null);
    const report = await jobs.runNow("r1", "admin");
    assert.equal(report.status, "succeeded", "run-now takes the lease over, no lease_ttl wait");
    assert.equal(await store.renewLease("lifecycle:r1", stale.token, 60_000), false, "new token");
    assert.equal(await store.lease("lifecycle:r1"), null, "released at the end of the run");
  });
});
