import assert from "node:assert/strict";
import { Hono } from "hono";
import type { AdminEnv } from "../admin-env.ts";
import { renderAdminError } from "../admin-error.ts";
import { type SyncNowDeps, syncNowRoute } from "./sync-now-route.ts";

function app(sync: SyncNowDeps["sync"]) {
  const audited: [string, Record<string, unknown>][] = [];
  const hono = new Hono<AdminEnv>();
  hono.onError(renderAdminError);
  hono.use("*", async (c, next) => {
    c.set("clientIp", "10.0.0.1");
    c.set("principal", { user: "$bootstrap", admin: true, sessionId: "s" });
    await next();
  });
  hono.route(
    "/",
    syncNowRoute({
      sync,
      offReason: () => "set advanced.config_sync_bucket on every instance",
      audit: (event, fields) => void audited.push([event, fields]),
    }),
  );
  return { hono, audited };
}

Deno.test("sync-now answers the outcome of one poll and audits it", async () => {
  const { hono, audited } = app(() => ({
    bucket: "coord",
    syncNow: () => Promise.resolve("adopted"),
  }));
  const response = await hono.request("/config/sync-now", { method: "POST" });
  assert.equal(response.status, 200);
  assert.deepEqual(await response.json(), { ok: true, outcome: "adopted", bucket: "coord" });
  assert.equal(audited[0][0], "config_sync_forced");
  assert.equal(audited[0][1].outcome, "adopted");
});

Deno.test("sync-now is 409 without config sync and 502 when the pull fails", async () => {
  const off = app(() => null);
  const refused = await off.hono.request("/config/sync-now", { method: "POST" });
  assert.equal(refused.status, 409);
  const body = await refused.json();
  assert.equal(body.error, "conflict");
  assert.match(body.message, /not configured: set advanced\.config_sync_bucket/);
  assert.equal(off.audited.length, 0);

  const failing = app(() => ({
    bucket: "coord",
    syncNow: () => Promise.reject(new Error("connection refused")),
  }));
  const failed = await failing.hono.request("/config/sync-now", { method: "POST" });
  assert.equal(failed.status, 502);
  assert.match((await failed.json()).message, /"coord" could not be synced: connection refused/);
  assert.equal(failing.audited[0][1].outcome, "failed");
});
