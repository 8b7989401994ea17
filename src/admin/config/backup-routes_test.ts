/**
 * The backup routes through a real Hono app over a real config DB file and the real audit ring;
 * the principal is set by the test (an admin, or a browse-only session).
 */
import assert from "node:assert/strict";
import { Hono } from "hono";
import { unzipSync } from "fflate";
import { openConfigDb } from "../../db/config-db.ts";
import { IamStore } from "../../db/iam-store.ts";
import { AuditRing } from "../../observability/audit-ring.ts";
import { FakeConfigPort } from "../../../tests/helpers/fake-config-port.ts";
import { HASH_A } from "../../../tests/helpers/config-db.ts";
import type { AdminEnv } from "../admin-env.ts";
import { renderAdminError } from "../admin-error.ts";
import { backupRoutes } from "./backup-routes.ts";

async function withApp(
  admin: boolean,
  fn: (t: {
    call: (method: string, body?: BodyInit, headers?: Record<string, string>) => Promise<Response>;
    ring: AuditRing;
    store: IamStore;
    rebuilds: () => number;
  }) => Promise<void>,
  maxBodyBytes?: number,
) {
  const dir = await Deno.makeTempDir();
  const db = await openConfigDb({ dir, passwordHash: HASH_A });
  try {
    const store = new IamStore(db);
    const ring = new AuditRing();
    let rebuilt = 0;
    const app = new Hono<AdminEnv>();
    app.onError(renderAdminError);
    app.use("*", async (c, next) => {
      c.set("clientIp", "10.0.0.7");
      c.set("requestId", "r1");
      c.set("principal", { user: admin ? "$bootstrap" : "reader", admin, sessionId: "s1" });
      await next();
    });
    app.route(
      "/",
      backupRoutes({
        db,
        store,
        config: new FakeConfigPort({
          access: { access_key_id: "BOOTKEY", secret_access_key: "boot-secret-value" },
        }),
        audit: (event, fields, level) => void ring.record(event, fields, level),
        onChange: () => Promise.resolve(rebuilt++),
        svcVersion: "1.2.3",
        kdfIterations: 1000,
        maxBodyBytes,
        now: () => new Date("2026-11-24T16:22:10.123Z"),
      }),
    );
    const call = (method: string, body?: BodyInit, headers: Record<string, string> = {}) =>
      Promise.resolve(app.request("/backup", { method, body, headers }));
    await fn({ call, ring, store, rebuilds: () => rebuilt });
  } finally {
    await db.close();
    await Deno.remove(dir, { recursive: true });
  }
}

Deno.test("export: a zip named by its time, the config with its secrets, audited without them", async () => {
  await withApp(true, async ({ call, ring, store }) => {
    const alice = await store.createUser({ name: "alice" });
    const response = await call("GET");
    assert.equal(response.status, 200);
    assert.equal(
      response.headers.get("content-disposition"),
      'attachment; filename="svc-backup-20261124T162210Z.zip"',
    );
    const files = unzipSync(new Uint8Array(await response.arrayBuffer()));
    assert.match(new TextDecoder().decode(files["config.yaml"]), /boot-secret-value/);
    assert.match(
      new TextDecoder().decode(files["secrets.json"]),
      new RegExp(alice.secret_access_key),
    );
    const [entry] = ring.snapshot();
    assert.equal(entry.event, "backup_exported");
    const text = JSON.stringify(entry);
    assert.match(text, /"users":1/);
    assert.match(text, /10\.0\.0\.7/);
    assert.equal(text.includes(alice.secret_access_key), false);
  });
});

Deno.test("a browse-only session may neither export nor import", async () => {
  await withApp(false, async ({ call }) => {
    for (const method of ["GET", "POST"]) {
      const body = method === "GET" ? undefined : "{}";
      const response = await call(method, body, { "content-type": "application/json" });
      assert.equal(response.status, 403);
      assert.equal((await response.json()).error, "forbidden");
    }
  });
});

Deno.test("import: counters answered, index rebuilt, refusals audited with nothing changed", async () => {
  await withApp(true, async ({ call, ring, store, rebuilds }) => {
    const body = JSON.stringify({
      users: [{ name: "u1", access_key_id: "U1KEY0001", secret_access_key: "u1-secret-001" }],
    });
    const response = await call("POST", body, { "content-type": "application/json" });
    assert.equal(response.status, 200);
    const answer = await response.json();
    assert.equal(answer.users_created, 1);
    assert.equal(answer.format, "legacy_json");
    assert.equal(rebuilds(), 1);
    assert.equal(ring.snapshot()[0].event, "backup_imported");

    const bad = await call("POST", '{"users": [{"name": "u2"}]}', {
      "content-type": "application/json",
    });
    assert.equal(bad.status, 400);
    assert.match((await bad.json()).message, /access key id|secret/i);
    assert.equal(ring.snapshot()[0].event, "backup_import_refused");
    assert.deepEqual((await store.listUsers()).map((u) => u.name), ["u1"]);
    assert.equal(rebuilds(), 1);
  });
});

Deno.test("import: a body past the limit is 413, declared or streamed", async () => {
  await withApp(true, async ({ call }) => {
    const declared = await call("POST", new Uint8Array(2048), {
      "content-type": "application/zip",
      "content-length": "2048",
    });
    assert.equal(declared.status, 413);
    const stream = new ReadableStream({
      start(controller) {
        for (let i = 0; i < 4; i++) controller.enqueue(new Uint8Array(1024));
        controller.close();
      },
    });
    const streamed = await call("POST", stream, { "content-type": "application/zip" });
    assert.equal(streamed.status, 413);
    assert.equal((await streamed.json()).error, "payload_too_large");
  }, 1024);
});
