import assert from "node:assert/strict";
import { ReplayStore } from "./replay.ts";

const SIG = "a".repeat(64);

Deno.test("replay store: a claimed signature is live until it expires", () => {
  const store = new ReplayStore();
  assert.equal(store.get(SIG, 1000), undefined);
  const claim = store.claim(SIG, 1000, 3000);
  assert.ok(store.get(SIG, 2999)?.inFlight, "in flight until settled");
  store.settle(claim, { status: 200, headers: "", body: null });
  assert.equal(store.get(SIG, 2999)?.inFlight, null);
  assert.equal(store.get(SIG.toUpperCase(), 2999)?.answer?.status, 200, "hex case ignored");
  assert.equal(store.get(SIG, 3000), undefined, "expired");
  assert.equal(store.size, 0, "pruned");
});

Deno.test("replay store: a forgotten claim is gone and its waiters wake", async () => {
  const store = new ReplayStore();
  const claim = store.claim(SIG, 1000, 3000);
  const waiting = store.get(SIG, 1000)!.inFlight!;
  store.forget(claim);
  await waiting;
  assert.equal(store.get(SIG, 1000), undefined);
});

Deno.test("replay store: past maxEntries new claims are refused (SlowDown), never forgotten", () => {
  const store = new ReplayStore({ maxEntries: 3 });
  for (let i = 0; i < 3; i++) {
    store.settle(store.claim(`${i}`.padEnd(64, "0"), 1000, 5000), null);
  }
  assert.throws(() => store.claim("f".repeat(64), 1000, 5000), /replay protection/);
  assert.ok(store.get("0".padEnd(64, "0"), 1000), "the oldest is still remembered");
  store.claim("f".repeat(64), 5000, 9000);
  assert.equal(store.size, 1, "expired entries make room");
});

Deno.test("replay store: answers past the body bound or the total budget are not kept", () => {
  const store = new ReplayStore({ maxBodyBytes: 10, maxAnswerBytes: 15 });
  const answer = (n: number) => ({ status: 200, headers: "", body: new Uint8Array(n) });
  const big = store.claim("1".repeat(64), 0, 9000);
  store.settle(big, answer(11));
  assert.equal(store.get("1".repeat(64), 0)?.answer, null, "over the per-answer bound");
  store.settle(store.claim("2".repeat(64), 0, 9000), answer(10));
  store.settle(store.claim("3".repeat(64), 0, 9000), answer(10));
  assert.equal(store.get("2".repeat(64), 0)?.answer?.body?.byteLength, 10);
  assert.equal(store.get("3".repeat(64), 0)?.answer, null, "over the total budget");
  assert.equal(store.answerBytes, 10);
  store.get("x".repeat(64), 9000);
  assert.equal(store.answerBytes, 0, "expiry returns the budget");
});
