import assert from "node:assert/strict";
import type { ObjectInfo } from "../storage/backend.ts";
import type { ObjectEvent } from "./event.ts";
import { OutboxWriter } from "./outbox-writer.ts";

function info(key: string): ObjectInfo {
  return {
    key,
    storedSize: 3,
    meta: {
      size: 3,
      etag: "e",
      md5: "e",
      sha256: "ab".repeat(32),
      contentType: "text/plain",
      userMeta: {},
      headers: {},
      lastModified: 0,
      storage: "passthrough",
    },
  };
}

const context = { operation: "put" as const, principal: "p", sourceIp: "1.2.3.4", requestId: "R" };

Deno.test("writes are buffered and committed in order, in batches, without waiting per write", async () => {
  const commits: { events: ObjectEvent[]; deliver: boolean }[] = [];
  const writer = new OutboxWriter({
    store: {
      append: (events, deliver) => {
        commits.push({ events: [...events], deliver });
        return Promise.resolve();
      },
    },
    deliver: () => true,
    flushDelayMs: 5,
    maxBatch: 3,
  });
  for (let i = 0; i < 7; i++) writer.committed("b", info(`k${i}`), null, context);
  writer.removed("b", info("k0"), { ...context, operation: "delete" });
  assert.equal(commits.length, 0, "nothing committed synchronously");
  assert.equal(writer.buffered, 8);
  await writer.flush();
  assert.deepEqual(commits.map((c) => c.events.length), [3, 3, 2]);
  const events = commits.flatMap((c) => c.events);
  assert.deepEqual(events.map((e) => `${e.kind}:${e.key}`), [
    ...Array.from({ length: 7 }, (_, i) => `ObjectCreated:k${i}`),
    "ObjectDeleted:k0",
  ]);
  assert.deepEqual(
    [events[0].principal, events[0].source_ip, events[0].request_id, events[7].operation],
    ["p", "1.2.3.4", "R", "delete"],
  );
  assert.equal(writer.needsReplaced, false);
  await writer.close();
});

Deno.test("a failed commit keeps the batch and retries; a full buffer drops; close flushes", async () => {
  let failures = 1;
  const committed: string[] = [];
  const writer = new OutboxWriter({
    store: {
      append: (events) => {
        if (failures-- > 0) return Promise.reject(new Error("database is locked"));
        committed.push(...events.map((e) => e.key));
        return Promise.resolve();
      },
    },
    deliver: () => false,
    flushDelayMs: 1,
    retryDelayMs: 5,
    maxBuffered: 3,
  });
  for (const key of ["a", "b", "c", "d"]) writer.committed("b", info(key), null);
  assert.equal(writer.buffered, 3, "d dropped: the buffer holds 3");
  await writer.flush();
  assert.deepEqual(committed, ["a", "b", "c"], "retried after the failure, in order");
  writer.committed("b", info("e"), null);
  assert.equal(await writer.close(), 0);
  assert.deepEqual(committed, ["a", "b", "c", "e"]);
  writer.committed("b", info("late"), null);
  assert.equal(writer.buffered, 0, "closed: refused");
});

Deno.test("a write's promise resolves after its commit; concurrent writes share a commit", async () => {
  const commits: string[][] = [];
  let release!: () => void;
  const writer = new OutboxWriter({
    store: {
      append: async (events) => {
        commits.push(events.map((e) => e.key));
        if (commits.length === 1) await new Promise<void>((resolve) => release = resolve);
      },
    },
    deliver: () => true,
  });
  let firstDone = false;
  const first = writer.committed("b", info("a"), null).then(() => firstDone = true);
  await new Promise((resolve) => setTimeout(resolve, 5));
  assert.deepEqual(commits, [["a"]], "the first event commits at once");
  const later = ["b", "c", "d"].map((key) => writer.committed("b", info(key), null));
  assert.equal(firstDone, false, "not answered before its commit ends");
  release();
  await first;
  await Promise.all(later);
  assert.deepEqual(commits, [["a"], ["b", "c", "d"]], "arrivals during a commit form the next");
  await writer.close();
});

Deno.test("journaled removals: moved in order when they happen, dropped or settled at start", async () => {
  const journal = new Map<number, { key: string; events: ObjectEvent[] }>();
  const outbox: string[] = [];
  let nextId = 1;
  const store = {
    append: (events: readonly ObjectEvent[], _deliver: boolean, _now: number, settled = []) => {
      outbox.push(...events.map((e) => `${e.kind}:${e.key}`));
      for (const id of settled as number[]) journal.delete(id);
      return Promise.resolve();
    },
    journal: (object: { key: string }, events: readonly ObjectEvent[]) => {
      journal.set(nextId, { key: object.key, events: [...events] });
      return Promise.resolve(nextId++);
    },
    journaled: () =>
      Promise.resolve([...journal].map(([id, entry]) => ({
        id,
        object: { bucket: "b", key: entry.key, etag: "e" },
        events: entry.events,
      }))),
  };
  const writer = new OutboxWriter({ store, deliver: () => true });
  const removal = (key: string) =>
    [
      { ...info(key), kind: "ObjectDeleted" },
      { ...info(key), kind: "LifecycleExpired" },
    ].map((e) => ({ ...e, id: key, bucket: "b", key: e.key }) as unknown as ObjectEvent);
  const gone = await writer.journal({ bucket: "b", key: "gone", etag: "e" }, removal("gone"));
  const kept = await writer.journal({ bucket: "b", key: "kept", etag: "e" }, removal("kept"));
  assert.equal(journal.size, 2, "journaled before the removals");
  await writer.committed("b", info("before"), null);
  await writer.removed("b", info("gone"), { ...context, operation: "lifecycle", journal: gone });
  await writer.settle(kept!, false);
  assert.deepEqual(outbox, ["ObjectCreated:before", "ObjectDeleted:gone", "LifecycleExpired:gone"]);
  assert.equal(journal.size, 0, "both entries settled");

  // Entries a crash left: a fresh writer settles them by what is there now.
  outbox.length = 0;
  journal.set(nextId++, { key: "x-removed", events: removal("x-removed") });
  journal.set(nextId++, { key: "y-there", events: removal("y-there") });
  const restarted = new OutboxWriter({ store, deliver: () => true });
  const happened = await restarted.settleJournal((object) =>
    Promise.resolve(object.key === "y-there")
  );
  assert.equal(happened, 1);
  assert.deepEqual(outbox, ["ObjectDeleted:x-removed", "LifecycleExpired:x-removed"]);
  assert.equal(journal.size, 0);
  await writer.close();
  await restarted.close();
});
