import assert from "node:assert/strict";
import { HASH_A } from "../../tests/helpers/config-db.ts";
import { openConfigDb } from "../db/config-db.ts";
import { JobsStore } from "./jobs-store.ts";
import { ManualClock } from "./clock.ts";
import { emptyProgress, type JobRecord } from "./job-model.ts";
import { JobAborted, type JobOutcome, JobRunner, type JobWorker } from "./runner.ts";

async function withStore(fn: (store: JobsStore) => Promise<void>) {
  const dir = await Deno.makeTempDir({ prefix: "svc-runner-" });
  const db = await openConfigDb({ dir, passwordHash: HASH_A });
  try {
    await fn(new JobsStore(db));
  } finally {
    await db.close();
    await Deno.remove(dir, { recursive: true });
  }
}

const create = (store: JobsStore, bucket: string) =>
  store.createMaintenance({
    type: "test",
    scope: { bucket, prefix: "" },
    progress: emptyProgress("queued"),
    state: {},
    createdBy: "t",
  });

/** A worker that waits until released (or aborted), then returns `outcome`. */
function gatedWorker() {
  const releases = new Map<string, (outcome: JobOutcome) => void>();
  const seen: { id: string; cancelRequested: boolean }[] = [];
  const worker: JobWorker = ({ job, signal }) => {
    seen.push({ id: job.id, cancelRequested: job.cancelRequested });
    return new Promise((resolve, reject) => {
      releases.set(job.id, resolve);
      const onAbort = () => {
        const why = (signal.reason as JobAborted).why;
        if (why === "cancel") resolve({ status: "cancelled" });
        else reject(signal.reason);
      };
      if (signal.aborted) onAbort();
      else signal.addEventListener("abort", onAbort, { once: true });
    });
  };
  return { worker, releases, seen };
}

async function until(check: () => boolean) {
  for (let i = 0; i < 500 && !check(); i++) await new Promise((r) => setTimeout(r, 2));
  assert.ok(check(), "condition reached");
}

Deno.test("the runner runs jobs to their outcome, a few at a time", async () => {
  await withStore(async (store) => {
    const clock = new ManualClock();
    const { worker, releases } = gatedWorker();
    const ended: JobRecord[] = [];
    const runner = new JobRunner({
      store,
      clock,
      concurrency: 1,
      workerFor: () => worker,
      onEnd: (job) => ended.push(job),
    });
    const a = await create(store, "a");
    const b = await create(store, "b");
    runner.enqueue(a.id);
    runner.enqueue(b.id);
    runner.enqueue(a.id); // already queued or running: once
    await until(() => releases.has(a.id));
    assert.equal((await store.get(a.id))?.status, "running");
    assert.equal((await store.get(b.id))?.status, "queued", "concurrency 1: b waits");
    releases.get(a.id)!({ status: "succeeded" });
    await until(() => releases.has(b.id));
    releases.get(b.id)!({ status: "failed", error: "3 objects failed" });
    await runner.idle();
    const done = await store.get(b.id);
    assert.equal(done?.status, "failed");
    assert.equal(done?.error, "3 objects failed");
    assert.equal(done?.finishedAt, clock.now());
    assert.deepEqual(ended.map((j) => [j.id, j.status]), [[a.id, "succeeded"], [b.id, "failed"]]);
  });
});

Deno.test("a worker that throws fails its job with the message", async () => {
  await withStore(async (store) => {
    const runner = new JobRunner({
      store,
      clock: new ManualClock(),
      concurrency: 2,
      workerFor: () => () => Promise.reject(new Error("backend unreachable")),
    });
    const job = await create(store, "a");
    runner.enqueue(job.id);
    await runner.idle();
    const failed = await store.get(job.id);
    assert.equal(failed?.status, "failed");
    assert.equal(failed?.error, "backend unreachable");
  });
});

Deno.test("cancel aborts a running job and starts a queued one at once to unwind", async () => {
  await withStore(async (store) => {
    const { worker, releases, seen } = gatedWorker();
    const runner = new JobRunner({
      store,
      clock: new ManualClock(),
      concurrency: 1,
      workerFor: () => worker,
    });
    const a = await create(store, "a");
    const b = await create(store, "b");
    runner.enqueue(a.id);
    runner.enqueue(b.id);
    await until(() => releases.has(a.id));
    // b is queued behind a: the service stores the request, the runner starts b now.
    await store.update(b.id, { status: "cancelling", cancelRequested: true });
    assert.equal(runner.cancel(b.id), true);
    await until(() => seen.some((s) => s.id === b.id));
    assert.deepEqual(seen.find((s) => s.id === b.id), { id: b.id, cancelRequested: true });
    await store.update(a.id, { status: "cancelling", cancelRequested: true });
    assert.equal(runner.cancel(a.id), true);
    await runner.idle();
    assert.equal((await store.get(a.id))?.status, "cancelled");
    assert.equal((await store.get(b.id))?.status, "cancelled");
    assert.equal(runner.cancel("maintenance:99"), false);
  });
});

Deno.test("stop leaves a running job running; the next boot re-queues it", async () => {
  await withStore(async (store) => {
    const { worker, releases } = gatedWorker();
    const runner = new JobRunner({
      store,
      clock: new ManualClock(),
      concurrency: 1,
      workerFor: () => worker,
    });
    const job = await create(store, "a");
    runner.enqueue(job.id);
    await until(() => releases.has(job.id));
    await runner.stop();
    assert.equal((await store.get(job.id))?.status, "running");
    runner.enqueue(job.id); // a stopped runner takes nothing new
    assert.equal(runner.isRunning(job.id), false);
    const resumed = await store.requeueUnfinished();
    assert.deepEqual(resumed.map((j) => [j.id, j.status]), [[job.id, "queued"]]);
  });
});
