import assert from "node:assert/strict";
import { WorkerPool } from "./worker-pool.ts";

/** Stand-ins for workers: the pool only starts and terminates them. */
function fakes() {
  const made: { terminated: boolean }[] = [];
  const spawn = () => {
    const w = { terminated: false, terminate: () => (w.terminated = true) };
    made.push(w);
    return w as unknown as Worker;
  };
  return { made, spawn };
}

Deno.test("worker pool: reuses idle workers, caps at its size, queues in order", async () => {
  const { made, spawn } = fakes();
  const pool = new WorkerPool(spawn, 2, 60_000);
  const a = await pool.take();
  const b = await pool.take();
  assert.equal(pool.alive, 2);
  const order: string[] = [];
  const c = pool.take().then((w) => (order.push("c"), w));
  const d = pool.take().then((w) => (order.push("d"), w));
  assert.equal(pool.waiting, 2);
  pool.give(a);
  assert.equal(await c, a, "the freed worker serves the first waiter");
  pool.discard(b); // cut off mid-job: terminated, the next waiter gets a new worker
  const fresh = await d;
  assert.notEqual(fresh, b);
  assert.deepEqual(order, ["c", "d"]);
  assert.equal(made.length, 3);
  assert.equal(made[1].terminated, true);
  pool.give(a);
  pool.give(fresh);
  assert.equal(await pool.take(), fresh, "an idle worker is reused");
  assert.equal(pool.started, 3);
  pool.shutdown();
  assert.equal(pool.alive, 0);
  assert.ok(made.every((w) => w.terminated));
});

Deno.test("worker pool: an aborted wait leaves the queue; shutdown fails waiters", async () => {
  const { spawn } = fakes();
  const pool = new WorkerPool(spawn, 1, 60_000);
  const held = await pool.take();
  const abort = new AbortController();
  const leaving = pool.take(abort.signal);
  abort.abort(new Error("gone"));
  await assert.rejects(leaving, /gone/);
  assert.equal(pool.waiting, 0);
  const waiting = pool.take();
  pool.shutdown();
  await assert.rejects(waiting, /shut down/);
  pool.give(held); // a worker of before the shutdown is not taken back
  assert.equal(pool.alive, 0);
  await assert.rejects(pool.take(AbortSignal.abort(new Error("early"))), /early/);
});

Deno.test("worker pool: idle workers are ended after the idle time", async () => {
  const { made, spawn } = fakes();
  const pool = new WorkerPool(spawn, 2, 20);
  pool.give(await pool.take());
  assert.equal(pool.alive, 1);
  await new Promise((r) => setTimeout(r, 60));
  assert.equal(pool.alive, 0);
  assert.equal(made[0].terminated, true);
});
