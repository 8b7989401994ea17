import assert from "node:assert/strict";
import { ReplayCache } from "./replay.ts";

Deno.test("replay cache: a signature repeats only within the window", () => {
  const cache = new ReplayCache();
  assert.equal(cache.check("sig", 1000, 2), false);
  assert.equal(cache.check("sig", 2500, 2), true);
  assert.equal(cache.check("sig", 3001, 2), false, "expired after 2 s, recorded afresh");
  assert.equal(cache.check("sig", 3500, 2), true);
  assert.equal(cache.check("other", 3500, 2), false);
});

Deno.test("replay cache: window 0 disables detection and stores nothing", () => {
  const cache = new ReplayCache();
  assert.equal(cache.check("sig", 1000, 0), false);
  assert.equal(cache.check("sig", 1000, 0), false);
  assert.equal(cache.size, 0);
});

Deno.test("replay cache: memory is bounded by expiry and by maxEntries", () => {
  const cache = new ReplayCache(100);
  for (let i = 0; i < 1000; i++) cache.check(`s${i}`, 1000, 2);
  assert.equal(cache.size, 100);
  assert.equal(cache.check("s999", 1000, 2), true, "newest kept");
  assert.equal(cache.check("s0", 1000, 2), false, "oldest forgotten");
  cache.check("late", 10_000, 2);
  assert.equal(cache.size, 1, "expired entries pruned");
});
