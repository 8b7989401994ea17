import { sampleEvent } from "../../testing/event-fixtures.ts";
import assert from "node:assert/strict";
import { HASH_A } from "../../../tests/helpers/config-db.ts";
import { opsAdminApp, TEST_CLIENT_IP } from "../../../tests/helpers/ops-admin-app.ts";
import { openConfigDb } from "../../db/config-db.ts";
import { OutboxStore } from "../../events/outbox-store.ts";
import { outboxRoutes } from "./outbox-routes.ts";

const event = sampleEvent;

Deno.test("event-outbox routes: paging, counts, validation, requeue one and all, audit", async () => {
  const dir = await Deno.makeTempDir({ prefix: "svc-outbox-routes-" });
  const db = await openConfigDb({ dir, passwordHash: HASH_A });
  try {
    const store = new OutboxStore(db);
    await store.append([event("a", 1000), event("b", 2000), event("c", 3000)], true, 0);
    // b fails for good; c is delivered.
    const claimed = await store.claim(3, 0, "t");
    await store.finish(claimed[1].id, "t", { status: "failed", targets: ["x"], error: "500" }, 5);
    await store.finish(claimed[2].id, "t", { status: "delivered", targets: ["x"] }, 5);
    await store.reclaimStale(Number.MAX_SAFE_INTEGER, 5);
    const audits: { event: string; fields: Record<string, unknown> }[] = [];
    const app = opsAdminApp((app) =>
      app.route(
        "/",
        outboxRoutes({
          store,
          audit: (event, fields) => audits.push({ event, fields }),
          now: () => 9,
        }),
      )
    );
    const get = async (query: string) => await (await app.request(`/event-outbox${query}`)).json();

    const page = await get("");
    assert.deepEqual(page.rows.map((r: { key: string }) => r.key), ["c", "b", "a"]);
    assert.deepEqual(page.counts, {
      pending: 1,
      delivering: 0,
      delivered: 1,
      failed: 1,
      recorded: 0,
    });
    assert.equal(page.total, 3);
    const failed = await get("?status=failed");
    assert.equal(failed.total, 1);
    assert.equal(failed.rows[0].last_error, "500");
    assert.equal(failed.rows[0].delivered_targets, 1, "a count, never the URLs");
    assert.equal((await get("?order=asc&limit=1&offset=1")).rows[0].key, "b");
    for (const bad of ["?status=nope", "?limit=0", "?offset=-1", "?sort=id", "?order=up"]) {
      const response = await app.request(`/event-outbox${bad}`);
      assert.equal(response.status, 400, bad);
      assert.equal((await response.json()).error, "bad_request");
    }
    const id = failed.rows[0].id;
    assert.equal(
      (await app.request(`/event-outbox/${page.rows[0].id}/requeue`, { method: "POST" })).status,
      409,
    );
    assert.equal((await app.request("/event-outbox/0/requeue", { method: "POST" })).status, 400);
    assert.equal((await app.request("/event-outbox/77/requeue", { method: "POST" })).status, 404);
    const one = await app.request(`/event-outbox/${id}/requeue`, { method: "POST" });
    assert.deepEqual(await one.json(), { requeued: 1, id });
    const row = await store.get(id);
    assert.deepEqual([row!.status, row!.attempts, row!.nextAttemptAt], ["pending", 0, 9]);
    assert.deepEqual(row!.deliveredTargets, ["x"], "endpoints that took it are remembered");
    const all = await app.request("/event-outbox/requeue", { method: "POST" });
    assert.deepEqual(await all.json(), { requeued: 0 });
    assert.deepEqual(audits.map((a) => a.event), [
      "event_outbox_requeued",
      "event_outbox_requeued_all",
    ]);
    assert.equal(audits[0].fields.ip, TEST_CLIENT_IP);
    assert.equal(audits[0].fields.id, id);
  } finally {
    await db.close();
    await Deno.remove(dir, { recursive: true });
  }
});
