import assert from "node:assert/strict";
import { openConfigDb } from "./config-db.ts";
import { IamStore } from "./iam-store.ts";
import { adoptIamSnapshot, SnapshotMismatch, writeIamSnapshot } from "./iam-snapshot.ts";
import { fileContains, HASH_A, HASH_B } from "../../tests/helpers/config-db.ts";
import { IamError } from "../iam/mod.ts";
import { SessionStore } from "./session-store.ts";

Deno.test("IAM snapshot: adopted whole by an instance with the same hash; nothing else travels", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const source = await openConfigDb({ dir: `${dir}/a`, passwordHash: HASH_A });
    const sourceIam = new IamStore(source);
    await sourceIam.createGroup({ name: "team" });
    const alice = await sourceIam.createUser({ name: "alice", groups: ["team"] });
    await source.execute("INSERT INTO meta (key, value) VALUES ('node_local', 'x')");
    await writeIamSnapshot(source, `${dir}/snapshot.db`);
    assert.equal(await fileContains(`${dir}/snapshot.db`, alice.secret_access_key), false);

    const target = await openConfigDb({ dir: `${dir}/b`, passwordHash: HASH_A });
    const targetIam = new IamStore(target);
    await targetIam.createUser({ name: "bob" }); // replaced by the adopted state
    const versionBefore = await targetIam.version();
    assert.deepEqual(await adoptIamSnapshot(target, `${dir}/snapshot.db`), {
      users: 1,
      revocationsAhead: false,
    });
    const users = await targetIam.listUsers();
    assert.deepEqual(users.map((u) => [u.name, u.groups]), [["alice", ["team"]]]);
    assert.equal((await targetIam.snapshot()).users[0].secret_access_key, alice.secret_access_key);
    assert.ok(await targetIam.version() > versionBefore, "the index holder sees a newer version");
    const local = await target.execute("SELECT 1 FROM meta WHERE key = 'node_local'");
    assert.equal(local.rows.length, 0, "only IAM came over");
    const revocations = await target.execute("SELECT COUNT(*) AS n FROM session_revocations");
    assert.equal(Number(revocations.rows[0].n), 0);
    await source.close();
    await target.close();
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("IAM snapshot: another bootstrap hash cannot adopt it, and nothing changes", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const source = await openConfigDb({ dir: `${dir}/a`, passwordHash: HASH_A });
    await new IamStore(source).createUser({ name: "alice" });
    await writeIamSnapshot(source, `${dir}/snapshot.db`);
    const other = await openConfigDb({ dir: `${dir}/b`, passwordHash: HASH_B });
    const otherIam = new IamStore(other);
    await otherIam.createUser({ name: "bob" });
    await assert.rejects(adoptIamSnapshot(other, `${dir}/snapshot.db`), SnapshotMismatch);
    assert.deepEqual((await otherIam.listUsers()).map((u) => u.name), ["bob"]);
    await source.close();
    await other.close();
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("IAM snapshot: a copy giving a user this instance's bootstrap key id is not adopted", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const source = await openConfigDb({ dir: `${dir}/a`, passwordHash: HASH_A });
    await new IamStore(source).createUser({
      name: "intruder",
      access_key_id: "BOOTSTRAPKEY0001",
      secret_access_key: "attacker-secret-01",
    });
    await writeIamSnapshot(source, `${dir}/snapshot.db`);
    const target = await openConfigDb({ dir: `${dir}/b`, passwordHash: HASH_A });
    const targetIam = new IamStore(target);
    await targetIam.createUser({ name: "bob" });
    const versionBefore = await targetIam.version();
    await assert.rejects(
      adoptIamSnapshot(target, `${dir}/snapshot.db`, "BOOTSTRAPKEY0001"),
      (err: Error) =>
        err instanceof IamError && err.kind === "conflict" && /intruder/.test(err.message) &&
        /bootstrap key/.test(err.message),
    );
    assert.deepEqual((await targetIam.listUsers()).map((u) => u.name), ["bob"]);
    assert.equal(await targetIam.version(), versionBefore, "nothing changed");
    // Another instance's bootstrap key id is no concern of this one.
    assert.deepEqual(await adoptIamSnapshot(target, `${dir}/snapshot.db`, "OTHERKEY0001"), {
      users: 1,
      revocationsAhead: false,
    });
    await source.close();
    await target.close();
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("IAM snapshot: session revocations travel and merge; ours ahead is reported", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const source = await openConfigDb({ dir: `${dir}/a`, passwordHash: HASH_A });
    const sourceSessions = new SessionStore(source);
    const expiresAt = Date.now() + 3_600_000;
    const alice = { id: "a".repeat(32), user: "alice", createdAt: 1000, expiresAt };
    const bob = { id: "b".repeat(32), user: "bob", createdAt: 1000, expiresAt };
    await sourceSessions.revokeSession(alice, 2000);
    await writeIamSnapshot(source, `${dir}/snapshot.db`);

    const target = await openConfigDb({ dir: `${dir}/b`, passwordHash: HASH_A });
    const targetSessions = new SessionStore(target);
    assert.equal((await adoptIamSnapshot(target, `${dir}/snapshot.db`)).revocationsAhead, false);
    assert.equal(await targetSessions.revoked(alice), true, "the logout travelled");
    // Revoked here meanwhile: kept on adoption, and reported as not yet published.
    await targetSessions.revokeSession(bob, 3000);
    const adopted = await adoptIamSnapshot(target, `${dir}/snapshot.db`);
    assert.equal(adopted.revocationsAhead, true);
    assert.equal(await targetSessions.revoked(bob), true);
    assert.equal(await targetSessions.revoked(alice), true);
    await source.close();
    await target.close();
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("IAM snapshot: one from the schema before session revocations is adopted", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const source = await openConfigDb({ dir: `${dir}/a`, passwordHash: HASH_A });
    await new IamStore(source).createUser({ name: "alice" });
    await writeIamSnapshot(source, `${dir}/snapshot.db`);
    // What a svc of schema 9 published: no session_revocations table, version 9 recorded.
    const old = source.openSibling(`${dir}/snapshot.db`);
    await old.execute("DROP TABLE session_revocations");
    await old.execute("DELETE FROM schema_migrations WHERE version > 9");
    old.close();
    const target = await openConfigDb({ dir: `${dir}/b`, passwordHash: HASH_A });
    await new SessionStore(target).revokeAll(5000);
    assert.deepEqual(await adoptIamSnapshot(target, `${dir}/snapshot.db`), {
      users: 1,
      revocationsAhead: true,
    });
    assert.deepEqual((await new IamStore(target).listUsers()).map((u) => u.name), ["alice"]);
    // Older than the oldest adoptable one: refused.
    const older = source.openSibling(`${dir}/snapshot.db`);
    await older.execute("DELETE FROM schema_migrations WHERE version > 8");
    older.close();
    await assert.rejects(adoptIamSnapshot(target, `${dir}/snapshot.db`), SnapshotMismatch);
    await source.close();
    await target.close();
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
