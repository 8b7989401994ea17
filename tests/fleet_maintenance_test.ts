/**
 * Maintenance jobs in a fleet (issue 30 item 4): three svc instances over one backing svc behind
 * HAProxy, sharing a coordination bucket. A re-encrypt job started on one instance gates its
 * bucket on every instance: the others answer 503 SlowDown to writes meanwhile, and the job reads
 * nothing before their writes in flight have ended (the drain handshake). Every object written
 * before, during (retried until accepted) and after reads back byte-identical and no stored byte
 * of the bucket is plaintext afterwards. The job is listed by the other instances, a second job
 * on the bucket is refused anywhere, and a cancel asked on another instance stops a job.
 */
import assert from "node:assert/strict";
import { Readable } from "node:stream";
import {
  GetObjectCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  S3Client,
} from "@aws-sdk/client-s3";
import { AdminClient } from "./helpers/admin.ts";
import { type Fleet, fleetReason, startFleet } from "./helpers/fleet.ts";
import { rawClient, storedKeys, twoStores } from "./helpers/fleet-stores.ts";
import { startBackingSvc } from "./helpers/s3-front.ts";
import { until } from "./helpers/poll.ts";

type Json = Record<string, unknown>;
const MARKER = "PLAINTEXT-MARKER-7d1f";
const utf8 = new TextEncoder();

function bodyFor(key: string): Uint8Array {
  const random = crypto.getRandomValues(new Uint8Array(2048));
  const text = utf8.encode(`${MARKER} ${key} ${MARKER}`);
  const body = new Uint8Array(random.length + text.length);
  body.set(text);
  body.set(random, text.length);
  return body;
}

async function bytesOf(s3: S3Client, bucket: string, key: string): Promise<Uint8Array> {
  const got = await s3.send(new GetObjectCommand({ Bucket: bucket, Key: key }));
  return await got.Body!.transformToByteArray();
}

function holdsMarker(bytes: Uint8Array): boolean {
  return new TextDecoder("latin1").decode(bytes).includes(MARKER);
}

/** Keys of the backing store's copy of `bucket` whose stored bytes show the marker. */
async function plaintextStored(fleet: Fleet, bucket: string): Promise<string[]> {
  const store = rawClient(fleet.store.endpoint);
  const found: string[] = [];
  let token: string | undefined;
  do {
    const page = await store.send(
      new ListObjectsV2Command({ Bucket: bucket, ContinuationToken: token }),
    );
    for (const object of page.Contents ?? []) {
      if (holdsMarker(await bytesOf(store, bucket, object.Key!))) found.push(object.Key!);
    }
    token = page.NextContinuationToken;
  } while (token);
  store.destroy();
  return found;
}

/** Turns encryption on in the shared config file and reloads every instance. */
async function encryptFromNow(fleet: Fleet) {
  const yaml = await Deno.readTextFile(fleet.configFile);
  await Deno.writeTextFile(
    fleet.configFile,
    yaml.replace("advanced:", "  backend_encryption:\n    mode: aes256-gcm-proxy\nadvanced:"),
  );
  for (const instance of fleet.instances) {
    const svc = instance.process!;
    const mark = svc.logs.length;
    svc.kill("SIGHUP");
    await until(`instance ${instance.index} to reload`, () => {
      const lines = svc.logs.slice(mark);
      if (lines.some((line) => /reload.*(fail|refus)/i.test(line))) {
        throw new Error(`reload failed:\n${lines.join("\n")}`);
      }
      return Promise.resolve(lines.some((l) => /config reloaded/.test(l)) || undefined);
    });
  }
}

async function admin(fleet: Fleet, index: number): Promise<AdminClient> {
  const client = new AdminClient(fleet.instances[index].url);
  await client.login();
  return client;
}

async function startReencrypt(client: AdminClient, bucket: string): Promise<string> {
  const outcome = await client.json<{ started: Json[] }>(
    "POST",
    "/jobs/reencrypt",
    { buckets: [bucket] },
    202,
  );
  return String(outcome.started[0].id);
}

/** The row another instance lists for `id` (which runs elsewhere). */
function remoteRow(client: AdminClient, id: string) {
  return until(`${id} to show on ${client.base}`, async () => {
    const { jobs } = await client.json<{ jobs: Json[] }>("GET", "/jobs");
    return jobs.find((row) => String(row.id).startsWith(`${id}@`));
  });
}

/** Writes `key` through `s3` until accepted; counts the 503 SlowDown answers met on the way. */
async function writeThroughGate(s3: S3Client, bucket: string, key: string, body: Uint8Array) {
  let slowDowns = 0;
  for (;;) {
    try {
      await s3.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: body }));
      return slowDowns;
    } catch (err) {
      const e = err as { name?: string; $metadata?: { httpStatusCode?: number } };
      if (e.$metadata?.httpStatusCode !== 503 || e.name !== "SlowDown") throw err;
      slowDowns++;
      await new Promise((r) => setTimeout(r, 50));
    }
  }
}

/**
 * Writers through instances 1 and 2, each putting new keys under `during/` into `bucket` (recorded
 * in `bodies`) and retrying through the gate, until `stop` (which returns the 503s each met).
 */
function gatedWriters(fleet: Fleet, bucket: string, bodies: Map<string, Uint8Array>) {
  const others = [fleet.instanceClient(1), fleet.instanceClient(2)];
  const slowDowns = [0, 0];
  let done = false;
  let n = 0;
  const writers = others.map(async (s3, which) => {
    while (!done) {
      const key = `during/${which}-${String(n++).padStart(3, "0")}`;
      bodies.set(key, bodyFor(key));
      slowDowns[which] += await writeThroughGate(s3, bucket, key, bodies.get(key)!);
      await new Promise((r) => setTimeout(r, 30));
    }
  });
  return {
    others,
    /** Ends the writers; throws what one of them failed with. */
    async stop(): Promise<number[]> {
      done = true;
      await Promise.allSettled(writers);
      await Promise.all(writers);
      return slowDowns;
    },
  };
}

Deno.test({
  name: "a re-encrypt gates its bucket on every instance, is seen and cancelled from any instance",
  ignore: fleetReason !== null,
  async fn() {
    await using fleet = await startFleet({
      buckets: ["data", "other"],
      env: { SVC_ENCRYPTION_KEY: "c3".repeat(32), SVC_MAINTENANCE_PACE_MS: "100" },
    });
    const lb = fleet.client();
    const bodies = new Map<string, Uint8Array>();
    for (let i = 0; i < 30; i++) {
      const key = `before/${String(i).padStart(2, "0")}`;
      bodies.set(key, bodyFor(key));
      await lb.send(new PutObjectCommand({ Bucket: "data", Key: key, Body: bodies.get(key) }));
    }
    for (let i = 0; i < 60; i++) {
      await lb.send(new PutObjectCommand({ Bucket: "other", Key: `o/${i}`, Body: bodyFor("o") }));
    }
    assert.ok((await plaintextStored(fleet, "data")).length >= 30, "stored in plaintext first");
    await encryptFromNow(fleet);

    const [a, b, c] = [await admin(fleet, 0), await admin(fleet, 1), await admin(fleet, 2)];
    const id = await startReencrypt(a, "data");

    // Writers on the two other instances, each retrying its writes until accepted.
    const writing = gatedWriters(fleet, "data", bodies);
    const { others } = writing;

    let finished: Json;
    let slowDowns: number[] = [];
    try {
      // Visible on another instance: its holder, type and progress.
      const row = await remoteRow(b, id);
      assert.equal(row.type, "reencrypt");
      assert.deepEqual(row.scope, { bucket: "data", prefix: "" });
      assert.equal(typeof (row.held_by as Json).instance, "string");
      assert.ok(row.progress && typeof row.progress === "object", JSON.stringify(row));
      const gate = await b.json<Json>("GET", "/jobs/bucket/data");
      assert.equal(gate.write_gate, "gated", JSON.stringify(gate));
      assert.equal((gate.job as Json).id, row.id, JSON.stringify(gate));
      // The bucket is held fleet-wide: a second job is refused on any instance.
      const second = await c.request("POST", "/jobs/reencrypt", { buckets: ["data"] });
      const refusal = await second.json();
      assert.equal(second.status, 400, JSON.stringify(refusal));
      assert.equal(refusal.errors[0].error, "conflict", JSON.stringify(refusal));

      finished = await a.jobEnded(id);
    } finally {
      slowDowns = await writing.stop();
    }
    assert.equal(finished.status, "succeeded", JSON.stringify(finished));
    assert.ok(slowDowns[0] > 0 && slowDowns[1] > 0, `503s per instance: ${slowDowns}`);

    // After: writes pass on every instance within the refresh, the job is gone from the others.
    for (const [index, s3] of [fleet.instanceClient(0), ...others].entries()) {
      const key = `after/${index}`;
      bodies.set(key, bodyFor(key));
      const start = Date.now();
      await writeThroughGate(s3, "data", key, bodies.get(key)!);
      assert.ok(Date.now() - start < 5000, `instance ${index} kept gating`);
    }
    await until("the row to leave the other instances", async () => {
      const { jobs } = await b.json<{ jobs: Json[] }>("GET", "/jobs");
      return jobs.some((r) => String(r.id).startsWith(`${id}@`)) ? undefined : true;
    });
    for (const [key, body] of bodies) {
      assert.deepEqual(await bytesOf(lb, "data", key), body, key);
    }
    assert.deepEqual(await plaintextStored(fleet, "data"), [], "every stored byte sealed");

    // Cancel from another instance: asked on b, the holder c stops at its next heartbeat.
    const long = await startReencrypt(c, "other");
    const seen = await remoteRow(b, long);
    // Encoded as the console sends it.
    const cancel = await b.request("POST", `/jobs/${encodeURIComponent(String(seen.id))}/cancel`);
    assert.equal(cancel.status, 202, await cancel.text());
    const cancelled = await until(`${long} to be cancelled`, async () => {
      const job = await c.json<Json>("GET", `/jobs/${long}`);
      if (job.status === "succeeded") throw new Error(`${long} finished before the cancel`);
      return job.status === "cancelled" ? job : undefined;
    });
    assert.ok(Number((cancelled.progress as Json).objects_done) < 60, JSON.stringify(cancelled));
    await writeThroughGate(fleet.instanceClient(0), "other", "after", bodyFor("after"));
    for (const s3 of [lb, ...others]) s3.destroy();
  },
});

Deno.test({
  name: "a migration's routing flip reaches every instance before its gate lifts",
  ignore: fleetReason !== null,
  async fn() {
    const second = await startBackingSvc(["unused"]);
    try {
      await using fleet = await startFleet({
        buckets: ["moving"],
        backendsYaml: twoStores(second),
        env: { SVC_MAINTENANCE_PACE_MS: "100" },
      });
      const lb = fleet.client();
      const bodies = new Map<string, Uint8Array>();
      for (let i = 0; i < 25; i++) {
        const key = `before/${String(i).padStart(2, "0")}`;
        bodies.set(key, bodyFor(key));
        await lb.send(new PutObjectCommand({ Bucket: "moving", Key: key, Body: bodies.get(key) }));
      }
      const a = await admin(fleet, 0);
      const started = await a.json<Json>("POST", "/buckets/moving/migrate", {
        target_backend: "second",
        delete_source: true,
      }, 202);
      const id = String(started.id);
      const writing = gatedWriters(fleet, "moving", bodies);
      const { others } = writing;
      let finished: Json;
      let slowDowns: number[] = [];
      try {
        finished = await a.jobEnded(id);
      } finally {
        slowDowns = await writing.stop();
      }
      assert.equal(finished.status, "succeeded", JSON.stringify(finished));
      assert.ok(slowDowns[0] > 0 && slowDowns[1] > 0, `503s per instance: ${slowDowns}`);
      // Every instance routes the bucket to the second store: a write through each lands there.
      for (const [index, s3] of [fleet.instanceClient(0), ...others].entries()) {
        const key = `after/${index}`;
        bodies.set(key, bodyFor(key));
        await writeThroughGate(s3, "moving", key, bodies.get(key)!);
      }
      const moved = await storedKeys(second.endpoint, "moving");
      for (const key of bodies.keys()) assert.ok(moved.includes(key), `${key} on the second store`);
      assert.deepEqual(await storedKeys(fleet.store.endpoint, "moving"), [], "source cleaned up");
      for (const [key, body] of bodies) {
        assert.deepEqual(await bytesOf(lb, "moving", key), body, key);
      }
      assert.match(await Deno.readTextFile(fleet.configFile), /moving:\s+backend: second/);
      for (const s3 of [lb, ...others]) s3.destroy();
    } finally {
      await second.stop();
    }
  },
});

Deno.test({
  name: "a killed holder's gate lifts after its expiry, and the restarted holder finishes the job",
  ignore: fleetReason !== null,
  async fn() {
    await using fleet = await startFleet({
      buckets: ["data"],
      env: { SVC_ENCRYPTION_KEY: "c3".repeat(32), SVC_MAINTENANCE_PACE_MS: "300" },
    });
    const lb = fleet.client();
    const bodies = new Map<string, Uint8Array>();
    for (let i = 0; i < 30; i++) {
      const key = `before/${String(i).padStart(2, "0")}`;
      bodies.set(key, bodyFor(key));
      await lb.send(new PutObjectCommand({ Bucket: "data", Key: key, Body: bodies.get(key) }));
    }
    await encryptFromNow(fleet);
    const a = await admin(fleet, 0);
    const id = await startReencrypt(a, "data");
    await until("a few objects re-encrypted", async () => {
      const job = await a.json<Json>("GET", `/jobs/${id}`);
      return Number((job.progress as Json).objects_done) >= 3 ? true : undefined;
    });
    await fleet.kill(0);
    const b = fleet.instanceClient(1);
    // The holder is gone but its gate holds until its heartbeat expires.
    const killedAt = Date.now();
    await assert.rejects(
      b.send(new PutObjectCommand({ Bucket: "data", Key: "early", Body: "x" })),
      (err: { name?: string }) => err.name === "SlowDown",
    );
    bodies.set("lapsed", bodyFor("lapsed"));
    await writeThroughGate(b, "data", "lapsed", bodies.get("lapsed")!);
    const waited = Date.now() - killedAt;
    assert.ok(waited > 15_000 && waited < 60_000, `gate lifted after ${waited} ms`);

    await fleet.restart(0);
    const again = await admin(fleet, 0);
    const finished = await again.jobEnded(id);
    assert.equal(finished.status, "succeeded", JSON.stringify(finished));
    for (const [key, body] of bodies) {
      assert.deepEqual(await bytesOf(lb, "data", key), body, key);
    }
    assert.deepEqual(await plaintextStored(fleet, "data"), [], "every stored byte sealed");
    lb.destroy();
    b.destroy();
  },
});

Deno.test({
  name: "the job reads nothing before another instance's write in flight has ended",
  ignore: fleetReason !== null,
  async fn() {
    await using fleet = await startFleet({ buckets: ["data"] });
    const lb = fleet.client();
    for (let i = 0; i < 5; i++) {
      await lb.send(new PutObjectCommand({ Bucket: "data", Key: `k/${i}`, Body: bodyFor("k") }));
    }
    // A slow upload through instance 1, in flight when the job starts on instance 0.
    const chunk = crypto.getRandomValues(new Uint8Array(16 * 1024));
    const pieces = 40;
    const slowBody = Readable.from((async function* () {
      for (let i = 0; i < pieces; i++) {
        yield chunk;
        await new Promise((r) => setTimeout(r, 100));
      }
    })());
    const slowClient = fleet.instanceClient(1, { checksums: false });
    let slowEndedAt = 0;
    const slow = slowClient.send(
      new PutObjectCommand({
        Bucket: "data",
        Key: "slow",
        Body: slowBody,
        ContentLength: chunk.length * pieces,
      }),
    ).then(() => slowEndedAt = Date.now());
    await new Promise((r) => setTimeout(r, 500));
    const a = await admin(fleet, 0);
    const id = await startReencrypt(a, "data");
    let leftDrainAt = 0;
    const finished = await a.jobEnded(id, 60_000, (job) => {
      const phase = (job.progress as Json).phase;
      if (leftDrainAt === 0 && phase !== "drain" && phase !== "queued") leftDrainAt = Date.now();
    });
    await slow;
    assert.equal(finished.status, "succeeded", JSON.stringify(finished));
    assert.ok(
      slowEndedAt > 0 && leftDrainAt >= slowEndedAt - 50,
      `${leftDrainAt} < ${slowEndedAt}`,
    );
    const stored = await bytesOf(lb, "data", "slow");
    assert.equal(stored.length, chunk.length * pieces);
    // Counted when the job started: the totals include the slow object.
    assert.equal((finished.progress as Json).objects_total, 6, JSON.stringify(finished));
    lb.destroy();
    slowClient.destroy();
  },
});
