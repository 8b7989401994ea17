import assert from "node:assert/strict";
import { Hono } from "hono";
import type { AdminEnv } from "../../admin/mod.ts";
import { syncAroundIam, syncRecently } from "./fleet-consistency.ts";

function fakeSync(delayMs = 0) {
  const calls = { syncs: 0, settles: 0 };
  const state = {
    syncNow: () => {
      calls.syncs++;
      return new Promise((resolve) => setTimeout(resolve, delayMs));
    },
    settled: () => {
      calls.settles++;
      return Promise.resolve();
    },
  };
  return { calls, state };
}

Deno.test("syncRecently syncs at most once per window and waits a bounded time", async () => {
  let now = 0;
  let syncs = 0;
  let release = () => {};
  const state = {
    // A sync that hangs until released: the request must not wait for it whole.
    syncNow: () => {
      syncs++;
      return new Promise<void>((resolve) => release = resolve);
    },
    settled: () => Promise.resolve(),
  };
  const app = new Hono<AdminEnv>();
  app.use("*", syncRecently(() => state, { freshMs: 2000, boundMs: 10, now: () => now }));
  app.get("/x", (c) => c.text("ok"));
  assert.equal((await app.request("/x")).status, 200);
  assert.equal((await app.request("/x")).status, 200);
  assert.equal(syncs, 1, "a sync still running is joined, not doubled");
  release();
  await new Promise((resolve) => setTimeout(resolve, 0));
  now = 1999;
  await app.request("/x");
  assert.equal(syncs, 1, "fresh enough");
  now = 2000;
  const pending = app.request("/x");
  release();
  await pending;
  assert.equal(syncs, 2);
});

Deno.test("syncAroundIam syncs before IAM requests and settles after IAM changes only", async () => {
  const { calls, state } = fakeSync();
  const app = new Hono<AdminEnv>();
  app.use("*", async (c, next) => {
    if (c.req.header("x-session")) c.set("principal", { user: "u", admin: true, sessionId: "s" });
    await next();
  });
  app.use("*", syncAroundIam(() => state));
  app.all("*", (c) => c.text("ok"));
  await app.request("/_/api/admin/login-as", { method: "POST" });
  assert.deepEqual(calls, { syncs: 0, settles: 0 }, "anonymous requests cost no S3 call");
  const session = { headers: { "x-session": "1" } };
  await app.request("/_/api/admin/users", session);
  assert.deepEqual(calls, { syncs: 1, settles: 0 });
  await app.request("/_/api/admin/users/u1", { method: "PUT", ...session });
  assert.deepEqual(calls, { syncs: 2, settles: 1 });
  await app.request("/_/api/admin/jobs", { method: "POST", ...session });
  await app.request("/_/api/admin/usersx", session);
  assert.deepEqual(calls, { syncs: 2, settles: 1 }, "other areas pass untouched");
  const off = new Hono<AdminEnv>();
  off.use("*", syncAroundIam(() => null));
  off.all("*", (c) => c.text("ok"));
  assert.equal((await off.request("/_/api/admin/users", { method: "POST" })).status, 200);
});
