import assert from "node:assert/strict";
import { HASH_A } from "../../tests/helpers/config-db.ts";
import { emptyProgress } from "../jobs/job-model.ts";
import { type ConfigDb, openConfigDb } from "../db/config-db.ts";
import { BucketBusyError, JobsStore, JobStateError } from "./jobs-store.ts";

async function withStore(
  fn: (store: JobsStore, db: ConfigDb) => Promise<void>,
  options: { maxFailures?: number } = {},
) {
  const dir = await Deno.makeTempDir({ prefix: "svc-jobs-store-" });
  let db = await openConfigDb({ dir, passwordHash: HASH_A });
  try {
    let clock = 1000;
    await fn(new JobsStore(db, { now: () => clock++, ...options }), db);
    // Rows survive a reopen (the restart the boot re-queue relies on).
    await db.close();
    db = await openConfigDb({ dir, passwordHash: HASH_A });
  } finally {
    await db.close();
    await Deno.remove(dir, { recursive: true });
  }
}

const job = (bucket: string) => ({
  type: "migrate",
  scope: { bucket, prefix: "", target: "remote" },
  progress: emptyProgress("queued"),
  state: { cursor: null },
  createdBy: "$bootstrap",
});

Deno.test("maintenance ids count up and one active job per bucket", async () => {
  await withStore(async (store) => {
    const first = await store.createMaintenance(job("a"));
    assert.equal(first.id, "maintenance:1");
    assert.equal(first.status, "queued");
    assert.deepEqual(first.scope, { bucket: "a", prefix: "", target: "remote" });
    await assert.rejects(() => store.createMaintenance(job("a")), BucketBusyError);
    const second = await store.createMaintenance(job("b"));
    assert.equal(second.id, "maintenance:2");
    assert.equal((await store.activeForBucket("a"))?.id, "maintenance:1");
    // Once the first ends, the bucket takes a new job, with a new number.
    await store.update(first.id, { status: "running", startedAt: 5 });
    await store.update(first.id, { status: "succeeded", finishedAt: 6 });
    assert.equal(await store.activeForBucket("a"), null);
    assert.equal((await store.createMaintenance(job("a"))).id, "maintenance:3");
    assert.deepEqual((await store.list()).map((j) => j.id), [
      "maintenance:3",
      "maintenance:2",
      "maintenance:1",
    ]);
  });
});

Deno.test("status changes follow the transition table", async () => {
  await withStore(async (store) => {
    const { id } = await store.createMaintenance(job("a"));
    await assert.rejects(() => store.update(id, { status: "succeeded" }), JobStateError);
    const running = await store.update(id, { status: "running", state: { cursor: "k1" } });
    assert.deepEqual(running.state, { cursor: "k1" });
    await assert.rejects(() => store.update(id, { status: "idle" }), JobStateError);
    await store.update(id, { status: "cancelling", cancelRequested: true });
    const done = await store.update(id, { status: "cancelled" }, ["cancelling"]);
    assert.equal(done.status, "cancelled");
    assert.equal(done.cancelRequested, true);
    // A maintenance one-off never leaves a terminal status.
    await assert.rejects(() => store.update(id, { status: "queued" }), JobStateError);
    await assert.rejects(() => store.update("maintenance:99", {}), /does not exist/);
  });
});

Deno.test("boot re-queues running and cancelling jobs, keeps a requested cancel", async () => {
  await withStore(async (store) => {
    const a = await store.createMaintenance(job("a"));
    const b = await store.createMaintenance(job("b"));
    const c = await store.createMaintenance(job("c"));
    await store.update(a.id, { status: "running" });
    await store.update(b.id, { status: "running" });
    await store.update(b.id, { status: "cancelling", cancelRequested: true });
    await store.update(c.id, { status: "running" });
    await store.update(c.id, { status: "failed", error: "boom" });
    const resumed = await store.requeueUnfinished();
    assert.deepEqual(resumed.map((j) => [j.id, j.status, j.cancelRequested]), [
      [a.id, "queued", false],
      [b.id, "queued", true],
    ]);
    assert.equal((await store.get(c.id))?.status, "failed");
    const counts = await store.counts();
    assert.deepEqual(
      counts.sort((x, y) => x.status.localeCompare(y.status)),
      [
        { kind: "maintenance", status: "failed", count: 1 },
        { kind: "maintenance", status: "queued", count: 2 },
      ],
    );
  });
});

Deno.test("failures are kept newest first, bounded per job", async () => {
  await withStore(async (store) => {
    const { id } = await store.createMaintenance(job("a"));
    for (let i = 0; i < 5; i++) {
      await store.addFailure({
        jobId: id,
        runId: null,
        bucket: "a",
        key: `k${i}`,
        message: `failed ${i}`,
        occurredAt: i,
      });
    }
    await store.addFailure({
      jobId: "maintenance:77",
      runId: null,
      bucket: "z",
      key: "other",
      message: "x",
      occurredAt: 9,
    });
    const kept = await store.failures(id, 10);
    assert.deepEqual(kept.map((f) => f.key), ["k4", "k3", "k2"]);
    assert.deepEqual((await store.failures(id, 1)).map((f) => f.message), ["failed 4"]);
    assert.equal((await store.failures("maintenance:77", 10)).length, 1);
    assert.deepEqual(await store.runs(id, 10), []);
  }, { maxFailures: 3 });
});
