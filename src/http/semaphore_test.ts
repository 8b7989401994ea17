import assert from "node:assert/strict";
import { Semaphore } from "./semaphore.ts";

Deno.test("semaphore queues past its permits and hands over in order", async () => {
  const semaphore = new Semaphore(1);
  await semaphore.acquire();
  const order: number[] = [];
  const second = semaphore.acquire().then(() => order.push(2));
  const third = semaphore.acquire().then(() => order.push(3));
  assert.equal(semaphore.waiting, 2);
  semaphore.release();
  await second;
  semaphore.release();
  await third;
  semaphore.release();
  assert.deepEqual(order, [2, 3]);
  assert.equal(semaphore.available, 1);
});

Deno.test("an aborted waiter leaves the queue without taking a permit", async () => {
  const semaphore = new Semaphore(1);
  await semaphore.acquire();
  const controller = new AbortController();
  const waiter = semaphore.acquire(controller.signal);
  controller.abort(new Error("gone"));
  await assert.rejects(waiter, /gone/);
  assert.equal(semaphore.waiting, 0);
  semaphore.release();
  assert.equal(semaphore.available, 1);
});
