import assert from "node:assert/strict";
import { Lockout } from "./lockout.ts";

const settings = { maxAttempts: 3, windowSeconds: 10, lockoutSeconds: 60 };

Deno.test("lockout: the max-th failure in the window locks the address, others unaffected", () => {
  const lockout = new Lockout();
  assert.equal(lockout.recordFailure("1.1.1.1", 0, settings), false);
  assert.equal(lockout.recordFailure("1.1.1.1", 1000, settings), false);
  assert.equal(lockout.lockedFor("1.1.1.1", 1000), 0);
  assert.equal(lockout.recordFailure("1.1.1.1", 2000, settings), true);
  assert.equal(lockout.lockedFor("1.1.1.1", 2000), 60_000);
  assert.equal(lockout.lockedFor("2.2.2.2", 2000), 0);
  assert.equal(lockout.lockedFor("1.1.1.1", 62_001), 0, "lock ends");
});

Deno.test("lockout: failures outside the window start a new count", () => {
  const lockout = new Lockout();
  lockout.recordFailure("ip", 0, settings);
  lockout.recordFailure("ip", 1000, settings);
  assert.equal(lockout.recordFailure("ip", 20_000, settings), false);
  assert.equal(lockout.lockedFor("ip", 20_000), 0);
});

Deno.test("lockout: tracked addresses are bounded", () => {
  const lockout = new Lockout(10);
  for (let i = 0; i < 100; i++) lockout.recordFailure(`ip${i}`, 0, settings);
  assert.equal(lockout.size, 10);
});
