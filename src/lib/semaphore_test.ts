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

Deno.test("the oldest waiter's wait is reported until it is served", async () => {
  let clock = 1000;
  const semaphore = new Semaphore(1, () => clock);
  await semaphore.acquire();
  assert.equal(semaphore.oldestWaitMs(), 0);
  const first = semaphore.acquire();
  clock += 300;
  const second = semaphore.acquire();
  clock += 200;
  assert.equal(semaphore.oldestWaitMs(), 500);
  semaphore.release();
  await first;
  assert.equal(semaphore.oldestWaitMs(), 200);
  semaphore.release();
  await second;
  assert.equal(semaphore.oldestWaitMs(), 0);
});
