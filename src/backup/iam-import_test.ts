/** The one-transaction IAM import over a real config DB file. */
import assert from "node:assert/strict";
import { HASH_A } from "../../tests/helpers/config-db.ts";
import type { IamImport, ImportUser } from "../backup/backup-parts.ts";
import { IamError } from "../iam/model.ts";
import { openConfigDb } from "../db/config-db.ts";
import { importIam } from "./iam-import.ts";
import { IamStore } from "../db/iam-store.ts";

async function withStore(
  fn: (db: Awaited<ReturnType<typeof openConfigDb>>, store: IamStore) => Promise<void>,
) {
  const dir = await Deno.makeTempDir();
  const db = await openConfigDb({ dir, passwordHash: HASH_A });
  try {
    await fn(db, new IamStore(db));
  } finally {
    await db.close();
    await Deno.remove(dir, { recursive: true });
  }
}

const user = (name: string, key: string, groups: string[] = []): ImportUser => ({
  name,
  access_key_id: key,
  secret_access_key: `${name}-secret-0001`,
  enabled: true,
  auth_source: "local",
  groups,
  permissions: [],
});

const plan = (users: ImportUser[], groups: string[] = [], externalIdentities = 0): IamImport => ({
  users,
  groups: groups.map((name) => ({ name, description: `${name} group`, permissions: [] })),
  externalIdentities,
  warnings: [],
});

Deno.test("importIam creates what is absent, skips what exists, and is idempotent", async () => {
  await withStore(async (db, store) => {
    await store.createGroup({ name: "existing" });
    await store.createUser({ name: "resident", access_key_id: "RESIDENTKEY" });
    const v0 = await store.version();
    const backup = plan(
      [
        user("alice", "ALICEKEY", ["ops", "existing"]),
        user("resident", "OTHERKEY", ["ops"]),
        user("thief", "RESIDENTKEY"),
      ],
      ["ops", "existing"],
      2,
    );
    const first = await importIam(db, backup);
    assert.deepEqual(first, {
      users_created: 1,
      users_skipped: 2,
      groups_created: 1,
      groups_skipped: 1,
      memberships_created: 2,
      external_identities_created: 0,
      external_identities_skipped: 2,
      skipped_users: [
        { name: "resident", reason: "name_exists" },
        { name: "thief", reason: "access_key_in_use", held_by: "resident" },
      ],
    });
    assert.equal(await store.version(), v0 + 1);
    const snapshot = await store.snapshot();
    const alice = snapshot.users.find((u) => u.name === "alice")!;
    assert.equal(alice.secret_access_key, "alice-secret-0001");
    assert.deepEqual(alice.groups, ["existing", "ops"]);
    // The existing user was not touched (no membership in the imported group).
    assert.deepEqual(snapshot.users.find((u) => u.name === "resident")!.groups, []);

    const second = await importIam(db, backup);
    assert.equal(second.users_created + second.groups_created + second.memberships_created, 0);
    assert.equal(second.users_skipped, 3);
    assert.equal(await store.version(), v0 + 1);
  });
});

Deno.test("a group named nowhere rolls the whole import back", async () => {
  await withStore(async (db, store) => {
    const before = await store.snapshot();
    await assert.rejects(
      importIam(db, plan([user("a", "AKEY001", ["g"]), user("b", "BKEY001", ["ghost"])], ["g"])),
      (err: unknown) => err instanceof IamError && /group "ghost"/.test(err.message),
    );
    assert.deepEqual(await store.snapshot(), before);
  });
});
