import assert from "node:assert/strict";
import { openConfigDb } from "./config-db.ts";
import { IamStore } from "./iam-store.ts";
import { IamError } from "../iam/model.ts";
import { fileContains, HASH_A } from "../../tests/helpers/config-db.ts";

async function kind(fn: () => Promise<unknown>): Promise<string> {
  try {
    await fn();
  } catch (err) {
    assert.ok(err instanceof IamError, String(err));
    return err.kind;
  }
  return "none";
}

Deno.test("IAM rows survive a restart with the version; secrets are not in the file", async () => {
  const dir = await Deno.makeTempDir();
  try {
    let db = await openConfigDb({ dir, passwordHash: HASH_A });
    let store = new IamStore(db);
    assert.equal(await store.version(), 0);
    const group = await store.createGroup({ name: "team", description: "the team" });
    const user = await store.createUser({ name: "alice", groups: ["team"] });
    assert.equal(await store.version(), 2);
    const listed = await store.listUsers();
    assert.equal(JSON.stringify(listed).includes(user.secret_access_key), false);
    assert.equal(listed[0].has_secret, true);
    assert.deepEqual(listed[0].groups, ["team"]);
    await db.close();
    assert.equal(await fileContains(db.path, user.secret_access_key), false, "encrypted at rest");

    db = await openConfigDb({ dir, passwordHash: HASH_A });
    store = new IamStore(db);
    assert.equal(await store.version(), 2);
    assert.deepEqual((await store.getGroup(group.id)).members, ["alice"]);
    const snapshot = await store.snapshot();
    assert.equal(snapshot.users[0].secret_access_key, user.secret_access_key);
    await db.close();
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("names and keys are unique; a refused change changes nothing", async () => {
  const dir = await Deno.makeTempDir();
  const db = await openConfigDb({ dir, passwordHash: HASH_A });
  try {
    const store = new IamStore(db);
    const alice = await store.createUser({ name: "alice", access_key_id: "AKIAALICE0000000" });
    const version = await store.version();
    assert.equal(await kind(() => store.createUser({ name: "alice" })), "conflict");
    assert.equal(
      await kind(() => store.createUser({ name: "bob", access_key_id: "AKIAALICE0000000" })),
      "conflict",
    );
    assert.equal(await kind(() => store.createUser({ name: "bob", groups: ["nope"] })), "invalid");
    assert.equal(
      await kind(() => store.createUser({ name: "bob", permissions: [{ actions: ["x"] }] })),
      "invalid",
    );
    assert.equal(await kind(() => store.updateUser("missing", { enabled: false })), "not_found");
    assert.equal(await store.version(), version, "no refused change bumped the version");
    assert.deepEqual((await store.listUsers()).map((u) => u.name), ["alice"]);
    assert.equal((await store.getUser(alice.id)).access_key_id, "AKIAALICE0000000");
  } finally {
    await db.close();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("clone copies permissions and groups with new keys; deletes cascade memberships", async () => {
  const dir = await Deno.makeTempDir();
  const db = await openConfigDb({ dir, passwordHash: HASH_A });
  try {
    const store = new IamStore(db);
    const group = await store.createGroup({
      name: "g",
      permissions: [{ actions: ["read"], resources: ["b"] }],
    });
    const source = await store.createUser({
      name: "src",
      groups: ["g"],
      permissions: [{ actions: ["write"], resources: ["b/in/*"] }],
    });
    const clone = await store.cloneUser(source.id, "copy");
    assert.notEqual(clone.access_key_id, source.access_key_id);
    assert.notEqual(clone.secret_access_key, source.secret_access_key);
    assert.deepEqual(clone.permissions, source.permissions);
    assert.deepEqual(clone.groups, ["g"]);
    const groupClone = await store.cloneGroup(group.id, "g2");
    assert.deepEqual(groupClone.permissions, group.permissions);
    assert.deepEqual(groupClone.members, []);

    await store.addMember(groupClone.id, source.id);
    await store.addMember(groupClone.id, source.id);
    assert.deepEqual((await store.getGroup(groupClone.id)).members, ["src"]);
    await store.removeMember(groupClone.id, source.id);
    assert.equal(await kind(() => store.removeMember(groupClone.id, source.id)), "not_found");

    await store.deleteGroup(group.id);
    assert.deepEqual((await store.getUser(source.id)).groups, []);
    await store.deleteUser(clone.id);
    const rows = await db.execute("SELECT count(*) AS n FROM iam_memberships");
    assert.equal(Number(rows.rows[0].n), 0);
  } finally {
    await db.close();
    await Deno.remove(dir, { recursive: true });
  }
});
