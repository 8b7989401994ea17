/**
 * Black-box tests of the event outbox and its delivery: the real svc, real S3 requests, and a
 * webhook receiver the test runs on a loopback port (tests/helpers/webhook-receiver.ts). Tick
 * intervals and backoffs are shortened through the config file so nothing waits for minutes.
 */
import assert from "node:assert/strict";
import { createHash, createHmac } from "node:crypto";
import {
  CompleteMultipartUploadCommand,
  CopyObjectCommand,
  CreateMultipartUploadCommand,
  DeleteObjectsCommand,
  UploadPartCommand,
} from "@aws-sdk/client-s3";
import { AdminClient } from "./helpers/admin.ts";
import { signedPostForm } from "./helpers/post-form.ts";
import { signedFetch, startSvc, type SvcProcess } from "./helpers/svc.ts";
import { type Receiver, startReceiver, waitFor } from "./helpers/webhook-receiver.ts";

interface RawEvent {
  id: string;
  seq: number;
  kind: string;
  operation: string | null;
  bucket: string;
  key: string;
  size: number;
  etag: string;
  sha256: string | null;
  storage: string;
  principal: string | null;
  source_ip: string | null;
  request_id: string | null;
  time: string;
}

/** Fast delivery settings; `extra` overrides them. */
function deliveryConfig(extra: Record<string, unknown>): Record<string, unknown> {
  return {
    enabled: true,
    tick_interval: "50ms",
    batch_size: 100,
    request_timeout: "5s",
    retry_base: "50ms",
    retry_max: "200ms",
    stale_claim_after: "60s",
    ...extra,
  };
}

async function startWithEvents(
  eventDelivery: Record<string, unknown>,
  dataDir?: string,
): Promise<{ svc: SvcProcess; admin: AdminClient; configDir: string }> {
  const configDir = await Deno.makeTempDir({ prefix: "svc-events-conf-" });
  const configFile = `${configDir}/svc.yaml`;
  await Deno.writeTextFile(
    configFile,
    JSON.stringify({ advanced: { event_delivery: eventDelivery } }),
  );
  const svc = await startSvc({ env: { SVC_CONFIG: configFile }, ...(dataDir ? { dataDir } : {}) });
  const admin = new AdminClient(svc.url);
  await admin.login();
  return { svc, admin, configDir };
}

async function createBucket(svc: SvcProcess, bucket: string) {
  const response = await signedFetch(`${svc.url}/${bucket}`, { method: "PUT" });
  assert.equal(response.status, 200, await response.text());
}

async function put(svc: SvcProcess, bucket: string, key: string, body: string) {
  const response = await signedFetch(`${svc.url}/${bucket}/${key}`, { method: "PUT", body });
  assert.equal(response.status, 200, await response.text());
  return response.headers.get("x-amz-request-id")!;
}

async function del(svc: SvcProcess, bucket: string, key: string) {
  const response = await signedFetch(`${svc.url}/${bucket}/${key}`, { method: "DELETE" });
  assert.equal(response.status, 204, await response.text());
  return response.headers.get("x-amz-request-id")!;
}

type Outbox = {
  rows: { id: number; status: string; attempts: number; delivered_targets: number }[];
  counts: Record<string, number>;
  total: number;
};

function outbox(admin: AdminClient, query = ""): Promise<Outbox> {
  return admin.json<Outbox>("GET", `/event-outbox${query}`);
}

const md5 = (text: string) => createHash("md5").update(text).digest("hex");
const eventsOf = (receiver: Receiver, path?: string) =>
  receiver.accepted(path).map((body) => (body as { event: RawEvent }).event);

Deno.test("1,000 PUTs and DELETEs: 1,000 events, in order per key, each once", async () => {
  const receiver = startReceiver();
  const { svc } = await startWithEvents(
    deliveryConfig({ webhook_url: `${receiver.url}/hook`, batch_size: 200 }),
  );
  try {
    await createBucket(svc, "evb");
    // 20 keys written in parallel, each key's 50 operations one after another: 4 PUTs then a
    // DELETE, ten times (every DELETE removes an object, so every operation is an event).
    const expected = new Map<string, { kind: string; etag?: string; requestId: string }[]>();
    await Promise.all(Array.from({ length: 20 }, async (_, k) => {
      const key = `k${k}`;
      const ops: { kind: string; etag?: string; requestId: string }[] = [];
      expected.set(key, ops);
      for (let r = 0; r < 50; r++) {
        if (r % 5 === 4) {
          ops.push({ kind: "ObjectDeleted", requestId: await del(svc, "evb", key) });
        } else {
          const body = `${key}:${r}`;
          ops.push({
            kind: "ObjectCreated",
            etag: md5(body),
            requestId: await put(svc, "evb", key, body),
          });
        }
      }
    }));
    await waitFor("1,000 deliveries", () => receiver.accepted().length >= 1000, 45_000);
    await new Promise((resolve) => setTimeout(resolve, 300)); // a duplicate would show by now
    const events = eventsOf(receiver);
    assert.equal(events.length, 1000);
    assert.equal(new Set(events.map((e) => e.id)).size, 1000, "no event delivered twice");
    for (const [key, ops] of expected) {
      const ofKey = events.filter((e) => e.key === key);
      // Arrival order and outbox order agree with the order the writes were made.
      const seqs = ofKey.map((e) => e.seq);
      assert.deepEqual(seqs, [...seqs].sort((a, b) => a - b), `${key} arrived in seq order`);
      assert.deepEqual(ofKey.map((e) => e.kind), ops.map((o) => o.kind));
      assert.deepEqual(ofKey.map((e) => e.request_id), ops.map((o) => o.requestId));
      ofKey.forEach((event, i) => {
        if (ops[i].etag) assert.equal(event.etag, ops[i].etag);
      });
    }
    const sample = events.find((e) => e.kind === "ObjectCreated")!;
    assert.equal(sample.bucket, "evb");
    assert.equal(sample.operation, "put");
    assert.equal(sample.principal, "$bootstrap");
    assert.equal(sample.source_ip, "127.0.0.1");
    assert.equal(sample.storage, "passthrough");
    assert.match(sample.sha256!, /^[0-9a-f]{64}$/);
    assert.ok(!Number.isNaN(Date.parse(sample.time)));
    const deleted = events.find((e) => e.kind === "ObjectDeleted")!;
    assert.equal(deleted.operation, "delete");
    assert.ok(deleted.size > 0, "a delete event describes the removed object");
    const envelope = receiver.accepted()[0] as { schema: string };
    assert.equal(envelope.schema, "svc.event.v1");
  } finally {
    await svc.stop();
    await receiver.close();
  }
});

Deno.test("every mutation kind makes one event; failed and refused writes make none", async () => {
  const receiver = startReceiver();
  const secret = "whsec-test-secret";
  const { svc, admin } = await startWithEvents(
    deliveryConfig({
      webhook_url: `${receiver.url}/hook`,
      webhook_secret: secret,
      webhook_headers: { "x-team": "storage" },
    }),
  );
  try {
    const s3 = svc.client();
    await createBucket(svc, "evb");
    await put(svc, "evb", "a", "alpha");
    await s3.send(new CopyObjectCommand({ Bucket: "evb", Key: "b", CopySource: "evb/a" }));
    const upload = await s3.send(new CreateMultipartUploadCommand({ Bucket: "evb", Key: "mp" }));
    const part = await s3.send(
      new UploadPartCommand({
        Bucket: "evb",
        Key: "mp",
        UploadId: upload.UploadId,
        PartNumber: 1,
        Body: new TextEncoder().encode("part one"),
      }),
    );
    await s3.send(
      new CompleteMultipartUploadCommand({
        Bucket: "evb",
        Key: "mp",
        UploadId: upload.UploadId,
        MultipartUpload: { Parts: [{ PartNumber: 1, ETag: part.ETag }] },
      }),
    );
    const form = await fetch(`${svc.url}/evb`, {
      method: "POST",
      body: signedPostForm("evb", "form", "from a form"),
    });
    assert.equal(form.status, 204, await form.text());
    await s3.send(
      new DeleteObjectsCommand({
        Bucket: "evb",
        Delete: { Objects: [{ Key: "b" }, { Key: "never-existed" }] },
      }),
    );
    await del(svc, "evb", "a");
    // Refused and failed writes: a wrong Content-MD5, and If-None-Match on an existing key.
    const badMd5 = await signedFetch(`${svc.url}/evb/bad`, {
      method: "PUT",
      body: "x",
      headers: { "content-md5": "AAAAAAAAAAAAAAAAAAAAAA==" },
    });
    assert.equal(badMd5.status, 400);
    await badMd5.body?.cancel();
    const refused = await signedFetch(`${svc.url}/evb/mp`, {
      method: "PUT",
      body: "y",
      headers: { "if-none-match": "*" },
    });
    assert.equal(refused.status, 412);
    await refused.body?.cancel();
    // A missing key deleted: success, but nothing changed.
    await del(svc, "evb", "never-existed");

    await waitFor("6 events", () => receiver.accepted().length >= 6);
    await new Promise((resolve) => setTimeout(resolve, 300));
    const events = eventsOf(receiver);
    assert.deepEqual(
      events.map((e) => `${e.kind} ${e.operation} ${e.key}`),
      [
        "ObjectCreated put a",
        "ObjectCreated copy b",
        "ObjectCreated complete_multipart mp",
        "ObjectCreated post form",
        "ObjectDeleted delete_objects b",
        "ObjectDeleted delete a",
      ],
    );
    assert.equal(events[2].etag.endsWith("-1"), true, "a multipart ETag");
    assert.equal(events[3].principal, "$bootstrap", "the form's signer");
    // Signed: the receiver recomputes the HMAC over "<t>.<body>".
    for (const request of receiver.received) {
      const header = request.headers.get("x-svc-signature")!;
      const match = /^t=(\d+),v1=([0-9a-f]{64})$/.exec(header);
      assert.ok(match, header);
      const mac = createHmac("sha256", secret).update(`${match[1]}.${request.body}`).digest("hex");
      assert.equal(match[2], mac);
      assert.ok(Math.abs(Date.now() / 1000 - Number(match[1])) < 60);
      assert.equal(request.headers.get("x-team"), "storage");
      assert.equal(request.headers.get("x-svc-event-id"), JSON.parse(request.body).event.id);
    }
    // The outbox lists them, newest first by default, with counts.
    const listed = await outbox(admin, "?limit=2");
    assert.equal(listed.total, 6);
    assert.equal(listed.counts.delivered, 6);
    assert.deepEqual(listed.rows.map((r) => r.id), [events[5].seq, events[4].seq]);
    const asc = await outbox(admin, "?order=asc&limit=1&offset=1&sort=occurred_at");
    assert.deepEqual(asc.rows.map((r) => r.id), [events[1].seq]);
    const bad = await admin.request("GET", "/event-outbox?status=bogus");
    assert.equal(bad.status, 400);
    assert.equal((await bad.json()).error, "bad_request");
    const metrics = await (await fetch(`${svc.url}/_/metrics`)).text();
    assert.match(metrics, /svc_events_committed_total 6/);
    assert.match(metrics, /svc_event_deliveries_total\{result="delivered"\} 6/);
    assert.match(metrics, /svc_event_delivery_duration_seconds_count 6/);
  } finally {
    await svc.stop();
    await receiver.close();
  }
});

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
      slack_include_globs: ["evb/**"],
      slack_exclude_globs: ["evb/tmp/**"],
    }),
  );
  try {
    await createBucket(svc, "evb");
    await createBucket(svc, "other");
    await put(svc, "evb", "reports/q1.csv", "numbers");
    await del(svc, "evb", "reports/q1.csv"); // ObjectDeleted: not in slack_notify_kinds
    await put(svc, "evb", "tmp/scratch", "x"); // excluded
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
        { name: "logs", bucket: "evb", prefix_globs: ["logs/**"], channel: "C0LOGS" },
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

Deno.test("delivery turned on by a live config change; events made while off stay recorded", async () => {
  const receiver = startReceiver();
  const { svc, admin } = await startWithEvents({ tick_interval: "50ms" });
  try {
    await createBucket(svc, "evb");
    await put(svc, "evb", "before", "1");
    await waitFor("recorded", async () => (await outbox(admin)).counts.recorded === 1);
    const applied = await admin.json<{ applied: string[] }>("PUT", "/config/section/advanced", {
      event_delivery: { enabled: true, webhook_url: `${receiver.url}/hook` },
    });
    assert.ok(applied.applied.includes("advanced.event_delivery.enabled"), JSON.stringify(applied));
    await put(svc, "evb", "after", "2");
    await waitFor("delivered", async () => (await outbox(admin)).counts.delivered === 1);
    assert.deepEqual(eventsOf(receiver).map((e) => e.key), ["after"]);
    assert.equal((await outbox(admin)).counts.recorded, 1);
  } finally {
    await svc.stop();
    await receiver.close();
  }
});

Deno.test("a graceful stop commits the events still buffered", async () => {
  const dataDir = await Deno.makeTempDir({ prefix: "svc-events-stop-" });
  let { svc, admin } = await startWithEvents({}, dataDir);
  try {
    await createBucket(svc, "evb");
    for (let i = 0; i < 5; i++) await put(svc, "evb", `k${i}`, `${i}`);
    // At once: well inside the 500 ms batch window, so the events are still in memory.
    await svc.stop();
    ({ svc, admin } = await startWithEvents({}, dataDir));
    const rows = await outbox(admin, "?order=asc");
    assert.equal(rows.total, 5);
    assert.deepEqual(rows.counts.recorded, 5);
  } finally {
    await svc.stop();
    await Deno.remove(dataDir, { recursive: true }).catch(() => {});
  }
});
