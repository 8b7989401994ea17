import assert from "node:assert/strict";
import { KeyLock } from "./key-lock.ts";

Deno.test("key lock serializes work on one key and frees the map afterwards", async () => {
  const lock = new KeyLock();
  const order: string[] = [];
  const slow = lock.run("k", async () => {
    order.push("a-start");
    await new Promise((r) => setTimeout(r, 20));
    order.push("a-end");
  });
  const fast = lock.run("k", () => {
    order.push("b");
    return Promise.resolve();
  });
  const other = lock.run("other", () => {
    order.push("other");
    return Promise.resolve();
  });
  await Promise.all([slow, fast, other]);
  assert.deepEqual(order.filter((x) => x !== "other"), ["a-start", "a-end", "b"]);
  assert.ok(order.indexOf("other") < order.indexOf("a-end"));
  assert.equal(lock.size, 0);
});

Deno.test("key lock releases after a failure", async () => {
  const lock = new KeyLock();
  await assert.rejects(lock.run("k", () => Promise.reject(new Error("boom"))), /boom/);
  assert.equal(await lock.run("k", () => Promise.resolve(7)), 7);
  assert.equal(lock.size, 0);
});
