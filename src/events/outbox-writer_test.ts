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
