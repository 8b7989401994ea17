import assert from "node:assert/strict";
import { MemoryBudget } from "./memory-budget.ts";

Deno.test("memory budget: tryReserve never passes the limit; release frees", () => {
  const budget = new MemoryBudget(100);
  const a = budget.tryReserve(60)!;
  assert.equal(budget.held, 60);
  assert.equal(budget.tryReserve(50), null, "60 + 50 is over 100");
  const b = budget.tryReserve(40)!;
  assert.equal(budget.held, 100);
  a.release();
  a.release(); // idempotent
  assert.equal(budget.held, 40);
  assert.equal(budget.tryReserve(101), null, "larger than the whole budget: never for an encode");
  b.release();
  assert.equal(budget.held, 0);
});

Deno.test("memory budget: reserve waits in order, admits an oversized job alone", async () => {
  const budget = new MemoryBudget(100);
  const a = budget.tryReserve(80)!;
  const order: string[] = [];
  const big = budget.reserve(150).then((r) => (order.push("big"), r));
  const small = budget.reserve(10).then((r) => (order.push("small"), r));
  await new Promise((r) => setTimeout(r, 10));
  assert.deepEqual(order, [], "first come first served: the small one waits behind the big one");
  assert.equal(budget.tryReserve(5), null, "an encode does not jump the queue");
  a.release();
  const bigHeld = await big;
  assert.equal(budget.held, 150, "admitted alone past the limit");
  await new Promise((r) => setTimeout(r, 10));
  assert.deepEqual(order, ["big"]);
  bigHeld.release();
  (await small).release();
  assert.deepEqual(order, ["big", "small"]);
  assert.equal(budget.held, 0);
});

Deno.test("memory budget: an aborted wait leaves the queue and rejects with the reason", async () => {
  const budget = new MemoryBudget(10);
  const held = budget.tryReserve(10)!;
  const abort = new AbortController();
  const waiting = budget.reserve(5, abort.signal);
  const behind = budget.reserve(5);
  abort.abort(new Error("gone"));
  await assert.rejects(waiting, /gone/);
  held.release();
  (await behind).release();
  assert.equal(budget.held, 0);
  await assert.rejects(budget.reserve(1, AbortSignal.abort(new Error("early"))), /early/);
});
