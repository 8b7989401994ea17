import assert from "node:assert/strict";
import { parse } from "yaml";
import { openConfigDb } from "./config-db.ts";
import { IamReconciler } from "./iam-reconciler.ts";
import { IamStore } from "./iam-store.ts";
import { IamError } from "../iam/model.ts";
import { planReconcile, previewLine, summaryLine } from "../iam/reconcile.ts";
import { desiredIam } from "../iam/declarative.ts";
import { declarativeIamExport } from "../iam/declarative-export.ts";
import { HASH_A } from "../../tests/helpers/config-db.ts";

type Access = Record<string, unknown>;

async function withDb(fn: (r: IamReconciler, store: IamStore) => Promise<void>) {
  const dir = await Deno.makeTempDir({ prefix: "svc-reconcile-" });
  const db = await openConfigDb({ dir, passwordHash: HASH_A });
  let rebuilds = 0;
  const reconciler = new IamReconciler(db, { onChange: () => Promise.resolve(++rebuilds) });
  try {
    await fn(reconciler, new IamStore(db));
  } finally {
    await db.close();
    await Deno.remove(dir, { recursive: true });
    await letFinalizersRun();
  }
}

/**
 * libsql's native statement objects that are still awaiting garbage collection when the test
 * process exits can crash Deno's teardown (SIGSEGV after every test passed; reproducible with the
 * bare @libsql/client and a few hundred statements). Churning short-lived objects lets the
 * collector finalize them while the process is alive.
 */
async function letFinalizersRun(): Promise<void> {
  let sink: unknown = null;
  for (let i = 0; i < 3_000_000; i++) sink = { i };
  if (sink === null) throw new Error("unreachable");
  await new Promise((resolve) => setTimeout(resolve, 20));
}

const readAll = { effect: "Allow", actions: ["read", "list"], resources: ["data"] };

function base(): Access {
  return {
    iam_groups: [
      { name: "readers", description: "read data", permissions: [readAll] },
      { name: "ops", permissions: [{ actions: ["*"], resources: ["*"] }] },
    ],
    iam_users: [
      {
        name: "alice",
        access_key_id: "AKIAALICE0000000",
        secret_access_key: "alice-secret-123",
        groups: ["readers"],
      },
      {
        name: "bob",
        access_key_id: "AKIABOB000000000",
        secret_access_key: "bob-secret-12345",
        groups: ["ops", "readers"],
        permissions: [{ effect: "Deny", actions: ["delete"], resources: ["data/keep/*"] }],
      },
    ],
    auth_providers: [{
      name: "corp",
      client_id: "svc",
      client_secret: "oidc-secret",
      issuer_url: "https://login.example.com",
    }],
    group_mapping_rules: [{ provider: "corp", match_value: "example.com", group: "readers" }],
  };
}

async function refusal(fn: () => Promise<unknown>): Promise<string> {
  try {
    await fn();
  } catch (err) {
    assert.ok(err instanceof IamError, String(err));
    assert.equal(err.kind, "invalid");
    return err.message;
  }
  assert.fail("expected a refusal");
}

Deno.test("reconcile: creates from empty, then a re-apply is a no-op without a version bump", async () => {
  await withDb(async (reconciler, store) => {
    const preview = await reconciler.preview(base());
    assert.equal(
      previewLine(preview),
      "declarative IAM preview: users(+2/~0/-0) groups(+2/~0/-0) providers(+1/~0/-0) " +
        "mapping_rules=replace",
    );
    assert.equal(await store.version(), 0, "a preview writes nothing");
    const plan = await reconciler.reconcile(base());
    assert.equal(
      summaryLine(plan),
      "declarative IAM reconciled: 2 users (+2/~0/-0), 2 groups (+2/~0/-0), 1 providers " +
        "(+1/~0/-0), 1 mapping rules replaced",
    );
    assert.equal(await store.version(), 1, "one transaction, one bump");
    const users = await store.listUsers();
    assert.deepEqual(users.map((u) => [u.name, u.groups]), [
      ["alice", ["readers"]],
      ["bob", ["ops", "readers"]],
    ]);
    const snapshot = await store.snapshot();
    assert.equal(snapshot.users[0].secret_access_key, "alice-secret-123");

    const again = await reconciler.reconcile(base());
    assert.equal(summaryLine(again), null);
    assert.equal(
      previewLine(await reconciler.preview(base())),
      "declarative IAM preview: no IAM changes (idempotent apply)",
    );
    assert.equal(await store.version(), 1);
  });
});

Deno.test("reconcile: updates keep row ids, deletes cascade memberships, rules keep or replace", async () => {
  await withDb(async (reconciler, store) => {
    await reconciler.reconcile(base());
    const before = new Map((await store.listUsers()).map((u) => [u.name, u.id]));
    const groupsBefore = new Map((await store.listGroups()).map((g) => [g.name, g.id]));
    const next = base();
    const users = next.iam_users as Access[];
    users[0].enabled = false; // alice changes
    users.splice(1, 1); // bob goes
    users.push({
      name: "carol",
      access_key_id: "AKIACAROL0000000",
      secret_access_key: "carol-secret-1",
    });
    (next.iam_groups as Access[]).splice(1, 1); // ops goes
    const plan = await reconciler.reconcile(next);
    assert.equal(
      summaryLine(plan),
      "declarative IAM reconciled: 2 users (+1/~1/-1), 1 groups (+0/~0/-1), 1 providers " +
        "(+0/~0/-0), 0 mapping rules replaced",
    );
    const after = await store.listUsers();
    assert.equal(after.find((u) => u.name === "alice")!.id, before.get("alice"), "id kept");
    assert.equal(after.find((u) => u.name === "alice")!.enabled, false);
    assert.equal(after.some((u) => u.name === "bob"), false);
    const readers = (await store.listGroups()).find((g) => g.name === "readers")!;
    assert.equal(readers.id, groupsBefore.get("readers"));
    assert.deepEqual(readers.members, ["alice"], "bob's membership went with him");

    // Rules: a changed list is wiped and rebuilt; zero YAML rules clears the table.
    next.group_mapping_rules = [];
    assert.match(previewLine(await reconciler.preview(next)), /mapping_rules=replace/);
    await reconciler.reconcile(next);
    assert.deepEqual((await reconciler.state()).rules, []);
  });
});

Deno.test("reconcile: an empty secret keeps the stored one; keys may swap between kept users", async () => {
  await withDb(async (reconciler, store) => {
    await reconciler.reconcile(base());
    const next = base();
    const [alice, bob] = next.iam_users as Access[];
    alice.secret_access_key = "";
    bob.secret_access_key = "";
    [alice.access_key_id, bob.access_key_id] = [bob.access_key_id, alice.access_key_id];
    await reconciler.reconcile(next);
    const users = (await store.snapshot()).users;
    assert.equal(users[0].access_key_id, "AKIABOB000000000");
    assert.equal(users[0].secret_access_key, "alice-secret-123", "secret kept");
    assert.equal(users[1].access_key_id, "AKIAALICE0000000");
  });
});

Deno.test("reconcile: every refusal changes nothing and names the culprit", async () => {
  await withDb(async (reconciler, store) => {
    await reconciler.reconcile(base());
    const version = await store.version();
    const stateBefore = JSON.stringify(await reconciler.state());
    const cases: [string, (a: Access) => void, RegExp][] = [
      [
        "duplicate user",
        (a) =>
          (a.iam_users as Access[]).push({
            ...(a.iam_users as Access[])[0],
            access_key_id: "AKIAOTHER0000000",
          }),
        /duplicate user name "alice"/,
      ],
      [
        "duplicate key",
        (a) => ((a.iam_users as Access[])[1].access_key_id = "AKIAALICE0000000"),
        /duplicate access key "AKIAALICE0000000"/,
      ],
      [
        "duplicate group",
        (a) => (a.iam_groups as Access[]).push({ name: "ops" }),
        /duplicate group name "ops"/,
      ],
      [
        "unknown group",
        (a) => ((a.iam_users as Access[])[0].groups = ["ghosts"]),
        /unknown group "ghosts"/,
      ],
      [
        "rule provider",
        (a) => ((a.group_mapping_rules as Access[])[0].provider = "nope"),
        /unknown provider "nope"/,
      ],
      [
        "rule group",
        (a) => ((a.group_mapping_rules as Access[])[0].group = "nobody"),
        /unknown group "nobody"/,
      ],
      [
        "permission",
        (
          a,
        ) => ((a.iam_groups as Access[])[0].permissions = [{ actions: ["fly"], resources: ["x"] }]),
        /unknown action "fly"/,
      ],
      ["reserved", (a) => ((a.iam_users as Access[])[0].name = "$bootstrap"), /reserved/],
      [
        "variable",
        (
          a,
        ) => ((a.iam_groups as Access[])[0].permissions = [{
          actions: ["read"],
          resources: ["data/${username}/*"],
        }]),
        /unknown variable \$\{username\}/,
      ],
      [
        "new without secret",
        (a) => (a.iam_users as Access[]).push({ name: "dave", access_key_id: "AKIADAVE00000000" }),
        /"dave" is new and needs a secret_access_key/,
      ],
      ["key of a deleted user", (a) => {
        const users = a.iam_users as Access[];
        users.splice(1, 1); // bob is deleted …
        users.push({
          name: "erin",
          access_key_id: "AKIABOB000000000",
          secret_access_key: "erin-secret-12",
        });
      }, /"AKIABOB000000000" of user "erin" belongs to user "bob", which this apply deletes/],
    ];
    // Each case is refused by the planner over the database's state (what preview and reconcile
    // both run first); two go through reconcile itself to show the database stays as it was.
    const state = await reconciler.state();
    for (const [label, edit, expected] of cases) {
      const access = base();
      edit(access);
      const plan = () => Promise.resolve(planReconcile(desiredIam(access), state));
      assert.match(await refusal(plan), expected, label);
    }
    for (const [label, edit, expected] of [cases[1], cases[cases.length - 1]]) {
      const access = base();
      edit(access);
      assert.match(await refusal(() => reconciler.reconcile(access)), expected, label);
    }
    assert.equal(await store.version(), version);
    assert.equal(JSON.stringify(await reconciler.state()), stateBefore);
  });
});

Deno.test("reconcile: export → apply → export is identical, with and without secrets", async () => {
  await withDb(async (reconciler, store) => {
    await reconciler.reconcile(base());
    // A binding made outside the YAML (an OAuth callback, or a backup import).
    const identity = {
      user: "alice",
      provider: "corp",
      subject: "sub-1",
      email: "alice@example.com",
      claims: { email_verified: true },
    };
    await reconciler.reconcile({ ...base(), external_identities: [identity] });
    const version = await store.version();
    for (const includeSecrets of [false, true]) {
      const exported = declarativeIamExport(await reconciler.state(), includeSecrets);
      const fragment = parse(exported).access as Access;
      assert.equal(fragment.iam_mode, "declarative");
      const plan = await reconciler.reconcile(fragment);
      assert.equal(summaryLine(plan), null, `no-op (include_secrets=${includeSecrets})`);
      assert.equal(declarativeIamExport(await reconciler.state(), includeSecrets), exported);
      assert.equal(exported.includes("alice-secret-123"), includeSecrets);
      assert.equal(exported.includes("oidc-secret"), includeSecrets);
      assert.equal(exported.includes("sub-1"), includeSecrets);
    }
    assert.equal(await store.version(), version);

    // Deleting the user drops its binding; absent external_identities never deletes one.
    const next = base();
    (next.iam_users as Access[]).splice(0, 1);
    (next.iam_users as Access[])[0].groups = ["ops"];
    await reconciler.reconcile(next);
    assert.deepEqual((await reconciler.state()).identities, []);
  });
});

Deno.test("reconcile: no user may hold the bootstrap key id; the refusal changes nothing", async () => {
  await withDb(async (reconciler, store) => {
    const access = base();
    const version = await store.version();
    for (
      const run of [
        () => reconciler.preview(access, "AKIABOB000000000"),
        () => reconciler.reconcile(access, "AKIABOB000000000"),
      ]
    ) {
      await assert.rejects(
        run(),
        (err: Error) =>
          err instanceof IamError && err.kind === "conflict" &&
          /access\.iam_users\.1 \(user "bob"\): access key "AKIABOB000000000" is the bootstrap key/
            .test(err.message),
      );
    }
    assert.equal(await store.version(), version);
    assert.deepEqual(await store.listUsers(), []);
    // Another key id as the bootstrap key: applies as usual.
    await reconciler.reconcile(access, "AKIABOOTSTRAP000");
    assert.equal((await store.listUsers()).length, 2);
  });
});
