import assert from "node:assert/strict";
import { SerialQueue } from "./serial-queue.ts";

Deno.test("calls run one at a time in arrival order", async () => {
  const queue = new SerialQueue();
  const events: string[] = [];
  const call = (name: string, ms: number) =>
    queue.run(async () => {
      events.push(`${name} start`);
      await new Promise((r) => setTimeout(r, ms));
      events.push(`${name} end`);
      return name;
    });
  const results = await Promise.all([call("a", 10), call("b", 1), call("c", 5)]);
  assert.deepEqual(results, ["a", "b", "c"]);
  assert.deepEqual(events, ["a start", "a end", "b start", "b end", "c start", "c end"]);
  assert.equal(queue.pending, 0);
});

Deno.test("a failing call rejects its caller and does not stop the queue", async () => {
  const queue = new SerialQueue();
  const failed = queue.run(() => Promise.reject(new Error("boom")));
  const next = queue.run(() => Promise.resolve(7));
  await assert.rejects(failed, /boom/);
  assert.equal(await next, 7);
});
