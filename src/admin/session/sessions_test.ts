import assert from "node:assert/strict";
import { HASH_A, HASH_B } from "../../../tests/helpers/config-db.ts";
import { openConfigDb } from "../../db/config-db.ts";
import { SessionStore } from "../../db/session-store.ts";
import { AdminSessions, constantTimeEqual } from "./sessions.ts";

Deno.test("constantTimeEqual compares values of any length", () => {
  assert.equal(constantTimeEqual("10.0.0.1", "10.0.0.1"), true);
  assert.equal(constantTimeEqual("10.0.0.1", "10.0.0.10"), false);
  assert.equal(constantTimeEqual("", ""), true);
  assert.equal(constantTimeEqual("", "x"), false);
});

async function withDbs(fn: (dbs: [SessionStore, SessionStore]) => Promise<void>) {
  const dir = await Deno.makeTempDir({ prefix: "svc-sessions-" });
  const a = await openConfigDb({ dir: `${dir}/a`, passwordHash: HASH_A });
  const b = await openConfigDb({ dir: `${dir}/b`, passwordHash: HASH_A });
  try {
    await fn([new SessionStore(a), new SessionStore(b)]);
  } finally {
    await a.close();
    await b.close();
    await Deno.remove(dir, { recursive: true });
  }
}

function cookieValue(setCookie: string): string {
  return setCookie.split(";")[0].split("=")[1];
}

Deno.test("a cookie carries its record: another instance with the same hash accepts it", async () => {
  await withDbs(async ([storeA, storeB]) => {
    let now = 1_000_000;
    let hash = HASH_A;
    const make = (store: SessionStore) =>
      new AdminSessions({
        store,
        passwordHash: () => hash,
        settings: () => ({ ttlHours: 0.5, secureCookies: false }),
        now: () => now,
      });
    const a = make(storeA), b = make(storeB);
    const issued = await a.issue("alice", false, { ip: "::1", https: false }, "AKIAALICE");
    assert.match(issued.setCookie, /Max-Age=1800$/);
    assert.equal(issued.record.expiresAt, 1_000_000 + 1_800_000);
    const value = cookieValue(issued.setCookie);
    assert.match(value, /^v2\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]{43}$/);
    const onB = await b.check(value, "::1");
    assert.ok(onB.ok);
    assert.deepEqual(onB.record, issued.record);
    assert.deepEqual(onB.principal, {
      user: "alice",
      admin: false,
      sessionId: issued.record.id,
      accessKeyId: "AKIAALICE",
    });
    hash = HASH_B;
    assert.deepEqual(await b.check(value, "::1"), { ok: false, reason: "bad_signature" });
    hash = HASH_A;
    assert.deepEqual(await b.check(value, "::2"), { ok: false, reason: "ip_mismatch" });
    // Revoked where it was logged out only (config sync carries it to the others).
    await a.end(issued.record);
    assert.deepEqual(await a.check(value, "::1"), { ok: false, reason: "revoked" });
    assert.ok((await b.check(value, "::1")).ok);
    now = issued.record.expiresAt;
    assert.deepEqual(await b.check(value, "::1"), { ok: false, reason: "expired" });
  });
});

Deno.test("a forged or changed record is refused; v1 cookies are refused", async () => {
  await withDbs(async ([store]) => {
    const sessions = new AdminSessions({
      store,
      passwordHash: () => HASH_A,
      settings: () => ({ ttlHours: 1, secureCookies: false }),
    });
    const issued = await sessions.issue("$bootstrap", true, { ip: "::1", https: false });
    const [version, record, mac] = cookieValue(issued.setCookie).split(".");
    const wire = JSON.parse(atob(record.replaceAll("-", "+").replaceAll("_", "/")));
    const forged = btoa(JSON.stringify({ ...wire, u: "mallory" }))
      .replaceAll("+", "-").replaceAll("/", "_").replaceAll("=", "");
    assert.deepEqual(await sessions.check(`${version}.${forged}.${mac}`, "::1"), {
      ok: false,
      reason: "bad_signature",
    });
    assert.deepEqual(await sessions.check(undefined, "::1"), { ok: false, reason: "missing" });
    const v1 = `v1.${"x".repeat(43)}.${"y".repeat(43)}`;
    assert.deepEqual(await sessions.check(v1, "::1"), { ok: false, reason: "malformed" });
    assert.deepEqual(await sessions.check(`v2.${"z".repeat(3000)}.${mac}`, "::1"), {
      ok: false,
      reason: "malformed",
    });
  });
});

Deno.test("endAll voids every session issued before it, and publishes", async () => {
  await withDbs(async ([store]) => {
    let now = 5_000;
    let published = 0;
    const sessions = new AdminSessions({
      store,
      passwordHash: () => HASH_A,
      settings: () => ({ ttlHours: 1, secureCookies: false }),
      onRevoked: () => Promise.resolve(published++),
      now: () => now,
    });
    const old = cookieValue(
      (await sessions.issue("$bootstrap", true, { ip: "::1", https: false })).setCookie,
    );
    now += 10;
    await sessions.endAll();
    assert.equal(published, 1);
    assert.deepEqual(await sessions.check(old, "::1"), { ok: false, reason: "revoked" });
    const fresh = cookieValue(
      (await sessions.issue("$bootstrap", true, { ip: "::1", https: false })).setCookie,
    );
    assert.ok((await sessions.check(fresh, "::1")).ok);
  });
});
