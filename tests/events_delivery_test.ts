/**
 * Black-box tests of event delivery: retries until a receiver recovers, per-endpoint tracking,
 * max_attempts and requeue, kill -9 during delivery, and Slack's two modes (the receiver plays
 * Slack). A webhook receiver runs on a loopback port; ticks and backoffs are shortened through the
 * config file so nothing waits for minutes.
 */
import assert from "node:assert/strict";
import {
  createBucket,
  del,
  deliveryConfig,
  eventsOf,
  outbox,
  put,
  startWithEvents,
} from "./helpers/events.ts";
import { startReceiver, waitFor } from "./helpers/webhook-receiver.ts";

Deno.test("a receiver that fails for a while gets every event once after it recovers", async () => {
  const receiver = startReceiver();
  let failing = true;
  receiver.respond = () => failing ? { status: 500, body: "down" } : { status: 200 };
  const { svc, admin } = await startWithEvents(
    deliveryConfig({ webhook_url: `${receiver.url}/hook`, max_attempts: 1000 }),
  );
  try {
    await createBucket(svc, "evb");
    for (let i = 0; i < 20; i++) await put(svc, "evb", `obj${i}`, `body ${i}`);
    await waitFor("two failed attempts of every event", async () => {
      const { rows } = await outbox(admin);
      return rows.length === 20 && rows.every((row) => row.attempts >= 2);
    });
    assert.equal((await outbox(admin)).counts.delivered, 0);
    failing = false;
    await waitFor("20 deliveries", () => receiver.accepted().length >= 20);
    await new Promise((resolve) => setTimeout(resolve, 300));
    const ids = eventsOf(receiver).map((e) => e.id);
    assert.equal(ids.length, 20);
    assert.equal(new Set(ids).size, 20, "no event accepted twice");
    assert.equal((await outbox(admin)).counts.delivered, 20);
  } finally {
    await svc.stop();
    await receiver.close();
  }
});

Deno.test("two endpoints, one failing: the row stays pending and the other is not re-sent", async () => {
  const receiver = startReceiver();
  let bFails = true;
  receiver.respond = ({ path }) => path === "/b" && bFails ? { status: 503 } : { status: 204 };
  const { svc, admin } = await startWithEvents(
    deliveryConfig({
      webhook_urls: [`${receiver.url}/a`, `${receiver.url}/b`],
      max_attempts: 1000,
    }),
  );
  try {
    await createBucket(svc, "evb");
    await put(svc, "evb", "one", "1");
    await waitFor(
      "retries to b",
      () => receiver.received.filter((r) => r.path === "/b").length >= 4,
    );
    const rows = (await outbox(admin)).rows;
    assert.equal(rows.length, 1);
    assert.equal(rows[0].status === "pending" || rows[0].status === "delivering", true);
    assert.ok(rows[0].attempts >= 3);
    assert.equal(rows[0].delivered_targets, 1);
    assert.equal(receiver.received.filter((r) => r.path === "/a").length, 1, "a took it once");
    bFails = false;
    await waitFor("delivered", async () => (await outbox(admin)).counts.delivered === 1);
    assert.equal(receiver.accepted("/a").length, 1);
    assert.equal(receiver.accepted("/b").length, 1);
  } finally {
    await svc.stop();
    await receiver.close();
  }
});

Deno.test("max_attempts used up: failed; requeue (one and all) delivers; audited", async () => {
  const receiver = startReceiver();
  let failing = true;
  receiver.respond = () => failing ? { status: 500 } : { status: 200 };
  const { svc, admin } = await startWithEvents(
    deliveryConfig({ webhook_url: `${receiver.url}/hook`, max_attempts: 2 }),
  );
  try {
    await createBucket(svc, "evb");
    for (const key of ["x", "y", "z"]) await put(svc, "evb", key, key);
    await waitFor("3 failed rows", async () => (await outbox(admin)).counts.failed === 3);
    assert.equal(receiver.received.length, 6, "two attempts each");
    const failed = await outbox(admin, "?status=failed&order=asc");
    const [first] = failed.rows;
    assert.equal(first.attempts, 2);
    // Not failed: 409; unknown: 404; not an id: 400.
    failing = false;
    const requeued = await admin.json("POST", `/event-outbox/${first.id}/requeue`);
    assert.deepEqual(requeued, { requeued: 1, id: first.id });
    await waitFor("one delivered", async () => (await outbox(admin)).counts.delivered === 1);
    const again = await admin.request("POST", `/event-outbox/${first.id}/requeue`);
    assert.equal(again.status, 409);
    assert.equal((await again.json()).error, "conflict");
    const unknown = await admin.request("POST", "/event-outbox/999999/requeue");
    assert.equal(unknown.status, 404);
    await unknown.body?.cancel();
    const junk = await admin.request("POST", "/event-outbox/abc/requeue");
    assert.equal(junk.status, 400);
    await junk.body?.cancel();
    assert.deepEqual(await admin.json("POST", "/event-outbox/requeue"), { requeued: 2 });
    await waitFor("all delivered", async () => (await outbox(admin)).counts.delivered === 3);
    assert.equal(receiver.accepted().length, 3);
    const audit = await admin.json<
      { entries: { event: string; fields: Record<string, unknown> }[] }
    >(
      "GET",
      "/audit",
    );
    const one = audit.entries.find((e) => e.event === "event_outbox_requeued");
    const all = audit.entries.find((e) => e.event === "event_outbox_requeued_all");
    assert.ok(one && all, JSON.stringify(audit.entries.map((e) => e.event)));
  } finally {
    await svc.stop();
    await receiver.close();
  }
});

Deno.test("kill -9 during delivery: after a restart every event is delivered at least once", async () => {
  const receiver = startReceiver();
  receiver.respond = () => ({ status: 200, delayMs: 150 });
  const config = deliveryConfig({ webhook_url: `${receiver.url}/hook`, batch_size: 5 });
  // Our own data directory: the helper removes only directories it made, at stop.
  const dataDir = await Deno.makeTempDir({ prefix: "svc-events-kill-" });
  let { svc, admin } = await startWithEvents(config, dataDir);
  try {
    await createBucket(svc, "evb");
    for (let i = 0; i < 30; i++) await put(svc, "evb", `obj${i}`, `body ${i}`);
    await waitFor("30 committed", async () => (await outbox(admin)).total === 30);
    await waitFor("deliveries under way", () => receiver.received.length >= 3);
    svc.kill("SIGKILL");
    await svc.stop();
    const before = new Set(eventsOf(receiver).map((e) => e.id));
    assert.ok(before.size < 30, "the kill came before the end of delivery");
    ({ svc, admin } = await startWithEvents(config, dataDir));
    await waitFor(
      "all 30 delivered",
      () => new Set(eventsOf(receiver).map((e) => e.id)).size === 30,
    );
    await waitFor(
      "outbox says delivered",
      async () => (await outbox(admin)).counts.delivered === 30,
    );
  } finally {
    await svc.stop();
    await receiver.close();
    await Deno.remove(dataDir, { recursive: true }).catch(() => {});
  }
});

Deno.test("Slack incoming webhook: Slack's message shape, kinds and globs filter", async () => {
  const receiver = startReceiver();
  const { svc } = await startWithEvents(
    deliveryConfig({
      format: "slack",
      webhook_url: `${receiver.url}/services/T000/B000/XXXX`,
      slack_username: "svc-bot",
      slack_icon_emoji: ":package:",
      // The reference implementation's dialect: the key alone, `*` crossing `/`.
      slack_include_globs: ["*.csv", "last"],
      slack_exclude_globs: ["**/*.tmp"],
    }),
  );
  try {
    await createBucket(svc, "evb");
    await createBucket(svc, "other");
    await put(svc, "evb", "reports/q1.csv", "numbers");
    await del(svc, "evb", "reports/q1.csv"); // ObjectDeleted: not in slack_notify_kinds
    await put(svc, "evb", "tmp/scratch.tmp", "x"); // excluded
    await put(svc, "other", "file", "x"); // not included
    await put(svc, "evb", "last", "x");
    await waitFor("2 messages", () => receiver.accepted().length >= 2);
    await new Promise((resolve) => setTimeout(resolve, 400));
    const messages = receiver.accepted() as Record<string, unknown>[];
    assert.equal(messages.length, 2);
    for (const message of messages) {
      // Slack's incoming webhook payload: text, optional username and icon_emoji.
      assert.deepEqual(Object.keys(message).sort(), ["icon_emoji", "text", "username"]);
      assert.equal(message.username, "svc-bot");
      assert.equal(message.icon_emoji, ":package:");
    }
    assert.match(String(messages[0].text), /evb\/reports\/q1\.csv/);
    assert.match(String(messages[1].text), /evb\/last/);
    assert.equal(
      receiver.received[0].headers.get("content-type"),
      "application/json; charset=utf-8",
    );
  } finally {
    await svc.stop();
    await receiver.close();
  }
});

Deno.test("Slack bot token: chat.postMessage per matching route, fallback channel, ok:false retried", async () => {
  const receiver = startReceiver();
  let refusals = 1;
  receiver.respond = ({ path, headers }) => {
    if (path !== "/api/chat.postMessage" || headers.get("authorization") !== "Bearer xoxb-test") {
      return { status: 200, body: JSON.stringify({ ok: false, error: "invalid_auth" }) };
    }
    if (refusals > 0) {
      refusals--;
      return { status: 200, body: JSON.stringify({ ok: false, error: "ratelimited" }) };
    }
    return { status: 200, body: JSON.stringify({ ok: true, ts: "1.0" }) };
  };
  const { svc, admin } = await startWithEvents(
    deliveryConfig({
      format: "slack",
      slack_bot_token: "xoxb-test",
      slack_channel: "#fallback",
      slack_api_url: `${receiver.url}/api`,
      slack_routes: [
        // `*` crosses `/` (the reference dialect): logs/app.log matches.
        { name: "logs", bucket: "evb", prefix_globs: ["*.log"], channel: "C0LOGS" },
        { name: "everything-ev", bucket: "evb", channel: "#evb" },
      ],
      max_attempts: 10,
    }),
  );
  try {
    await createBucket(svc, "evb");
    await createBucket(svc, "other");
    await put(svc, "evb", "logs/app.log", "log");
    await put(svc, "other", "file", "x");
    await waitFor(
      "3 posts accepted",
      () =>
        receiver.received.filter((r) => r.body.includes('"channel"') && r.status === 200).length >=
          4,
    );
    await waitFor("both delivered", async () => (await outbox(admin)).counts.delivered === 2);
    const posts = receiver.received.filter((r) => r.path === "/api/chat.postMessage");
    const bodies = posts.map((r) => JSON.parse(r.body) as Record<string, unknown>);
    for (const body of bodies) {
      // chat.postMessage arguments: channel and text.
      assert.deepEqual(Object.keys(body).sort(), ["channel", "text"]);
    }
    const channels = bodies.map((b) => b.channel as string);
    // One refused (ok:false) post was retried: four posts for three channel deliveries.
    assert.equal(posts.length, 4);
    assert.deepEqual([...new Set(channels)].sort(), ["#evb", "#fallback", "C0LOGS"]);
    const okByChannel = (channel: string) =>
      bodies.filter((b, i) => b.channel === channel && JSON.parse(posts[i].body).text).length;
    assert.equal(okByChannel("#fallback"), 1);
    assert.match(String(bodies.find((b) => b.channel === "#fallback")!.text), /other\/file/);
    // The token is not shown by the config export.
    const exported = await admin.request("GET", "/config/export");
    const text = await exported.text();
    assert.ok(!text.includes("xoxb-test"), "bot token masked on export");
  } finally {
    await svc.stop();
    await receiver.close();
  }
});
