/**
 * Black-box tests of the event outbox: every mutation recorded once, in order per key, with who,
 * where and which request; failed writes record nothing; a live config change turns delivery on;
 * a graceful stop commits what is buffered. A webhook receiver runs on a loopback port
 * (tests/helpers/webhook-receiver.ts); ticks are shortened through the config file.
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
import {
  createBucket,
  del,
  deliveryConfig,
  eventsOf,
  outbox,
  put,
  startWithEvents,
} from "./helpers/events.ts";
import { signedPostForm } from "./helpers/post-form.ts";
import { signedFetch } from "./helpers/svc.ts";
import { startReceiver, waitFor } from "./helpers/webhook-receiver.ts";

const md5 = (text: string) => createHash("md5").update(text).digest("hex");

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
    // Keys are delivered in parallel (each key's events in order): compare in outbox order.
    const events = eventsOf(receiver).sort((x, y) => x.seq - y.seq);
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
