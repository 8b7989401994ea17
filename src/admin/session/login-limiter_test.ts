import assert from "node:assert/strict";
import { AdminError } from "../admin-error.ts";
import { LoginLimiter } from "./login-limiter.ts";

function retryAfter(fn: () => unknown): number {
  try {
    fn();
  } catch (err) {
    assert.ok(err instanceof AdminError);
    assert.equal(err.code, "too_many_requests");
    return err.details.retry_after_secs as number;
  }
  throw new Error("expected a 429");
}

Deno.test("failures within the window lock the address for the lockout", () => {
  const clock = { now: 0 };
  const limiter = new LoginLimiter({
    maxFailures: 3,
    windowSecs: 60,
    lockoutSecs: 300,
    now: () => clock.now,
  });
  assert.equal(limiter.begin("a").failed(), false);
  assert.equal(limiter.begin("a").failed(), false);
  assert.equal(limiter.begin("a").failed(), true);
  assert.equal(retryAfter(() => limiter.begin("a")), 300);
  clock.now = 299_500;
  assert.equal(retryAfter(() => limiter.begin("a")), 1);
  clock.now = 300_000;
  limiter.begin("a").succeeded();
  limiter.begin("b").succeeded();
});

Deno.test("failures older than the window are forgotten; a success forgets none", () => {
  const clock = { now: 0 };
  const limiter = new LoginLimiter({ maxFailures: 3, windowSecs: 60, now: () => clock.now });
  limiter.begin("a").failed();
  limiter.begin("a").failed();
  clock.now = 61_000;
  assert.equal(limiter.begin("a").failed(), false, "the first two left the window");
  limiter.begin("a").failed();
  limiter.begin("a").succeeded();
  assert.equal(limiter.tracked, 1, "the failures outlive a success");
  assert.equal(limiter.begin("a").failed(), true, "the third failure in the window locks");
  clock.now = 61_000 + 300_000;
  limiter.begin("a").succeeded();
  assert.equal(limiter.tracked, 0, "an address with nothing against it is not kept");
});

Deno.test("successes in between do not reset the count of wrong passwords", () => {
  const clock = { now: 0 };
  const limiter = new LoginLimiter({ maxFailures: 5, windowSecs: 60, now: () => clock.now });
  for (let i = 0; i < 4; i++) assert.equal(limiter.begin("a").failed(), false);
  limiter.begin("a").succeeded();
  assert.equal(limiter.begin("a").failed(), true, "the fifth failure locks despite the success");
  retryAfter(() => limiter.begin("a"));
});

Deno.test("attempts in flight count against the limit until they end", () => {
  const limiter = new LoginLimiter({ maxFailures: 2, now: () => 0 });
  const first = limiter.begin("a");
  const second = limiter.begin("a");
  retryAfter(() => limiter.begin("a"));
  first.abandoned();
  const third = limiter.begin("a");
  second.failed();
  // Settling twice counts once.
  assert.equal(second.failed(), false);
  third.succeeded();
  limiter.begin("a").abandoned();
});

Deno.test("memory is bounded by maxTracked addresses", () => {
  const limiter = new LoginLimiter({ maxTracked: 3, now: () => 0 });
  for (let i = 0; i < 10; i++) limiter.begin(`10.0.0.${i}`).failed();
  assert.equal(limiter.tracked, 3);
});
