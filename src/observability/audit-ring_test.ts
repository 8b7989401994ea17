import assert from "node:assert/strict";
import { AuditRing } from "./audit-ring.ts";

Deno.test("audit ring: bounded, snapshot newest first, limit", () => {
  let now = Date.UTC(2024, 0, 1);
  const ring = new AuditRing({ capacity: 3, now: () => now++ });
  for (let i = 1; i <= 5; i++) ring.record("auth_failure", { n: i });
  assert.equal(ring.size, 3);
  const all = ring.snapshot();
  assert.deepEqual(all.map((e) => e.fields.n), [5, 4, 3]);
  assert.deepEqual(all.map((e) => e.id), [5, 4, 3]);
  assert.equal(all[0].time, "2024-01-01T00:00:00.004Z");
  assert.deepEqual(ring.snapshot(2).map((e) => e.id), [5, 4]);
  assert.deepEqual(ring.snapshot(0), []);
  assert.deepEqual(ring.snapshot(99).length, 3);
  assert.equal(new AuditRing().capacity, 500);
});

Deno.test("audit ring: entries carry event and level (warn by default)", () => {
  const ring = new AuditRing();
  ring.record("replay_rejected", { ip: "10.0.0.1" });
  ring.record("iam_reconcile_user_create", { user: "ann", source: "declarative" }, "info");
  const [second, first] = ring.snapshot();
  assert.equal(first.event, "replay_rejected");
  assert.equal(first.level, "warn");
  assert.equal(second.event, "iam_reconcile_user_create");
  assert.equal(second.level, "info");
  assert.deepEqual(second.fields, { user: "ann", source: "declarative" });
});

Deno.test("audit ring: fields are redacted and each event is logged", () => {
  const logged: unknown[] = [];
  const ring = new AuditRing({
    log: (level, event, fields) => logged.push([level, event, fields]),
  });
  const entry = ring.record("auth_failure", {
    access_key: "AKIAIOSFODNN7EXAMPLE",
    secret_access_key: "wJalrXUtnFEMI",
    ip: "10.0.0.1",
  });
  const expected = { access_key: "AKIA****", secret_access_key: "[redacted]", ip: "10.0.0.1" };
  assert.deepEqual(entry.fields, expected);
  assert.deepEqual(logged, [["warn", "auth_failure", expected]]);
});
