import assert from "node:assert/strict";
import { SvcError } from "../../lib/errors.ts";
import { MultipartBudget } from "./multipart-budget.ts";

const source = (stored: Record<string, number>) => ({
  uploads: () => Promise.resolve(Object.keys(stored)),
  storedBytes: (id: string) => Promise.resolve(stored[id]),
});

async function refused(work: Promise<unknown>): Promise<void> {
  await assert.rejects(work, (err) => err instanceof SvcError && err.code === "SlowDown");
}

Deno.test("budget: stored parts read at first use count against the cap", async () => {
  const budget = new MultipartBudget(source({ a: 60, b: 30 }));
  await refused(budget.reserve("c", 0, 11, 100));
  const fits = await budget.reserve("c", 0, 10, 100);
  assert.equal(budget.held(), 100);
  fits.settle(10);
  assert.equal(await budget.heldBytes(), 100);
  budget.forget("a");
  assert.equal(budget.held(), 40);
});

Deno.test("budget: a replaced part frees its old size; a failed part frees its reservation", async () => {
  const budget = new MultipartBudget(source({ a: 80 }));
  // Upload a holds 80 in one part (number 1); its part 1 sent again: others are 0.
  const again = await budget.reserve("a", 0, 90, 100);
  again.settle(90);
  assert.equal(budget.held(), 90);
  const failed = await budget.reserve("b", 0, 10, 100);
  failed.settle(null);
  failed.settle(5); // settling twice changes nothing
  assert.equal(budget.held(), 90);
});

Deno.test("budget: a part of unknown length may take what is left, and blocks others meanwhile", async () => {
  const budget = new MultipartBudget(source({ a: 70 }));
  const open = await budget.reserve("b", 0, undefined, 100);
  assert.equal(open.maxBytes, 30);
  await refused(budget.reserve("c", 0, 1, 100));
  open.settle(12);
  assert.equal(budget.held(), 82);
  await budget.reserve("c", 0, 18, 100);
});

Deno.test("budget: a failed store read is an error, never an empty budget", async () => {
  let fail = true;
  const budget = new MultipartBudget({
    uploads: () => fail ? Promise.reject(new Error("disk gone")) : Promise.resolve(["a"]),
    storedBytes: () => Promise.resolve(100),
  });
  await assert.rejects(budget.reserve("b", 0, 1, 100), /disk gone/);
  fail = false;
  await refused(budget.reserve("b", 0, 1, 100));
});
