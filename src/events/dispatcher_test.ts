import { sampleEvent } from "../testing/event-fixtures.ts";
import assert from "node:assert/strict";
import * as v from "valibot";
import { HASH_A } from "../../tests/helpers/config-db.ts";
import { eventDeliverySchema } from "../config/schema/schema-advanced.ts";
import { type ConfigDb, openConfigDb } from "../db/config-db.ts";
import { backoffMs, Dispatcher } from "./dispatcher.ts";
import { OutboxStore } from "./outbox-store.ts";

type Settings = v.InferInput<typeof eventDeliverySchema>;
const settings = (input: Settings) => v.parse(eventDeliverySchema, input);

const event = sampleEvent;

/** A fetch that answers from `answer(url)` and records each call. */
function fakeFetch(answer: (url: string) => number | Error) {
  const calls: { url: string; body: string }[] = [];
  const fetch = (input: string | URL | Request, init?: RequestInit) => {
    const url = String(input);
    calls.push({ url, body: String(init?.body) });
    const result = answer(url);
    if (result instanceof Error) return Promise.reject(result);
    return Promise.resolve(new Response(result === 204 ? null : "x", { status: result }));
  };
  return { calls, fetch: fetch as typeof globalThis.fetch };
}

async function withStore(fn: (store: OutboxStore, db: ConfigDb) => Promise<void>) {
  const dir = await Deno.makeTempDir({ prefix: "svc-outbox-" });
  const db = await openConfigDb({ dir, passwordHash: HASH_A });
  try {
    await fn(new OutboxStore(db), db);
  } finally {
    await db.close();
    await Deno.remove(dir, { recursive: true });
  }
}

Deno.test("backoff doubles from retry_base and stops at retry_max", () => {
  const config = settings({ retry_base: "5s", retry_max: "1m" });
  assert.deepEqual([1, 2, 3, 4, 5, 6, 99].map((n) => backoffMs(n, config)), [
    5000,
    10000,
    20000,
    40000,
    60000,
    60000,
    60000,
  ]);
});

Deno.test("a failing endpoint: backoff, only it retried, failed after max_attempts", async () => {
  await withStore(async (store) => {
    const clock = { now: 10_000 };
    let bStatus = 500;
    const { calls, fetch } = fakeFetch((url) => url.endsWith("/a") ? 200 : bStatus);
    const config = settings({
      enabled: true,
      webhook_urls: ["http://x/a", "http://x/b"],
      retry_base: "1s",
      retry_max: "10s",
      max_attempts: 3,
    });
    const dispatcher = new Dispatcher({ store, config: () => config, fetch, now: () => clock.now });
    await store.append([event("k")], true, clock.now);
    let report = await dispatcher.tick();
    assert.deepEqual([report.claimed, report.delivered, report.retried], [1, 0, 1]);
    assert.deepEqual(calls.map((c) => c.url), ["http://x/a", "http://x/b"]);
    let [row] = await store.after(0, 10);
    assert.equal(row.status, "pending");
    assert.equal(row.attempts, 1);
    assert.equal(row.nextAttemptAt, 11_000);
    assert.deepEqual(row.deliveredTargets, ["http://x/a"]);
    assert.match(row.lastError!, /endpoint 2 \(http:\/\/x\) answered 500/);
    // Not due yet: nothing is claimed.
    clock.now = 10_999;
    assert.equal((await dispatcher.tick()).claimed, 0);
    clock.now = 11_000;
    report = await dispatcher.tick();
    assert.equal(report.retried, 1);
    assert.deepEqual(calls.slice(2).map((c) => c.url), ["http://x/b"], "a is not sent it again");
    [row] = await store.after(0, 10);
    assert.equal(row.nextAttemptAt, 13_000, "1 s then 2 s");
    clock.now = 13_000;
    report = await dispatcher.tick();
    assert.equal(report.failed, 1);
    [row] = await store.after(0, 10);
    assert.equal(row.status, "failed");
    assert.equal(row.attempts, 3);
    // Requeued, and b recovers: delivered, b sent it once more, a never again.
    assert.equal(await store.requeue(undefined, clock.now), 1);
    bStatus = 204;
    report = await dispatcher.tick();
    assert.equal(report.delivered, 1);
    [row] = await store.after(0, 10);
    assert.equal(row.status, "delivered");
    assert.equal(calls.filter((c) => c.url.endsWith("/a")).length, 1);
  });
});

Deno.test("stale claims are reclaimed; a network error and a timeout count as failures", async () => {
  await withStore(async (store) => {
    const clock = { now: 50_000 };
    await store.append([event("k1"), event("k2")], true, clock.now);
    const claimed = await store.claim(10, clock.now, "dead-dispatcher");
    assert.equal(claimed.length, 2);
    const { fetch } = fakeFetch((url) => url.includes("down") ? new Error("refused") : 200);
    const config = settings({
      enabled: true,
      webhook_url: "http://down/",
      stale_claim_after: "30s",
    });
    const dispatcher = new Dispatcher({ store, config: () => config, fetch, now: () => clock.now });
    clock.now = 79_999;
    assert.deepEqual([(await dispatcher.tick()).reclaimed], [0]);
    clock.now = 80_001;
    const report = await dispatcher.tick();
    assert.equal(report.reclaimed, 2);
    assert.equal(report.retried, 2);
    const [row] = await store.after(0, 1);
    assert.match(row.lastError!, /endpoint 1 \(http:\/\/down\): refused/);
    // A hung endpoint: cut at request_timeout.
    const hung = ((_url: string, init?: RequestInit) =>
      new Promise((_, reject) => {
        init?.signal?.addEventListener("abort", () => reject(init.signal!.reason));
      })) as typeof globalThis.fetch;
    const slow = new Dispatcher({
      store,
      config: () => settings({ ...config, request_timeout: "50ms", retry_base: "1ms" }),
      fetch: hung,
      now: () => clock.now,
    });
    clock.now += 60_000;
    await slow.tick();
    const [after] = await store.after(0, 1);
    assert.match(after.lastError!, /did not answer within 50ms/);
  });
});

Deno.test("delivery off: nothing is claimed; finished rows are pruned by age and count", async () => {
  await withStore(async (store) => {
    const clock = { now: 100_000 };
    const { calls, fetch } = fakeFetch(() => 200);
    let config = settings({
      enabled: false,
      delivered_retention: "10s",
      delivered_max_rows: 3,
      prune_batch: 2,
    });
    const dispatcher = new Dispatcher({ store, config: () => config, fetch, now: () => clock.now });
    await store.append([event("a"), event("b")], false, 89_000); // recorded 11 s ago
    await store.append([event("c"), event("d"), event("e"), event("f")], false, clock.now);
    assert.equal((await dispatcher.tick()).claimed, 0);
    assert.equal(calls.length, 0);
    const counts = await store.counts();
    // Two older than 10 s pruned by age, then the oldest beyond 3 rows (at most prune_batch).
    assert.equal(counts.recorded, 3);
    assert.deepEqual((await store.after(0, 10)).map((r) => r.event.key), ["d", "e", "f"]);
    // Turned on (a hot reload is read at the next tick): new rows go out, recorded ones never.
    config = settings({ ...config, enabled: true, webhook_url: "http://x/" });
    await store.append([event("g")], true, clock.now);
    const report = await dispatcher.tick();
    assert.equal(report.delivered, 1);
    assert.equal(calls.length, 1);
    assert.equal(JSON.parse(calls[0].body).event.key, "g");
    assert.equal(JSON.parse(calls[0].body).event.seq, 7, "seq is the outbox id");
  });
});

Deno.test("pruning keeps the rows after a reader's floor (replication's cursor)", async () => {
  await withStore(async (store) => {
    const clock = { now: 100_000 };
    const config = settings({ delivered_retention: "10s", delivered_max_rows: 1, prune_batch: 10 });
    let floor: number | undefined = 1;
    const dispatcher = new Dispatcher({
      store,
      config: () => config,
      fetch: fakeFetch(() => 200).fetch,
      now: () => clock.now,
      pruneFloor: () => Promise.resolve(floor),
    });
    await store.append([event("a"), event("b"), event("c"), event("d")], false, 80_000);
    await dispatcher.tick();
    // Old and beyond the row cap, yet only the row the reader has passed goes.
    assert.deepEqual((await store.after(0, 10)).map((r) => r.event.key), ["b", "c", "d"]);
    floor = undefined;
    await dispatcher.tick();
    assert.deepEqual((await store.after(0, 10)).map((r) => r.event.key), []);
  });
});

Deno.test("claims never overlap; ids follow append order", async () => {
  await withStore(async (store) => {
    await store.append([event("a"), event("b"), event("c")], true, 1);
    const first = await store.claim(2, 1, "one");
    const second = await store.claim(2, 1, "two");
    assert.deepEqual(first.map((r) => r.event.key), ["a", "b"]);
    assert.deepEqual(second.map((r) => r.event.key), ["c"]);
    assert.deepEqual([...first, ...second].map((r) => r.id), [1, 2, 3]);
    // A finish under another token changes nothing.
    await store.finish(1, "two", { status: "delivered", targets: [] }, 2);
    assert.equal((await store.get(1))!.status, "delivering");
  });
});
