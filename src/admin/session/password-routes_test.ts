import assert from "node:assert/strict";
import bcrypt from "bcryptjs";
import {
  cookieOf,
  DEFAULT_IP,
  events,
  login,
  startHarness,
  withHarness,
} from "../../../tests/helpers/admin-sessions.ts";
import { openConfigDb } from "../../db/config-db.ts";

Deno.test("password change: old cookies die, the caller gets a new one, the new password works", async () => {
  await withHarness(async (h, stateDir) => {
    const cookie = await login(h);
    const other = await login(h, h.plain, "10.0.0.2");
    const change = (body: unknown) => h.request("PUT", "/_/api/admin/password", { body, cookie });

    const short = await change({ current_password: h.plain, new_password: "too-short" });
    assert.equal(short.status, 400);
    assert.match((await short.json()).message, /at least 12 characters/);
    const wrong = await change({
      current_password: "not-it",
      new_password: "a brand new password",
    });
    assert.equal(wrong.status, 403);
    assert.ok(events(h).includes("admin_password_change_failed"));

    const ok = await change({ current_password: h.plain, new_password: "a brand new password" });
    assert.equal(ok.status, 200, await ok.clone().text());
    const fresh = cookieOf(ok)!;
    assert.ok(fresh && fresh !== cookie);
    assert.equal((await h.request("GET", "/_/api/admin/echo", { cookie })).status, 401);
    assert.equal(
      (await h.request("GET", "/_/api/admin/echo", { cookie: other, ip: "10.0.0.2" })).status,
      401,
    );
    assert.equal((await h.request("GET", "/_/api/admin/echo", { cookie: fresh })).status, 200);
    const entry = h.ring.snapshot().find((e) => e.event === "admin_password_changed");
    assert.deepEqual(entry?.fields, { user: "$bootstrap", ip: DEFAULT_IP, sessions_ended: "all" });
    assert.equal(JSON.stringify(h.ring.snapshot()).includes("a brand new password"), false);

    const old = await h.request("POST", "/_/api/admin/login", { body: { password: h.plain } });
    assert.equal(old.status, 401);
    await login(h, "a brand new password");

    // The database was re-encrypted under the new hash: a restart opens it.
    await h.close();
    const restarted = await startHarness({ stateDir, clock: h.clock });
    assert.deepEqual(restarted.db.state, { status: "ok" });
    assert.equal(
      (await restarted.request("GET", "/_/api/admin/echo", { cookie: fresh })).status,
      200,
    );
    await restarted.close();
  });
});

Deno.test("password change is 409 when the hash comes from the environment", async () => {
  const hash = await bcrypt.hash("operator-set-password", 4);
  await withHarness(async (h) => {
    const cookie = await login(h, "operator-set-password");
    const response = await h.request("PUT", "/_/api/admin/password", {
      cookie,
      body: { current_password: "operator-set-password", new_password: "a brand new password" },
    });
    assert.equal(response.status, 409);
    const body = await response.json();
    assert.equal(body.error, "conflict");
    assert.match(body.message, /SVC_BOOTSTRAP_PASSWORD_HASH environment variable/);
    assert.equal(body.source, "env");
  }, { env: { SVC_BOOTSTRAP_PASSWORD_HASH: hash } });
});

Deno.test("recover-db: 409 when nothing is pending", async () => {
  await withHarness(async (h) => {
    const response = await h.request("POST", "/_/api/admin/recover-db", {
      body: { password: h.plain },
    });
    assert.equal(response.status, 409);
    assert.equal((await response.json()).error, "conflict");
  });
});

Deno.test("wrong hash at boot → mismatch; recover-db keeps the fresh DB; the right hash restores", async () => {
  const root = await Deno.makeTempDir({ prefix: "svc-recover-" });
  const stateDir = `${root}/.svc`;
  try {
    const first = await startHarness({ stateDir });
    const original = first.plain!;
    const cookie = await login(first);
    await first.close();

    // The operator sets a different hash: the database does not open under it.
    const wrongHash = await bcrypt.hash("the-wrong-password", 4);
    const wrong = await startHarness({
      stateDir,
      env: { SVC_BOOTSTRAP_PASSWORD_HASH: wrongHash },
      clock: first.clock,
    });
    assert.equal(wrong.db.state.status, "mismatch");
    // The old session lived in the database now aside.
    assert.equal((await wrong.request("GET", "/_/api/admin/echo", { cookie })).status, 401);
    await wrong.close();

    // The operator puts the right hash back (here: unsets the variable): the file is restored.
    const right = await startHarness({ stateDir, clock: first.clock });
    assert.deepEqual(right.db.state, { status: "ok" });
    assert.equal((await right.request("GET", "/_/api/admin/echo", { cookie })).status, 200);
    await right.close();

    // Wrong again, and this time the operator accepts the fresh database through recover-db.
    const again = await startHarness({
      stateDir,
      env: { SVC_BOOTSTRAP_PASSWORD_HASH: wrongHash },
      clock: first.clock,
    });
    assert.equal(again.db.state.status, "mismatch");
    const bad = await again.request("POST", "/_/api/admin/recover-db", {
      body: { password: original },
    });
    assert.equal(bad.status, 401);
    const cross = await again.request("POST", "/_/api/admin/recover-db", {
      body: { password: "the-wrong-password" },
      headers: { "sec-fetch-site": "cross-site" },
    });
    assert.equal(cross.status, 403);
    const ok = await again.request("POST", "/_/api/admin/recover-db", {
      body: { password: "the-wrong-password" },
    });
    assert.equal(ok.status, 200);
    const body = await ok.json();
    assert.equal(body.ok, true);
    assert.match(body.aside_path, /\/config\.db\.mismatch-\d{8}T\d{9}Z(-\d+)?$/);
    assert.deepEqual(again.db.state, { status: "ok" });
    const entry = again.ring.snapshot().find((e) => e.event === "config_db_recovered");
    assert.equal(entry?.fields.aside_path, body.aside_path);
    const twice = await again.request("POST", "/_/api/admin/recover-db", {
      body: { password: "the-wrong-password" },
    });
    assert.equal(twice.status, 409);
    await again.close();
    // The aside file is still on disk, never deleted.
    assert.equal((await Deno.stat(body.aside_path)).isFile, true);
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});

Deno.test("a password change while requests run: none fails, the DB is re-encrypted", async () => {
  await withHarness(async (h) => {
    const cookie = await login(h);
    const watcher = await login(h, h.plain, "10.0.0.3");
    let stop = false;
    const statuses: number[] = [];
    const reader = async () => {
      while (!stop) {
        const r = await h.request("GET", "/_/api/admin/session", {
          cookie: watcher,
          ip: "10.0.0.3",
        });
        statuses.push(r.status);
        await r.body?.cancel();
        await new Promise((resolve) => setTimeout(resolve, 0));
      }
    };
    const readers = [reader(), reader(), reader()];
    await new Promise((resolve) => setTimeout(resolve, 20));
    const change = await h.request("PUT", "/_/api/admin/password", {
      cookie,
      body: { current_password: h.plain, new_password: "changed under load!" },
    });
    await new Promise((resolve) => setTimeout(resolve, 20));
    stop = true;
    await Promise.all(readers);
    assert.equal(change.status, 200);
    assert.ok(statuses.length > 3, `${statuses.length} requests ran`);
    assert.deepEqual([...new Set(statuses)], [200]);
    const path = h.db.path;
    await h.db.close();
    const reopened = await openConfigDb({
      dir: path.slice(0, path.lastIndexOf("/")),
      passwordHash: h.password.hash,
    });
    assert.deepEqual(reopened.state, { status: "ok" });
    await reopened.close();
  });
});
