import assert from "node:assert/strict";
import { HASH_A } from "../../tests/helpers/config-db.ts";
import { type ConfigDb, openConfigDb } from "./config-db.ts";
import { SessionStore } from "./session-store.ts";

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

const alice = { id: "a".repeat(32), user: "alice", createdAt: 1000, expiresAt: 5000 };
const bob = { id: "b".repeat(32), user: "bob", createdAt: 1000, expiresAt: 5000 };

Deno.test("a revoked session is revoked; the others are not", async () => {
  await withStore(async (store) => {
    assert.equal(await store.revoked(alice), false);
    await store.revokeSession(alice, 2000);
    assert.equal(await store.revoked(alice), true);
    assert.equal(await store.revoked(bob), false);
  });
});

Deno.test("a user's and every session's revocation void only sessions created before it", async () => {
  await withStore(async (store) => {
    await store.revokeUser("alice", 2000);
    assert.equal(await store.revoked(alice), true);
    assert.equal(await store.revoked({ ...alice, createdAt: 2000 }), false);
    assert.equal(await store.revoked(bob), false);
    await store.revokeAll(3000);
    assert.equal(await store.revoked(bob), true);
    assert.equal(await store.revoked({ ...bob, createdAt: 3000 }), false);
    // An older revocation never moves the point back.
    await store.revokeAll(1500);
    assert.equal(await store.revoked({ ...bob, createdAt: 2500 }), true);
  });
});

Deno.test("prune drops only revocations of sessions that expired anyway", async () => {
  await withStore(async (store) => {
    await store.revokeSession(alice, 2000);
    await store.revokeSession({ ...bob, expiresAt: 9000 }, 2000);
    await store.revokeAll(2000);
    assert.equal(await store.prune(5000), 1);
    assert.deepEqual((await store.list()).map((row) => row.subject), [
      "all",
      `session:${bob.id}`,
    ]);
    assert.equal(await store.revoked({ ...bob, createdAt: 4000 }), true);
  });
});
