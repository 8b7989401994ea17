/**
 * The IAM admin routes through a real Hono app over a real config DB file, the real audit ring and
 * the real index holder; only the config port is the tests' (real validation, no file).
 */
import assert from "node:assert/strict";
import { Hono } from "hono";
import { openConfigDb } from "../../db/config-db.ts";
import { IamStore } from "../../db/iam-store.ts";
import { IamCredentials, IamIndexHolder } from "../../iam/index.ts";
import { AuditRing } from "../../observability/audit-ring.ts";
import { FakeConfigPort } from "../../../tests/helpers/fake-config-port.ts";
import { HASH_A } from "../../../tests/helpers/config-db.ts";
import type { AdminEnv } from "../admin-env.ts";
import { renderAdminError } from "../admin-error.ts";
import { iamRoutes } from "./iam-routes.ts";

async function withApp(
  mode: "gui" | "declarative",
  fn: (t: {
    call: (method: string, path: string, body?: unknown) => Promise<Response>;
    ring: AuditRing;
    holder: IamIndexHolder;
    store: IamStore;
  }) => Promise<void>,
) {
  const dir = await Deno.makeTempDir();
  const db = await openConfigDb({ dir, passwordHash: HASH_A });
  try {
    const store = new IamStore(db);
    const holder = new IamIndexHolder(store);
    const ring = new AuditRing();
    const config = new FakeConfigPort({
      access: { iam_mode: mode, access_key_id: "BOOTKEY", secret_access_key: "bootsecret" },
    });
    const app = new Hono<AdminEnv>();
    app.onError(renderAdminError);
    app.use("*", async (c, next) => {
      c.set("clientIp", "10.0.0.9");
      c.set("requestId", "r1");
      c.set("principal", { user: "$bootstrap", admin: true, sessionId: "s1" });
      await next();
    });
    app.route(
      "/_/api/admin",
      iamRoutes({
        store,
        config,
        audit: (event, fields, level) => void ring.record(event, fields, level),
        onChange: () => holder.rebuild(),
        indexVersion: () => holder.version,
      }),
    );
    const call = async (method: string, path: string, body?: unknown) =>
      await app.request(`/_/api/admin${path}`, {
        method,
        headers: body === undefined ? {} : { "content-type": "application/json" },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
    await fn({ call, ring, holder, store });
  } finally {
    await db.close();
    await Deno.remove(dir, { recursive: true });
  }
}

Deno.test("users: the secret is shown once, never listed; changes reach the index at once", async () => {
  await withApp("gui", async ({ call, ring, holder }) => {
    const credentials = new IamCredentials(holder);
    const group = await (await call("POST", "/groups", {
      name: "readers",
      permissions: [{ actions: ["read", "list"], resources: ["photos"] }],
    })).json();
    const created = await call("POST", "/users", { name: "alice", groups: ["readers"] });
    assert.equal(created.status, 201);
    const alice = await created.json();
    assert.match(alice.secret_access_key, /^[A-Za-z0-9]{40}$/);
    assert.equal(credentials.lookup(alice.access_key_id)?.secretAccessKey, alice.secret_access_key);

    const listText = await (await call("GET", "/users")).text();
    assert.equal(listText.includes(alice.secret_access_key), false);
    assert.equal(JSON.parse(listText).users[0].has_secret, true);

    const rotated = await (await call("POST", `/users/${alice.id}/rotate-keys`)).json();
    assert.notEqual(rotated.access_key_id, alice.access_key_id);
    assert.equal(credentials.lookup(alice.access_key_id), null, "the old key stops at once");

    const disabled = await call("PUT", `/users/${alice.id}`, { enabled: false });
    assert.equal(disabled.status, 200);
    assert.equal("secret_access_key" in await disabled.json(), false);
    assert.equal(credentials.lookup(rotated.access_key_id), null);

    const clone = await (await call("POST", `/users/${alice.id}/clone`, { name: "bob" })).json();
    assert.deepEqual(clone.groups, ["readers"]);
    assert.ok(clone.secret_access_key);

    const version = await (await call("GET", "/iam/version")).json();
    assert.equal(version.version, version.store_version);
    assert.equal(version.version, 5);

    assert.equal((await call("DELETE", `/groups/${group.id}/members/${clone.id}`)).status, 200);
    assert.equal(
      (await call("POST", `/groups/${group.id}/members`, { user_id: clone.id })).status,
      200,
    );
    assert.equal((await call("DELETE", `/users/${clone.id}`)).status, 200);
    assert.equal(credentials.lookup(clone.access_key_id), null);

    const events = ring.snapshot().map((e) => e.event);
    for (
      const event of [
        "iam_group_created",
        "iam_user_created",
        "iam_user_keys_rotated",
        "iam_user_updated",
        "iam_user_cloned",
        "iam_group_member_removed",
        "iam_group_member_added",
        "iam_user_deleted",
      ]
    ) assert.ok(events.includes(event), event);
    const audit = JSON.stringify(ring.snapshot());
    assert.equal(audit.includes(alice.secret_access_key), false, "no secret in the audit");
    assert.equal(audit.includes(rotated.secret_access_key), false);
    assert.match(audit, /"user":"\$bootstrap"/);
  });
});

Deno.test("bad input answers JSON errors and changes nothing", async () => {
  await withApp("gui", async ({ call, store }) => {
    const bad = await call("POST", "/users", {
      name: "eve",
      permissions: [{ actions: ["read"], resources: ["b/${username}/*"] }],
    });
    assert.equal(bad.status, 400);
    assert.match((await bad.json()).message, /unknown variable \$\{username\}/);
    assert.equal((await call("POST", "/users", { name: "$root" })).status, 400);
    assert.equal((await call("POST", "/users", { name: "x", secret: "y" })).status, 400);
    await call("POST", "/users", { name: "dup" });
    const dup = await call("POST", "/users", { name: "dup" });
    assert.equal(dup.status, 409);
    assert.equal((await dup.json()).error, "conflict");
    assert.equal((await call("PUT", "/users/nope", { enabled: true })).status, 404);
    assert.equal((await call("POST", "/groups/nope/clone", { name: "g" })).status, 404);
    assert.equal(await store.version(), 1);
  });
});

Deno.test("declarative mode refuses every mutation with iam_declarative; reads stay open", async () => {
  await withApp("declarative", async ({ call, store }) => {
    for (
      const [method, path] of [
        ["POST", "/users"],
        ["PUT", "/users/x"],
        ["DELETE", "/users/x"],
        ["POST", "/users/x/rotate-keys"],
        ["POST", "/users/x/clone"],
        ["POST", "/groups"],
        ["PUT", "/groups/x"],
        ["DELETE", "/groups/x"],
        ["POST", "/groups/x/clone"],
        ["POST", "/groups/x/members"],
        ["DELETE", "/groups/x/members/y"],
      ]
    ) {
      const response = await call(method, path, { name: "n" });
      assert.equal(response.status, 403, `${method} ${path}`);
      assert.equal((await response.json()).error, "iam_declarative");
    }
    assert.equal((await call("GET", "/users")).status, 200);
    assert.equal((await call("GET", "/groups")).status, 200);
    const policies = await (await call("GET", "/policies")).json();
    assert.ok(policies.policies.some((p: { id: string }) => p.id === "home-directory"));
    assert.equal(await store.version(), 0);
  });
});
