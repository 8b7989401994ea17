import assert from "node:assert/strict";
import { HASH_A } from "../../../tests/helpers/config-db.ts";
import { openConfigDb } from "../../db/config-db.ts";
import { type UsageRow, UsageStore } from "../../db/usage-store.ts";
import { UsageFlusher } from "./usage-flusher.ts";

async function withStore(
  fn: (store: UsageStore, reopen: () => Promise<UsageStore>) => Promise<void>,
) {
  const dir = await Deno.makeTempDir({ prefix: "svc-usage-store-" });
  let db = await openConfigDb({ dir, passwordHash: HASH_A });
  try {
    await fn(new UsageStore(db), async () => {
      await db.close();
      db = await openConfigDb({ dir, passwordHash: HASH_A });
      return new UsageStore(db);
    });
  } finally {
    await db.close();
    await Deno.remove(dir, { recursive: true });
  }
}

const row = (bucket: string, objectCount: number): UsageRow => ({
  bucket,
  objectCount,
  logicalBytes: objectCount * 10,
  storedBytes: objectCount * 5,
  lastScanAt: 1000,
});

Deno.test("many changes become one write of the latest totals; rows survive a reopen", async () => {
  await withStore(async (store, reopen) => {
    const current = new Map<string, UsageRow>();
    let writes = 0;
    const flusher = new UsageFlusher({
      store: {
        write: (rows, removed) => {
          writes++;
          return store.write(rows, removed);
        },
      },
      row: (bucket) => current.get(bucket) ?? null,
      flushDelayMs: 20,
    });
    for (let i = 1; i <= 500; i++) {
      current.set("alpha", row("alpha", i));
      flusher.changed("alpha");
      if (i % 100 === 0) {
        current.set("beta", row("beta", i));
        flusher.changed("beta");
      }
    }
    await new Promise((resolve) => setTimeout(resolve, 80)); // the timer flushes
    assert.equal(writes, 1, "one transaction for 505 changes");
    assert.equal(flusher.pending, 0);
    const stored = (await store.loadAll()).sort((a, b) => a.bucket.localeCompare(b.bucket));
    assert.deepEqual(stored, [row("alpha", 500), row("beta", 500)]);

    current.delete("beta");
    flusher.removed("beta");
    current.set("alpha", row("alpha", 7));
    flusher.changed("alpha");
    await flusher.close();
    const reopened = await reopen();
    assert.deepEqual(await reopened.loadAll(), [row("alpha", 7)]);
  });
});

Deno.test("a failed write keeps its buckets pending and the next flush writes them", async () => {
  await withStore(async (store) => {
    let fail = true;
    const outcomes: string[] = [];
    const flusher = new UsageFlusher({
      store: {
        write: (rows, removed) =>
          fail ? Promise.reject(new Error("disk full")) : store.write(rows, removed),
      },
      row: (bucket) => row(bucket, 3),
      flushDelayMs: 60_000, // flushed by hand below
      onFlush: (outcome) => outcomes.push(outcome),
    });
    flusher.changed("gamma");
    flusher.removed("delta");
    await flusher.flush();
    assert.deepEqual(outcomes, ["error"]);
    assert.equal(flusher.pending, 2, "nothing lost");
    fail = false;
    await flusher.close();
    assert.deepEqual(outcomes, ["error", "ok"]);
    assert.deepEqual(await store.loadAll(), [row("gamma", 3)]);
    flusher.changed("late"); // after close: ignored, no timer left behind
    assert.equal(flusher.pending, 0);
  });
});

Deno.test("a bucket removed then recreated before the flush ends with its new row", async () => {
  await withStore(async (store) => {
    await store.write([row("eps", 9)]);
    const flusher = new UsageFlusher({ store, row: (bucket) => row(bucket, 1) });
    flusher.removed("eps");
    flusher.changed("eps");
    await flusher.close();
    assert.deepEqual(await store.loadAll(), [row("eps", 1)]);
  });
});
