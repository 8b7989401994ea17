import assert from "node:assert/strict";
import { BackendLiveness } from "./s3-liveness.ts";

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

Deno.test("a backend is suspected once an attempt waits past the silence unanswered", async () => {
  const liveness = new BackendLiveness(30);
  assert.deepEqual(liveness.headersDeadline(5000), { ms: 5000, probe: false });
  const slow = liveness.begin();
  await sleep(50);
  assert.equal(liveness.suspected(), true);
  assert.deepEqual(liveness.headersDeadline(5000), { ms: 30, probe: true });
  // A probe answered: the backend lives, the slow attempt is just a long operation.
  const probe = liveness.begin();
  liveness.end(probe, "answered");
  assert.equal(liveness.suspected(), false);
  liveness.end(slow, "answered");
  assert.equal(liveness.suspected(), false);
});

Deno.test("a timeout with nothing answered since keeps the suspicion until an answer", () => {
  const liveness = new BackendLiveness(10_000);
  const earlier = liveness.begin();
  const timedOut = liveness.begin();
  liveness.end(timedOut, "timeout");
  assert.equal(liveness.suspected(), true);
  // An answer to an attempt that began before the timed-out one still says the backend lives.
  liveness.end(earlier, "answered");
  assert.equal(liveness.suspected(), false);
  // Refused or aborted attempts say nothing either way.
  liveness.end(liveness.begin(), "failed");
  assert.equal(liveness.suspected(), false);
  const late = liveness.begin();
  liveness.end(late, "timeout");
  liveness.end(late, "answered"); // ended already: ignored
  assert.equal(liveness.suspected(), true);
});
