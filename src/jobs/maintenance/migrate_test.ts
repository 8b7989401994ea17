import assert from "node:assert/strict";
import { HASH_A } from "../../../tests/helpers/config-db.ts";
import { openConfigDb } from "../../db/config-db.ts";
import { JobsStore } from "../jobs-store.ts";
import { BucketWriteGate } from "../../s3/write-gate.ts";
import type { Backend } from "../../storage/backend.ts";
import { FilesystemBackend } from "../../storage/fs/filesystem-backend.ts";
import { metaFor, randomBytes } from "../../testing/object-fixtures.ts";
import type { Clock } from "../clock.ts";
import { emptyProgress, jobRow } from "../job-model.ts";
import { JobRunner } from "../runner.ts";
import type { MaintenanceDeps } from "./maintenance-deps.ts";
import { type MigrateState, migrateWorker } from "./migrate.ts";
import { copyStoredObject, storedDigest } from "./raw-copy.ts";

interface World {
  store: JobsStore;
  source: FilesystemBackend;
  target: FilesystemBackend;
  bodies: Map<string, Uint8Array>;
  flips: string[];
}

async function withWorld(fn: (world: World) => Promise<void>) {
  const dir = await Deno.makeTempDir({ prefix: "svc-migrate-" });
  const db = await openConfigDb({ dir: `${dir}/db`, passwordHash: HASH_A });
  try {
    const source = await FilesystemBackend.open(`${dir}/source`);
    const target = await FilesystemBackend.open(`${dir}/target`);
    await source.createBucket("b");
    const bodies = new Map<string, Uint8Array>();
    for (let i = 0; i < 12; i++) {
      const key = i === 5 ? "dir/reference.bin" : `k/${String(i).padStart(2, "0")}`;
      const bytes = randomBytes(500 + i * 300);
      const staged = await source.stageObject("b", key, ReadableStream.from([bytes]));
      await staged.commit(metaFor(bytes));
      bodies.set(key, bytes);
    }
    await fn({ store: new JobsStore(db), source, target, bodies, flips: [] });
  } finally {
    await db.close();
    await Deno.remove(dir, { recursive: true });
  }
}

/** The target, counting the objects staged on it and failing the keys in `failing`. */
function counted(target: Backend, failing: Set<string> = new Set()) {
  const staged: string[] = [];
  const backend = new Proxy(target, {
    get(object, name, receiver) {
      if (name === "stageObject") {
        return (bucket: string, key: string, body: ReadableStream<Uint8Array>) => {
          staged.push(key);
          if (failing.has(key)) {
            return body.cancel().then(() => Promise.reject(new Error("disk on fire")));
          }
          return target.stageObject(bucket, key, body);
        };
      }
      const value = Reflect.get(object, name, receiver);
      return typeof value === "function" ? value.bind(object) : value;
    },
  });
  return { backend, staged };
}

function depsFor(world: World, target: Backend, clock: Clock, gate: BucketWriteGate) {
  const backends = new Map<string, Backend>([["fs", world.source], ["remote", target]]);
  const deps: MaintenanceDeps = {
    store: world.store,
    clock,
    gate,
    route: (bucket) =>
      Promise.resolve({
        name: world.flips.length > 0 ? "remote" : "fs",
        backend: world.flips.length > 0 ? target : world.source,
        real: bucket,
      }),
    routedTo: () => world.flips.length > 0 ? "remote" : undefined,
    backend: (name) => backends.get(name),
    routeBucket: (bucket, backend) => {
      world.flips.push(`${bucket}->${backend}`);
      return Promise.resolve();
    },
    settings: () => ({ batchSize: 5, paceMs: 1, attempts: 2 }),
    audit: () => {},
  };
  return deps;
}

/** Runs the job to its end with `deps` (one worker, `clock`); its row afterwards. */
async function runJob(world: World, jobId: string, deps: ReturnType<typeof depsFor>, clock: Clock) {
  const runner = new JobRunner({
    store: world.store,
    clock,
    concurrency: 1,
    workerFor: () => migrateWorker(deps),
  });
  runner.enqueue(jobId);
  await runner.idle();
  return await world.store.get(jobId);
}

/** Every object is still in the source bucket. */
async function assertSourceIntact(world: World) {
  for (const key of world.bodies.keys()) {
    assert.notEqual(await world.source.headObject("b", key), null, key);
  }
}

/** A clock whose `sleep` runs `onSleep` with the call count first. */
function hookedClock(onSleep: (n: number) => void): Clock {
  let calls = 0;
  return {
    now: () => 1_000,
    sleep(_ms, signal) {
      onSleep(++calls);
      if (signal?.aborted) return Promise.reject(signal.reason);
      return Promise.resolve();
    },
  };
}

async function createJob(world: World, deleteSource: boolean) {
  const state: MigrateState = {
    from: "fs",
    to: "remote",
    real: "b",
    deleteSource,
    cursor: null,
    createdTarget: false,
    flipped: false,
    cleanupCursor: null,
  };
  return await world.store.createMaintenance({
    type: "migrate",
    scope: { bucket: "b", prefix: "", target: "remote" },
    progress: emptyProgress("queued"),
    state,
    createdBy: "t",
  });
}

Deno.test("an interrupted migration resumes at its cursor: nothing skipped, nothing redone", async () => {
  await withWorld(async (world) => {
    const job = await createJob(world, true);
    const gate = new BucketWriteGate();
    gate.engage("b", job.id);
    const first = counted(world.target);
    const runners: JobRunner[] = [];
    const clock = hookedClock((n) => {
      if (n === 4) void runners[0].stop(); // a shutdown after the 4th object
    });
    const runner = new JobRunner({
      store: world.store,
      clock,
      concurrency: 1,
      workerFor: () => migrateWorker(depsFor(world, first.backend, clock, gate)),
    });
    runners.push(runner);
    runner.enqueue(job.id);
    await runner.idle();
    const interrupted = await world.store.get(job.id);
    assert.equal(interrupted?.status, "running");
    assert.equal(interrupted?.progress.objects_done, 4);
    // Counted before the copy: the totals, and the percent the row derives from them.
    const stored = [...world.bodies.values()];
    assert.equal(interrupted?.progress.objects_total, stored.length);
    assert.equal(interrupted?.progress.bytes_total, stored.reduce((n, b) => n + b.length, 0));
    const row = jobRow(interrupted!).progress as Record<string, unknown>;
    assert.equal(row.percent, Math.floor((1000 * 4) / stored.length) / 10);
    assert.equal(first.staged.length, 4);
    assert.equal(world.flips.length, 0);

    // The next boot.
    await world.store.requeueUnfinished();
    const second = counted(world.target);
    const resumed = new JobRunner({
      store: world.store,
      clock: hookedClock(() => {}),
      concurrency: 1,
      workerFor: () => migrateWorker(depsFor(world, second.backend, hookedClock(() => {}), gate)),
    });
    resumed.enqueue(job.id);
    await resumed.idle();
    const done = await world.store.get(job.id);
    assert.equal(done?.status, "succeeded", done?.error ?? "");
    assert.equal(done?.progress.objects_done, world.bodies.size);
    assert.equal(done?.progress.objects_total, world.bodies.size, "the resumed job kept its count");
    assert.equal((jobRow(done!).progress as Record<string, unknown>).percent, 100);
    // Each object staged exactly once across both runs.
    assert.deepEqual([...first.staged, ...second.staged].sort(), [...world.bodies.keys()].sort());
    assert.deepEqual(world.flips, ["b->remote"]);
    assert.equal(gate.holder("b"), undefined, "the flip lifted the gate");
    for (const [key, bytes] of world.bodies) {
      const copy = await storedDigest({ backend: world.target, bucket: "b" }, key);
      assert.equal(copy?.bytes, bytes.length, key);
      const head = await world.target.headObject("b", key);
      assert.equal(head?.meta.sha256, metaFor(bytes).sha256);
    }
    // delete_source: the source bucket is gone.
    assert.equal(await world.source.headBucket("b"), null);
  });
});

Deno.test("a failed copy unwinds: source intact, target clean, no flip, reason recorded", async () => {
  await withWorld(async (world) => {
    const job = await createJob(world, true);
    const gate = new BucketWriteGate();
    gate.engage("b", job.id);
    const target = counted(world.target, new Set(["k/07"]));
    const clock = hookedClock(() => {});
    const failed = await runJob(world, job.id, depsFor(world, target.backend, clock, gate), clock);
    assert.equal(failed?.status, "failed");
    assert.match(
      failed?.error ?? "",
      /1 object\(s\) could not be copied; the bucket stays on "fs"/,
    );
    assert.equal(failed?.progress.phase, "failed");
    assert.equal(target.staged.filter((k) => k === "k/07").length, 2, "two attempts");
    const failures = await world.store.failures(job.id, 10);
    assert.deepEqual(failures.map((f) => [f.key, f.message]), [["k/07", "disk on fire"]]);
    assert.deepEqual(world.flips, []);
    assert.equal(await world.target.headBucket("b"), null, "the bucket it created is gone");
    await assertSourceIntact(world);
  });
});

Deno.test("a routing flip that fails unwinds the copies and keeps the bucket where it was", async () => {
  await withWorld(async (world) => {
    const job = await createJob(world, true);
    const gate = new BucketWriteGate();
    gate.engage("b", job.id);
    const clock = hookedClock(() => {});
    const deps = depsFor(world, world.target, clock, gate);
    deps.routeBucket = () => Promise.reject(new Error("config file is read-only"));
    const failed = await runJob(world, job.id, deps, clock);
    assert.equal(failed?.status, "failed");
    assert.equal(failed?.error, "Routing flip failed: config file is read-only");
    assert.equal(await world.target.headBucket("b"), null);
    assert.equal(gate.holder("b"), job.id, "the service lifts it when the job ends");
    await assertSourceIntact(world);
  });
});

Deno.test("a migration whose fleet gate lapsed while it was down unwinds instead of flipping", async () => {
  await withWorld(async (world) => {
    const job = await createJob(world, true);
    await world.store.update(job.id, {
      state: { ...job.state, cursor: "k/03", gateLapsed: true },
    });
    const gate = new BucketWriteGate();
    gate.engage("b", job.id);
    // A copy made before the lapse, as the earlier run left it.
    await world.target.createBucket("b");
    await copyStoredObject({ backend: world.source, bucket: "b" }, {
      backend: world.target,
      bucket: "b",
    }, "k/01");
    const clock = hookedClock(() => {});
    const failed = await runJob(world, job.id, depsFor(world, world.target, clock, gate), clock);
    assert.equal(failed?.status, "failed");
    assert.match(failed?.error ?? "", /fleet write gate of bucket "b" lapsed/);
    assert.deepEqual(world.flips, []);
    assert.equal(await world.target.headObject("b", "k/01"), null, "the earlier copy is gone");
    await assertSourceIntact(world);
  });
});

Deno.test("a migration stopped between its config apply and saving the flip makes the flip again", async () => {
  await withWorld(async (world) => {
    const job = await createJob(world, false);
    // The apply happened (the config routes to the target), `flipped` was never saved.
    world.flips.push("b->remote");
    await world.store.update(job.id, { state: { ...job.state, cursor: "k/11" } });
    const gate = new BucketWriteGate();
    gate.engage("b", job.id);
    const clock = hookedClock(() => {});
    const done = await runJob(world, job.id, depsFor(world, world.target, clock, gate), clock);
    assert.equal(done?.status, "succeeded", done?.error ?? "");
    // Made again, so a fleet's route record and gate carry it before the gate lifts.
    assert.deepEqual(world.flips, ["b->remote", "b->remote"]);
    assert.equal(gate.holder("b"), undefined);
  });
});

Deno.test("a flip applied here but not published is made again before the cleanup", async () => {
  await withWorld(async (world) => {
    const job = await createJob(world, true);
    const gate = new BucketWriteGate();
    gate.engage("b", job.id);
    const clock = hookedClock(() => {});
    const deps = depsFor(world, world.target, clock, gate);
    let calls = 0;
    const audits: string[] = [];
    deps.audit = (event) => audits.push(event);
    deps.routeBucket = (bucket, backend) => {
      world.flips.push(`${bucket}->${backend}`); // the local apply succeeds every time
      // ...its publication (route record, gate) fails twice.
      return ++calls <= 2
        ? Promise.reject(new Error("coordination bucket down"))
        : Promise.resolve();
    };
    const done = await runJob(world, job.id, deps, clock);
    assert.equal(done?.status, "succeeded", done?.error ?? "");
    assert.equal(calls, 3);
    assert.ok(audits.includes("job_bucket_flip_retried"), audits.join());
  });
});
