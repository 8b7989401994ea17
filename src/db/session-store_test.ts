import assert from "node:assert/strict";
import { fileContains, HASH_A } from "../../tests/helpers/config-db.ts";
import { type ConfigDb, openConfigDb } from "./config-db.ts";
import { SessionStore, tokenHash } from "./session-store.ts";

async function withStore(fn: (store: SessionStore, db: ConfigDb) => Promise<void>) {
  const dir = await Deno.makeTempDir({ prefix: "svc-sessions-" });
  const db = await openConfigDb({ dir, passwordHash: HASH_A });
  try {
    await fn(new SessionStore(db), db);
  } finally {
    await db.close();
    await Deno.remove(dir, { recursive: true });
  }
}

const BASE = { user: "$bootstrap", admin: true, clientIp: "10.0.0.1", createdAt: 1000 };

Deno.test("create, find before expiry, not after, delete", async () => {
  await withStore(async (store) => {
    const created = await store.create("token-1", { ...BASE, expiresAt: 5000 });
    assert.match(created.id, /^[0-9a-f]{32}$/);
    assert.deepEqual(await store.find("token-1", 4999), created);
    assert.equal(await store.find("token-1", 5000), null);
    assert.equal(await store.find("token-2", 1000), null);
    assert.equal(await store.delete(created.id), true);
    assert.equal(await store.delete(created.id), false);
    assert.equal(await store.find("token-1", 1000), null);
  });
});

Deno.test("prune removes only expired rows; deleteAll removes every row", async () => {
  await withStore(async (store) => {
    await store.create("old", { ...BASE, expiresAt: 2000 });
    await store.create("new", { ...BASE, expiresAt: 9000 });
    assert.equal(await store.prune(3000), 1);
    assert.equal(await store.count(3000), 1);
    assert.notEqual(await store.find("new", 3000), null);
    await store.create("third", { ...BASE, expiresAt: 9000 });
    assert.equal(await store.deleteAll(), 2);
    assert.equal(await store.count(0), 0);
  });
});

Deno.test("only a hash of the token is stored, and the file holds neither in clear", async () => {
  await withStore(async (store, db) => {
    const token = "tok-7d1e0c3a9b5f4e2d8c6a0b1f3e5d7c9a";
    await store.create(token, { ...BASE, expiresAt: 9000 });
    const rows = await db.execute("SELECT * FROM sessions");
    const stored = JSON.stringify(rows.rows);
    assert.equal(stored.includes(token), false);
    assert.equal(stored.includes(tokenHash(token)), true);
    await db.close();
    assert.equal(await fileContains(db.path, token), false);
    assert.equal(await fileContains(db.path, tokenHash(token)), false);
  });
});
