import assert from "node:assert/strict";
import { ReplayCache } from "./replay.ts";

Deno.test("replay cache: a remembered signature is seen only within its window", () => {
  const cache = new ReplayCache();
  assert.equal(cache.seen("sig", 1000), false);
  cache.remember("sig", 1000, 2);
  assert.equal(cache.seen("sig", 2500), true);
  assert.equal(cache.seen("sig", 3001), false, "expired after 2 s");
  assert.equal(cache.seen("other", 1500), false);
});

Deno.test("replay cache: window 0 stores nothing", () => {
  const cache = new ReplayCache();
  cache.remember("sig", 1000, 0);
  assert.equal(cache.seen("sig", 1000), false);
  assert.equal(cache.size, 0);
});

Deno.test("replay cache: memory is bounded by expiry and by maxEntries", () => {
  const cache = new ReplayCache(100);
  for (let i = 0; i < 1000; i++) cache.remember(`s${i}`, 1000, 2);
  assert.equal(cache.size, 100);
  assert.equal(cache.seen("s999", 1000), true, "newest kept");
  assert.equal(cache.seen("s0", 1000), false, "oldest forgotten");
  cache.remember("late", 10_000, 2);
  assert.equal(cache.size, 1, "expired entries pruned");
});
