/**
 * Black-box test of event durability across a kill -9 (issue 27 item 1): an object mutation
 * answered to a client, or done by a lifecycle run, has its event in the outbox after a restart.
 * PUTs are acknowledged only once their `ObjectCreated` is committed; a lifecycle removal
 * journals its events before it removes, and a removal cut by the kill is settled at the start.
 */
import assert from "node:assert/strict";
import { AdminClient } from "./helpers/admin.ts";
import { signedFetch as fetch, startSvc, type SvcProcess } from "./helpers/svc.ts";
import { waitFor } from "./helpers/webhook-receiver.ts";

interface Row {
  event: { kind: string; bucket: string; key: string; operation: string | null };
}

/** Every outbox row (oldest first), through the admin API's pages. */
async function outboxRows(admin: AdminClient): Promise<Row[]> {
  const rows: Row[] = [];
  for (let offset = 0;; offset += 1000) {
    const page = await admin.json<{ rows: Row[] }>(
      "GET",
      `/event-outbox?limit=1000&offset=${offset}&order=asc`,
    );
    rows.push(...page.rows);
    if (page.rows.length < 1000) return rows;
  }
}

async function startWith(dir: string, config: Record<string, unknown>): Promise<SvcProcess> {
  await Deno.writeTextFile(`${dir}/svc.yaml`, JSON.stringify(config));
  await Deno.mkdir(`${dir}/data`, { recursive: true });
  return await startSvc({ dataDir: `${dir}/data`, env: { SVC_CONFIG: `${dir}/svc.yaml` } });
}

async function createBucket(svc: SvcProcess, bucket: string): Promise<void> {
  const response = await fetch(`${svc.url}/${bucket}`, { method: "PUT" });
  assert.equal(response.status, 200, await response.text());
}

/** `count` PUTs of new keys from `clients` concurrent clients; the keys answered 200. */
async function putMany(svc: SvcProcess, bucket: string, count: number, clients: number) {
  const acknowledged: string[] = [];
  let next = 0;
  await Promise.all(Array.from({ length: clients }, async () => {
    while (next < count) {
      const key = `k-${String(next++).padStart(4, "0")}`;
      const response = await fetch(`${svc.url}/${bucket}/${key}`, { method: "PUT", body: key });
      await response.body?.cancel();
      if (response.status === 200) acknowledged.push(key);
    }
  }));
  return acknowledged;
}

async function listKeys(svc: SvcProcess, bucket: string): Promise<string[]> {
  const keys: string[] = [];
  let token = "";
  for (;;) {
    const query = `list-type=2${token ? `&continuation-token=${encodeURIComponent(token)}` : ""}`;
    const response = await fetch(`${svc.url}/${bucket}?${query}`);
    const xml = await response.text();
    assert.equal(response.status, 200, xml);
    keys.push(...[...xml.matchAll(/<Key>([^<]+)<\/Key>/g)].map((m) => m[1]));
    const more = /<NextContinuationToken>([^<]+)<\/NextContinuationToken>/.exec(xml);
    if (!more) return keys;
    token = more[1];
  }
}

Deno.test("kill -9 right after the last PUT is answered: every acknowledged PUT has its event", async () => {
  const dir = await Deno.makeTempDir({ prefix: "svc-events-durable-" });
  let svc = await startWith(dir, {});
  try {
    await createBucket(svc, "acked");
    const acknowledged = await putMany(svc, "acked", 300, 16);
    svc.kill("SIGKILL"); // no graceful stop: nothing buffered gets a last flush
    await svc.stop();
    assert.equal(acknowledged.length, 300);

    svc = await startWith(dir, {});
    const admin = new AdminClient(svc.url);
    await admin.login();
    const created = new Set(
      (await outboxRows(admin))
        .filter((row) => row.event.kind === "ObjectCreated" && row.event.bucket === "acked")
        .map((row) => row.event.key),
    );
    const missing = acknowledged.filter((key) => !created.has(key));
    assert.deepEqual(missing, [], `${missing.length} of 300 acknowledged PUTs have no event`);
  } finally {
    await svc.stop();
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
});

Deno.test("a lifecycle run killed midway: every removed object has its events after restart", async () => {
  const dir = await Deno.makeTempDir({ prefix: "svc-events-durable-lc-" });
  const lifecycle = (enabled: boolean) => ({
    storage: {
      lifecycle: {
        enabled,
        tick_interval: "1h",
        rules: [{
          name: "sweep",
          enabled: true,
          bucket: "sweep",
          action: "delete",
          expire_after: "1s",
        }],
      },
    },
  });
  const total = 600;
  let svc = await startWith(dir, lifecycle(true));
  try {
    await createBucket(svc, "sweep");
    assert.equal((await putMany(svc, "sweep", total, 16)).length, total);
    await new Promise((resolve) => setTimeout(resolve, 1500)); // every object older than 1 s
    const admin = new AdminClient(svc.url);
    await admin.login();
    const run = admin.request("POST", "/jobs/lifecycle:sweep/run-now").catch(() => undefined);
    // Killed once the run has removed some objects, long before it removed them all.
    await waitFor(
      "the run under way",
      async () => (await listKeys(svc, "sweep")).length < total - 20,
    );
    svc.kill("SIGKILL");
    await run;
    await svc.stop();

    // Restarted with lifecycle off: only the start's settling of the killed run adds events.
    svc = await startWith(dir, lifecycle(false));
    const after = new AdminClient(svc.url);
    await after.login();
    const remaining = new Set(await listKeys(svc, "sweep"));
    const removed = Array.from({ length: total }, (_, i) => `k-${String(i).padStart(4, "0")}`)
      .filter((key) => !remaining.has(key));
    assert.ok(removed.length > 0 && remaining.size > 0, `${removed.length} removed: not midway`);
    const eventsOf = async (kind: string) =>
      new Set(
        (await outboxRows(after))
          .filter((row) => row.event.kind === kind && row.event.bucket === "sweep")
          .map((row) => row.event.key),
      );
    // The start settles journaled removals in the background: wait for the last of them.
    let missing: string[] = [];
    await waitFor("every removal recorded", async () => {
      const expired = await eventsOf("LifecycleExpired");
      const deleted = await eventsOf("ObjectDeleted");
      missing = removed.filter((key) => !expired.has(key) || !deleted.has(key));
      return missing.length === 0;
    }, 10_000).catch(() => {});
    assert.deepEqual(
      missing,
      [],
      `${missing.length} of ${removed.length} removed keys lack events`,
    );
    // And no event claims a removal that did not happen.
    const expired = await eventsOf("LifecycleExpired");
    const spurious = [...remaining].filter((key) => expired.has(key));
    assert.deepEqual(spurious, [], "objects still there have no LifecycleExpired event");
  } finally {
    await svc.stop();
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
});
