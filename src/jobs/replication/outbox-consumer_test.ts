import assert from "node:assert/strict";
import { sampleEvent } from "../../testing/event-fixtures.ts";
import type { OutboxRow } from "../../events/outbox-store.ts";
import type { PendingFailure } from "../rules/run-recorder.ts";
import { OutboxConsumer } from "./outbox-consumer.ts";
import { ruleOf, withWorld, type World } from "../../testing/replication-fixtures.ts";

function rowsOf(events: { bucket: string; key: string }[]): OutboxRow[] {
  return events.map((e, i) => ({
    id: i + 1,
    event: { ...sampleEvent(e.key), bucket: e.bucket },
    status: i % 2 === 0 ? "recorded" : "delivered",
    attempts: 0,
    occurredAt: 0,
    nextAttemptAt: 0,
    claimedAt: null,
    deliveredTargets: [],
    lastError: null,
    finishedAt: null,
  }));
}

function consumerOf(
  w: World,
  rows: OutboxRow[],
  options: { paused?: Set<string>; rules?: ReturnType<typeof ruleOf>[] } = {},
) {
  let cursor = 0;
  const failures: PendingFailure[] = [];
  const consumer = new OutboxConsumer({
    env: w.env,
    outbox: {
      after: (id, limit) => Promise.resolve(rows.filter((r) => r.id > id).slice(0, limit)),
    },
    cursor: {
      read: () => Promise.resolve(cursor),
      write: (id) => Promise.resolve(void (cursor = id)),
    },
    rules: () => options.rules ?? [ruleOf({ replicate_deletes: true })],
    active: (name) => Promise.resolve(!options.paused?.has(name)),
    addFailures: (_name, list) => Promise.resolve(void failures.push(...list)),
    maxFailures: () => 100,
    batch: 2,
  });
  return { consumer, failures, cursor: () => cursor };
}

Deno.test("consumer: events of every status copy the key's current state; the cursor advances", async () => {
  await withWorld(async (w) => {
    await w.put("src", "a", "first");
    await w.put("src", "a", "second");
    await w.put("src", "b", "b");
    await w.put("other", "c", "elsewhere").catch(() => {}); // no such bucket: not a source
    const rows = rowsOf([
      { bucket: "src", key: "a" },
      { bucket: "src", key: "a" },
      { bucket: "src", key: "b" },
      { bucket: "other", key: "c" },
      { bucket: "src", key: ".svc/x" },
    ]);
    const { consumer, cursor } = consumerOf(w, rows);
    while (await consumer.drain() > 0) { /* batches of 2 */ }
    assert.equal(cursor(), 5);
    assert.deepEqual(await w.keys("dst"), ["a", "b"]);
    assert.equal(await w.read("dst", "a"), "second");
    // The two events of "a" were one batch: one copy of its latest state.
    assert.deepEqual(w.copied, ["a", "b"]);
  });
});

Deno.test("consumer: a delete follows only with replicate_deletes; a paused rule hears nothing", async () => {
  await withWorld(async (w) => {
    await w.put("dst", "gone", "old copy");
    await w.put("src", "new", "n");
    const rows = rowsOf([{ bucket: "src", key: "gone" }, { bucket: "src", key: "new" }]);
    const paused = consumerOf(w, rows, { paused: new Set(["r"]) });
    await paused.consumer.drain();
    assert.equal(paused.cursor(), 2);
    assert.deepEqual(await w.keys("dst"), ["gone"]);

    const keeping = consumerOf(w, rows, { rules: [ruleOf()] });
    await keeping.consumer.drain();
    assert.deepEqual(await w.keys("dst"), ["gone", "new"]);

    const deleting = consumerOf(w, rows);
    await deleting.consumer.drain();
    assert.deepEqual(await w.keys("dst"), ["new"]);
  });
});

Deno.test("consumer: a failed copy goes to the rule's failure ring and the cursor still advances", async () => {
  await withWorld(async (w) => {
    await w.put("src", "a", "a");
    w.hooks.beforeCopy = () => Promise.reject(new Error("destination on fire"));
    const { consumer, failures, cursor } = consumerOf(w, rowsOf([{ bucket: "src", key: "a" }]));
    await consumer.drain();
    assert.equal(cursor(), 1);
    assert.equal(failures.length, 1);
    assert.match(failures[0].message, /destination on fire/);
  });
});
