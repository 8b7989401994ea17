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

Deno.test("a new password hash invalidates cookies even while their rows remain", async () => {
  const dir = await Deno.makeTempDir({ prefix: "svc-sessions-" });
  const db = await openConfigDb({ dir, passwordHash: HASH_A });
  try {
    let hash = HASH_A;
    const sessions = new AdminSessions({
      store: new SessionStore(db),
      passwordHash: () => hash,
      settings: () => ({ ttlHours: 0.5, secureCookies: false }),
      now: () => 1_000_000,
    });
    const issued = await sessions.issue("$bootstrap", true, { ip: "::1", https: false });
    assert.match(issued.setCookie, /Max-Age=1800$/);
    assert.equal(issued.record.expiresAt, 1_000_000 + 1_800_000);
    const value = issued.setCookie.split(";")[0].split("=")[1];
    const ok = await sessions.check(value, "::1");
    assert.ok(ok.ok);
    assert.deepEqual(ok.principal, {
      user: "$bootstrap",
      admin: true,
      sessionId: issued.record.id,
    });
    hash = HASH_B;
    assert.deepEqual(await sessions.check(value, "::1"), { ok: false, reason: "bad_signature" });
    hash = HASH_A;
    assert.deepEqual(await sessions.check(value, "::2"), { ok: false, reason: "ip_mismatch" });
    await sessions.end(issued.record.id);
    assert.deepEqual(await sessions.check(value, "::1"), { ok: false, reason: "unknown" });
    assert.deepEqual(await sessions.check(undefined, "::1"), { ok: false, reason: "missing" });
    assert.deepEqual(await sessions.check("v1.x.y", "::1"), { ok: false, reason: "malformed" });
  } finally {
    await db.close();
    await Deno.remove(dir, { recursive: true });
  }
});
