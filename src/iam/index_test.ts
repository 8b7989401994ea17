import assert from "node:assert/strict";
import { openConfigDb } from "../db/config-db.ts";
import { IamStore } from "../db/iam-store.ts";
import { HASH_A } from "../../tests/helpers/config-db.ts";
import { IamCredentials, IamIndexHolder } from "./index.ts";
import { encodeTemplateValue } from "./evaluate.ts";

async function withIam(fn: (store: IamStore, holder: IamIndexHolder) => Promise<void>) {
  const dir = await Deno.makeTempDir();
  const db = await openConfigDb({ dir, passwordHash: HASH_A });
  try {
    const store = new IamStore(db);
    await fn(store, new IamIndexHolder(store));
  } finally {
    await db.close();
    await Deno.remove(dir, { recursive: true });
  }
}

Deno.test("admin, read-only and home users decide as their permissions say; Deny wins", async () => {
  await withIam(async (store, holder) => {
    await store.createGroup({
      name: "readers",
      permissions: [{ actions: ["read", "list"], resources: ["photos"] }],
    });
    const admin = await store.createUser({
      name: "root",
      permissions: [{ actions: ["*"], resources: ["*"] }],
    });
    const reader = await store.createUser({
      name: "rita",
      groups: ["readers"],
      permissions: [{ effect: "Deny", actions: ["read"], resources: ["photos/secret/*"] }],
    });
    const homer = await store.createUser({
      name: "homer",
      permissions: [{
        actions: ["read", "list", "write", "delete"],
        resources: ["photos/home/${iam:username}/*"],
      }],
    });
    const index = await holder.rebuild();
    const p = (u: { name: string; access_key_id: string }) => ({
      name: u.name,
      accessKeyId: u.access_key_id,
    });
    const can = (
      u: typeof admin,
      action: "read" | "write" | "list" | "delete" | "admin",
      key?: string,
      prefix?: string,
    ) => index.authorize(p(u), { action, bucket: "photos", key, prefix }).allowed;

    assert.equal(can(admin, "delete", "any/key"), true);
    assert.equal(index.isAdmin(p(admin)), true);
    assert.equal(index.isAdmin(p(reader)), false);

    assert.equal(can(reader, "read", "cat.jpg"), true);
    assert.equal(can(reader, "write", "cat.jpg"), false);
    const denied = index.authorize(p(reader), {
      action: "read",
      bucket: "photos",
      key: "secret/x",
    });
    assert.equal(denied.allowed, false);
    assert.equal(denied.reason, "explicit_deny");
    assert.equal(denied.reason === "explicit_deny" && denied.statement.source, "user");
    const allowed = index.authorize(p(reader), { action: "read", bucket: "photos", key: "a" });
    assert.equal(allowed.reason === "allow" && allowed.statement.source, "group:readers");
    assert.equal(
      index.authorize(p(reader), { action: "read", bucket: "other", key: "a" }).reason,
      "no_match",
    );

    assert.equal(can(homer, "write", "home/homer/notes.txt"), true);
    assert.equal(can(homer, "read", "home/rita/notes.txt"), false);
    assert.equal(can(homer, "read", "top.txt"), false);
    // Listing: allowed at the root and at home/ (filtered), inside the home, not elsewhere.
    assert.equal(can(homer, "list", undefined, ""), true);
    assert.equal(can(homer, "list", undefined, "home/"), true);
    assert.equal(can(homer, "list", undefined, "home/homer/sub/"), true);
    assert.equal(can(homer, "list", undefined, "home/rita/"), false);
    assert.equal(can(homer, "list", undefined, "docs/"), false);
    const filter = index.keyFilter(p(homer), { bucket: "photos", prefix: "" });
    assert.deepEqual(
      ["top.txt", "home/homer/a", "home/rita/b", "home/homerx/c"].filter(filter.key),
      ["home/homer/a"],
    );
    assert.deepEqual(
      ["home/", "docs/", "home/homer/", "home/rita/"].filter(filter.commonPrefix),
      ["home/", "home/homer/"],
    );
    assert.deepEqual(
      index.bucketsVisible(p(homer), ["docs", "photos", "zeta"]),
      ["photos"],
    );
    assert.deepEqual(index.bucketsVisible(p(admin), ["docs", "photos"]), ["docs", "photos"]);
  });
});

Deno.test("a templated group permission expands per member; a plain one is shared", async () => {
  await withIam(async (store, holder) => {
    await store.createGroup({
      name: "staff",
      permissions: [
        { actions: ["read"], resources: ["team"] },
        { actions: ["write"], resources: ["team/home/${iam:username}/*"] },
      ],
    });
    const ann = await store.createUser({ name: "ann", groups: ["staff"] });
    const ben = await store.createUser({ name: "ben", groups: ["staff"] });
    const index = await holder.rebuild();
    const write = (u: typeof ann, key: string) =>
      index.authorize(
        { name: u.name, accessKeyId: u.access_key_id },
        { action: "write", bucket: "team", key },
      ).allowed;
    assert.equal(write(ann, "home/ann/x"), true);
    assert.equal(write(ann, "home/ben/x"), false);
    assert.equal(write(ben, "home/ben/x"), true);
    assert.equal(write(ben, "home/ann/x"), false);
    const read = (u: typeof ann) =>
      index.authorize(
        { name: u.name, accessKeyId: u.access_key_id },
        { action: "read", bucket: "team", key: "any" },
      );
    const annRead = read(ann);
    assert.equal(
      annRead.allowed && annRead.reason === "allow" && annRead.statement.source,
      "group:staff",
    );
    assert.equal(read(ben).allowed, true);
  });
});

Deno.test("template values are percent-encoded so they cannot widen a grant", () => {
  assert.equal(encodeTemplateValue("alice"), "alice");
  assert.equal(encodeTemplateValue("a/*"), "a%2F%2A");
  assert.equal(encodeTemplateValue("é"), "%C3%A9");
});

Deno.test("aws:SourceIp and s3:prefix conditions hold", async () => {
  await withIam(async (store, holder) => {
    const user = await store.createUser({
      name: "office",
      permissions: [
        {
          actions: ["read", "list"],
          resources: ["data"],
          conditions: { IpAddress: { "aws:SourceIp": ["10.0.0.0/8"] } },
        },
        {
          effect: "Deny",
          actions: ["list"],
          resources: ["data"],
          conditions: { StringLike: { "s3:prefix": ["private/*"] } },
        },
      ],
    });
    const index = await holder.rebuild();
    const p = { name: user.name, accessKeyId: user.access_key_id };
    const read = (sourceIp: string) =>
      index.authorize(p, { action: "read", bucket: "data", key: "k", sourceIp }).allowed;
    assert.equal(read("10.1.2.3"), true);
    assert.equal(read("192.168.0.1"), false);
    const list = (prefix: string) =>
      index.mayList(p, { bucket: "data", prefix, sourceIp: "10.0.0.1" });
    assert.equal(list("public/"), true);
    assert.equal(list("private/x"), false);
  });
});

Deno.test("the holder swaps on change: disabled, rotated and deleted keys stop at once", async () => {
  await withIam(async (store, holder) => {
    const credentials = new IamCredentials(holder);
    const user = await store.createUser({ name: "u", permissions: [] });
    assert.equal(credentials.lookup(user.access_key_id), null, "not built yet");
    await holder.rebuild();
    assert.equal(holder.version, await store.version());
    const found = credentials.lookup(user.access_key_id);
    assert.equal(found?.secretAccessKey, user.secret_access_key);
    assert.deepEqual(found?.principal, { name: "u", accessKeyId: user.access_key_id });

    await store.updateUser(user.id, { enabled: false });
    await holder.rebuild();
    assert.equal(credentials.lookup(user.access_key_id), null);
    await store.updateUser(user.id, { enabled: true });
    const rotated = await store.rotateKeys(user.id);
    await holder.rebuild();
    assert.equal(credentials.lookup(user.access_key_id), null, "old key refused");
    assert.equal(
      credentials.lookup(rotated.access_key_id)?.secretAccessKey,
      rotated.secret_access_key,
    );
    const stale = { name: "u", accessKeyId: user.access_key_id };
    assert.equal(holder.current.authorize(stale, { action: "read" }).reason, "unknown_principal");
    await store.deleteUser(user.id);
    await holder.rebuild();
    assert.equal(credentials.lookup(rotated.access_key_id), null);
    // Bootstrap stays an admin whatever IAM holds.
    assert.equal(holder.current.isAdmin({ name: "$bootstrap", accessKeyId: "boot" }), true);
  });
});

Deno.test("concurrent rebuild requests all end on the newest version", async () => {
  await withIam(async (store, holder) => {
    await store.createUser({ name: "a" });
    const first = holder.rebuild();
    await store.createUser({ name: "b" });
    const second = holder.rebuild();
    const third = holder.rebuild();
    await Promise.all([first, second, third]);
    assert.equal(holder.version, await store.version());
    assert.equal(holder.current.userCount, 2);
  });
});

Deno.test("listVisibility: free for whole-bucket readers, read-filtered for the rest", async () => {
  await withIam(async (store, holder) => {
    const admin = await store.createUser({
      name: "root",
      permissions: [{ actions: ["*"], resources: ["*"] }],
    });
    const reader = await store.createUser({
      name: "rita",
      permissions: [{ actions: ["read", "list"], resources: ["photos"] }],
    });
    const lister = await store.createUser({
      name: "homer",
      permissions: [
        { actions: ["list"], resources: ["photos"] },
        { actions: ["read", "write"], resources: ["photos/home/${iam:username}/*"] },
      ],
    });
    const denied = await store.createUser({
      name: "dora",
      permissions: [
        { actions: ["read", "list"], resources: ["photos"] },
        { effect: "Deny", actions: ["read"], resources: ["photos/secret/*"] },
      ],
    });
    const index = await holder.rebuild();
    const view = (u: { name: string; access_key_id: string }) =>
      index.listVisibility({ name: u.name, accessKeyId: u.access_key_id }, {
        bucket: "photos",
        prefix: "",
      });
    // No per-key cost where both actions cover the whole bucket.
    assert.equal(view(admin), undefined);
    assert.equal(view(reader), undefined);
    // list on the bucket, read on the home: only the home range is read, no filter needed.
    assert.deepEqual(view(lister), { prefixes: ["home/homer/"] });
    // A Deny on reading part of the bucket: filtered, and the denied range may be jumped.
    const filtered = view(denied)!;
    assert.deepEqual(filtered.prefixes, [""]);
    assert.equal(filtered.visible!("secret/a", "object"), false);
    assert.equal(filtered.visible!("open/a", "object"), true);
    assert.equal(filtered.hiddenRange!("secret/a"), "secret/");
    assert.equal(filtered.hiddenRange!("open/a"), undefined);
  });
});
