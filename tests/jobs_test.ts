/**
 * The jobs room, black-box: a real svc (and a second svc as the S3 target backend), driven over
 * the admin API like an operator and over S3 with the AWS SDK. Migrate a bucket from the
 * filesystem backend to the S3 backend with a kill -9 in the middle; cancel a migration before
 * its flip; re-encrypt a bucket; the refusals (400, 404, 405, 409).
 */
import {
  CreateBucketCommand,
  DeleteObjectCommand,
  GetObjectCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  S3Client,
} from "@aws-sdk/client-s3";
import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import { AdminClient, JOB_ENDED } from "./helpers/admin.ts";
import { clientFor, sha256, startBackingSvc, twoBackendsYaml } from "./helpers/s3-front.ts";
import { ACCESS_KEY, randomBytes, SECRET_KEY, startSvc, type SvcProcess } from "./helpers/svc.ts";
import { filesUnder } from "./helpers/files.ts";

type Json = Record<string, unknown>;

/** A client that never retries: a 503 SlowDown reaches the test instead of being retried. */
function onceClient(svc: SvcProcess): S3Client {
  return new S3Client({
    endpoint: svc.url,
    region: "us-east-1",
    forcePathStyle: true,
    credentials: { accessKeyId: ACCESS_KEY, secretAccessKey: SECRET_KEY },
    maxAttempts: 1,
    requestChecksumCalculation: "WHEN_REQUIRED",
    responseChecksumValidation: "WHEN_REQUIRED",
  });
}

async function getBytes(s3: S3Client, Bucket: string, Key: string): Promise<Uint8Array> {
  const out = await s3.send(new GetObjectCommand({ Bucket, Key }));
  return await out.Body!.transformToByteArray();
}

async function waitFor<T>(what: string, probe: () => Promise<T | undefined>, ms = 40_000) {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    const value = await probe();
    if (value !== undefined) return value;
    await new Promise((resolve) => setTimeout(resolve, 40));
  }
  throw new Error(`Timed out waiting for ${what}`);
}

async function hasXdelta3(): Promise<boolean> {
  try {
    return (await new Deno.Command("xdelta3", { args: ["-V"], stdout: "null", stderr: "null" })
      .output()).success;
  } catch {
    return false;
  }
}

const MARKER = "PLAINTEXT-MARKER-5b1e";

/** `bytes` with `marker` written every 512 bytes (a plaintext copy anywhere shows it). */
function marked(bytes: Uint8Array, marker: string | undefined): Uint8Array {
  if (marker === undefined) return bytes;
  const encoded = new TextEncoder().encode(marker);
  for (let at = 0; at + encoded.length <= bytes.length; at += 512) bytes.set(encoded, at);
  return bytes;
}

/** Whether `needle` occurs in the file's bytes (the test's files are small). */
function fileHolds(path: string, needle: string): boolean {
  return Buffer.from(Deno.readFileSync(path)).includes(needle);
}

/** Rewrites the config file and reloads it (SIGHUP), waiting for the server to say so. */
async function reloadConfig(svc: SvcProcess, file: string, edit: (yaml: string) => string) {
  await Deno.writeTextFile(file, edit(await Deno.readTextFile(file)));
  const mark = svc.logs.length;
  svc.kill("SIGHUP");
  await waitFor("the config reload", () => {
    const lines = svc.logs.slice(mark);
    if (lines.some((line) => /reload.*(fail|refus)/i.test(line))) {
      throw new Error(`reload failed:\n${lines.join("\n")}`);
    }
    return Promise.resolve(lines.some((line) => /config reloaded/.test(line)) || undefined);
  });
}

async function jobOf(admin: AdminClient, id: string): Promise<Json> {
  return await admin.json("GET", `/jobs/${id}`);
}

function waitForStatus(admin: AdminClient, id: string, status: string) {
  return waitFor(`${id} to be ${status}`, async () => {
    const job = await jobOf(admin, id);
    if (job.status === status) return job;
    if (JOB_ENDED.includes(String(job.status))) {
      throw new Error(`${id} ended ${job.status}: ${JSON.stringify(job)}`);
    }
  });
}

async function expectSlowDown(write: Promise<unknown>) {
  await assert.rejects(write, (err: { name?: string; $metadata?: { httpStatusCode?: number } }) => {
    assert.equal(err.$metadata?.httpStatusCode, 503);
    assert.equal(err.name, "SlowDown");
    return true;
  });
}

/** Two archives (a delta pair) and `count` small objects; `marker`, if given, in every body. */
async function fill(s3: S3Client, bucket: string, count: number, marker?: string) {
  const bodies = new Map<string, Uint8Array>();
  const archive = marked(randomBytes(300_000), marker);
  const next = archive.slice();
  next.set(randomBytes(1000), 5000);
  bodies.set("builds/app-1.zip", archive);
  bodies.set("builds/app-2.zip", next);
  for (let i = 0; i < count; i++) {
    bodies.set(`obj/${String(i).padStart(3, "0")}.bin`, marked(randomBytes(1000 + i * 97), marker));
  }
  for (const [Key, Body] of bodies) {
    await s3.send(new PutObjectCommand({ Bucket: bucket, Key, Body }));
  }
  return bodies;
}

async function assertAllReadable(s3: S3Client, bucket: string, bodies: Map<string, Uint8Array>) {
  for (const [key, body] of bodies) {
    assert.equal(sha256(await getBytes(s3, bucket, key)), sha256(body), key);
  }
}

async function frontConfig(dir: string, backing: { endpoint: string }) {
  const file = `${dir}/front.yaml`;
  await Deno.mkdir(`${dir}/local`, { recursive: true });
  const credentials = { accessKeyId: ACCESS_KEY, secretAccessKey: SECRET_KEY };
  // The checks below look for the parent rule's baseline (`builds/reference.bin`).
  const policy = "  buckets:\n    moving:\n      deltaspace: parent\n";
  await Deno.writeTextFile(
    file,
    `${twoBackendsYaml(dir, { ...backing, ...credentials })}\n${policy}`,
  );
  return file;
}

function startFront(dir: string, file: string, paceMs: number) {
  return startSvc({
    dataDir: dir,
    args: ["--config", file],
    env: { SVC_MAINTENANCE_PACE_MS: String(paceMs), SVC_MAINTENANCE_BATCH_SIZE: "7" },
  });
}

Deno.test("migrate to an S3 backend survives kill -9; writes 503 meanwhile, reads pass", async () => {
  const backing = await startBackingSvc(["moving"]);
  const dir = await Deno.makeTempDir({ prefix: "svc-jobs-" });
  let front: SvcProcess | undefined;
  try {
    const file = await frontConfig(dir, backing);
    front = await startFront(dir, file, 60);
    const s3 = onceClient(front);
    await s3.send(new CreateBucketCommand({ Bucket: "moving" }));
    const bodies = await fill(s3, "moving", 40);
    const admin = new AdminClient(front.url);
    await admin.login();

    const started = await admin.json("POST", "/buckets/moving/migrate", {
      target_backend: "remote",
      delete_source: true,
    }, 202);
    assert.equal(started.bucket, "moving");
    assert.equal(started.from_backend, "local");
    assert.equal(started.to_backend, "remote");
    assert.match(String(started.id), /^maintenance:\d+$/);
    assert.equal(started.id, `maintenance:${started.job_id}`);
    const id = String(started.id);

    // Gated from creation: writes (PUT, DELETE) answer 503 SlowDown, reads pass.
    await expectSlowDown(
      s3.send(new PutObjectCommand({ Bucket: "moving", Key: "new", Body: "x" })),
    );
    await expectSlowDown(
      onceClient(front).send(
        new DeleteObjectCommand({ Bucket: "moving", Key: "obj/000.bin" }),
      ),
    );
    assert.equal(
      sha256(await getBytes(s3, "moving", "builds/app-2.zip")),
      sha256(bodies.get("builds/app-2.zip")!),
    );
    const gate = await admin.json("GET", "/jobs/bucket/moving");
    assert.equal(gate.write_gate, "gated");
    assert.equal((gate.job as Json).id, id);

    // kill -9 in the middle of the copy.
    const before = await waitFor("some objects copied", async () => {
      const job = await jobOf(admin, id);
      const progress = job.progress as Json;
      return progress.phase === "copy" && Number(progress.objects_done) >= 8 ? job : undefined;
    });
    front.kill("SIGKILL");
    await front.stop();
    assert.equal(before.status, "running");

    front = await startFront(dir, file, 20);
    const again = new AdminClient(front.url);
    await again.login();
    const resumed = await jobOf(again, id);
    assert.ok(["queued", "running"].includes(String(resumed.status)), JSON.stringify(resumed));
    const s3b = onceClient(front);
    await expectSlowDown(
      s3b.send(new PutObjectCommand({ Bucket: "moving", Key: "new", Body: "x" })),
    );
    await assertAllReadable(s3b, "moving", bodies);

    const done = await waitForStatus(again, id, "succeeded");
    const progress = done.progress as Json;
    assert.equal(progress.phase, "done");
    assert.equal(progress.objects_failed, 0);
    // Nothing skipped, nothing redone beyond the one object in flight at the kill.
    const stored = (await clientFor(backing).send(new ListObjectsV2Command({ Bucket: "moving" })))
      .Contents ?? [];
    // Counters and cursor are saved together: every stored object counted exactly once.
    assert.equal(progress.objects_done, stored.length, JSON.stringify(progress));
    const keys = stored.map((o) => o.Key!);
    for (const key of bodies.keys()) {
      if (!key.endsWith(".zip")) assert.ok(keys.includes(key), `${key} is on the target`);
    }
    if (await hasXdelta3()) {
      // Stored objects moved as stored: the baseline and the delta, not rebuilt archives.
      assert.ok(keys.includes("builds/reference.bin"), keys.join(","));
      assert.ok(keys.some((key) => key.endsWith(".zip.delta")), keys.join(","));
    }

    // The bucket now lives on the S3 backend: every object reads back identical through svc.
    await assertAllReadable(s3b, "moving", bodies);
    const buckets = await again.json<{ buckets: Json[] }>("GET", "/buckets");
    assert.equal(buckets.buckets.find((b) => b.name === "moving")?.backend, "remote");
    // (beside the bucket's other settings: its `deltaspace` above)
    assert.match(await Deno.readTextFile(file), /moving:\s*\n(?:\s+\w+: \S+\n)*\s*backend: remote/);
    // delete_source: the source bucket is gone from the filesystem backend.
    await assert.rejects(Deno.stat(`${dir}/local/moving`), Deno.errors.NotFound);
    // The gate lifted: writes land on the new backend.
    await s3b.send(new PutObjectCommand({ Bucket: "moving", Key: "after", Body: "written" }));
    assert.equal(
      new TextDecoder().decode(await getBytes(clientFor(backing), "moving", "after")),
      "written",
    );

    const runs = await again.json<{ runs: Json[] }>("GET", `/jobs/${id}/runs?limit=5`);
    assert.equal(runs.runs.length, 1);
    assert.equal(runs.runs[0].status, "succeeded");
    assert.deepEqual(await again.json("GET", `/jobs/${id}/failures`), { failures: [] });
    const rows = await again.json<{ jobs: Json[] }>("GET", "/jobs");
    const row = rows.jobs.find((j) => j.id === id)!;
    for (const field of ["id", "kind", "scope", "status", "paused", "progress", "last_run"]) {
      assert.ok(field in row, `row has ${field}`);
    }
    assert.equal(row.kind, "maintenance");
    assert.deepEqual(row.scope, { bucket: "moving", prefix: "", target: "remote" });
    const metrics = await (await fetch(`${front.url}/_/metrics`)).text();
    assert.match(metrics, /svc_job_objects_total\{type="migrate",outcome="done"\} \d+/);
    assert.match(metrics, /svc_jobs\{kind="maintenance",status="succeeded"\} 1/);
    // The audit ring of this process: the re-queue at boot, the flip, the end.
    const audit = JSON.stringify(await again.json("GET", "/audit?limit=200"));
    for (const event of ["job_requeued", "job_bucket_flipped", "job_finished"]) {
      assert.ok(audit.includes(`"${event}"`), `audit has ${event}`);
    }
  } finally {
    await front?.stop();
    await backing.stop();
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
});

Deno.test("cancel before the flip leaves the source intact and the target clean", async () => {
  const backing = await startBackingSvc(["staying"]);
  const dir = await Deno.makeTempDir({ prefix: "svc-jobs-" });
  let front: SvcProcess | undefined;
  try {
    const file = await frontConfig(dir, backing);
    front = await startFront(dir, file, 150);
    const s3 = onceClient(front);
    await s3.send(new CreateBucketCommand({ Bucket: "staying" }));
    const bodies = await fill(s3, "staying", 15);
    const admin = new AdminClient(front.url);
    await admin.login();
    const { id } = await admin.json("POST", "/buckets/staying/migrate", {
      target_backend: "remote",
    }, 202);
    await waitFor("a few copies", async () => {
      const progress = (await jobOf(admin, String(id))).progress as Json;
      return Number(progress.objects_done) >= 3 ? true : undefined;
    });
    const cancelling = await admin.json("POST", `/jobs/${id}/cancel`, undefined, 202);
    assert.ok(["cancelling", "cancelled"].includes(String(cancelling.status)));
    const cancelled = await waitForStatus(admin, String(id), "cancelled");
    assert.equal((cancelled.progress as Json).phase, "cancelled");

    // The target holds nothing: the bucket the job created there is gone again.
    await assert.rejects(
      clientFor(backing).send(new ListObjectsV2Command({ Bucket: "staying" })),
      (err: { name?: string }) => err.name === "NoSuchBucket",
    );
    // The source is intact, still routed locally, and writable again.
    await assertAllReadable(s3, "staying", bodies);
    const buckets = await admin.json<{ buckets: Json[] }>("GET", "/buckets");
    assert.equal(buckets.buckets.find((b) => b.name === "staying")?.backend, "local");
    await s3.send(new PutObjectCommand({ Bucket: "staying", Key: "after", Body: "ok" }));
    assert.equal((await admin.json("GET", "/jobs/bucket/staying")).write_gate, "open");
    // A finished job cannot be cancelled again.
    const again = await admin.request("POST", `/jobs/${id}/cancel`);
    assert.equal(again.status, 409);
    assert.equal((await again.json()).error, "conflict");
  } finally {
    await front?.stop();
    await backing.stop();
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
});

Deno.test("re-encrypt seals every stored byte and keeps every object readable byte-identical; refusals", async () => {
  // Plaintext storage with a key at hand; encryption is turned on (config reload) once the
  // objects are in, so the re-encrypt job is what seals them.
  const dataDir = await Deno.makeTempDir({ prefix: "svc-reencrypt-" });
  const config = `${dataDir}/svc.yaml`;
  await Deno.writeTextFile(
    config,
    "storage:\n  backend_encryption:\n    mode: none\n" +
      // The checks below look for the parent rule's baseline under `builds/`.
      "  buckets:\n    plain:\n      deltaspace: parent\n",
  );
  await using svc = await startSvc({
    dataDir,
    args: ["--config", config], // the filesystem backend, whatever SVC_TEST_BACKEND says
    env: { SVC_ENCRYPTION_KEY: "c3".repeat(32) },
  });
  const s3 = onceClient(svc);
  await s3.send(new CreateBucketCommand({ Bucket: "plain" }));
  const bodies = await fill(s3, "plain", 12, MARKER);
  const bucketDir = `${dataDir}/plain`;
  const holdingMarker = () => filesUnder(bucketDir).filter((path) => fileHolds(path, MARKER));
  // Before: every small object's file, and the archives' stored bytes, show the marker.
  const before = holdingMarker();
  for (const key of bodies.keys()) {
    if (key.startsWith("obj/")) assert.ok(before.includes(`${bucketDir}/${key}`), key);
  }
  assert.ok(before.some((path) => path.includes("builds")), before.join("\n"));
  await reloadConfig(svc, config, (yaml) => yaml.replace("mode: none", "mode: aes256-gcm-proxy"));
  assert.deepEqual(holdingMarker(), before, "a reload alone rewrites nothing");
  const admin = new AdminClient(svc.url);
  await admin.login();

  const outcome = await admin.json<{ started: Json[]; errors: Json[] }>(
    "POST",
    "/jobs/reencrypt",
    { buckets: ["plain", "nosuchbucket"] },
    202,
  );
  assert.equal(outcome.started.length, 1);
  assert.equal(outcome.started[0].bucket, "plain");
  assert.deepEqual(outcome.errors.map((e) => [e.bucket, e.error]), [["nosuchbucket", "not_found"]]);
  const id = String(outcome.started[0].id);
  assert.equal(id, `maintenance:${outcome.started[0].job_id}`);
  const done = await waitForStatus(admin, id, "succeeded");
  // Every stored object was rewritten: the two archives are a baseline plus deltas (or two
  // passthrough objects without xdelta3), the rest one each.
  const progress = done.progress as Json;
  assert.ok(Number(progress.objects_done) >= bodies.size, JSON.stringify(progress));
  assert.equal(progress.objects_failed, 0);
  // After: no stored file of the bucket holds plaintext, and everything reads back.
  assert.deepEqual(holdingMarker(), []);
  assert.ok(filesUnder(bucketDir).length >= before.length);
  await assertAllReadable(s3, "plain", bodies);
  await s3.send(new PutObjectCommand({ Bucket: "plain", Key: "after", Body: "ok" }));

  // 405: maintenance jobs support only cancel.
  const paused = await admin.request("POST", `/jobs/${id}/pause`);
  assert.equal(paused.status, 405);
  const body = await paused.json();
  assert.equal(body.error, "method_not_allowed");
  assert.deepEqual(body.supported, ["cancel"]);
  for (const action of ["resume", "run-now", "preview", "verify", "kill", "delete"]) {
    assert.equal((await admin.request("POST", `/jobs/${id}/${action}`)).status, 405, action);
  }
  assert.equal((await admin.request("POST", "/jobs/maintenance:999/cancel")).status, 404);

  // 400s for bad bodies.
  const refused = async (method: string, path: string, payload: unknown, status = 400) => {
    const response = await admin.request(method, path, payload);
    const text = await response.text();
    assert.equal(response.status, status, `${path} ${JSON.stringify(payload)}: ${text}`);
    return JSON.parse(text);
  };
  const many = Array.from({ length: 101 }, (_, i) => `bucket-${i}`);
  assert.match(
    (await refused("POST", "/jobs/reencrypt", { buckets: many })).message,
    /at most 100/,
  );
  await refused("POST", "/jobs/reencrypt", { buckets: "plain" });
  await refused("POST", "/jobs/reencrypt", { buckets: [] });
  const unknown = await refused("POST", "/jobs/reencrypt", { buckets: ["nosuchbucket"] });
  assert.deepEqual(unknown.started, []);
  await refused("POST", "/buckets/plain/migrate", { target_backend: "elsewhere" });
  await refused("POST", "/buckets/plain/migrate", { target_backend: "default" });
  await refused("POST", "/buckets/plain/migrate", {});
  await refused("POST", "/buckets/plain/migrate", { target_backend: "x", delete_source: "yes" });
  await refused("POST", "/buckets/nosuchbucket/migrate", { target_backend: "default" }, 404);
  await refused("GET", `/jobs/${id}/runs?limit=abc`, undefined);
  // Nothing above created a job or left a gate.
  const rows = await admin.json<{ jobs: Json[] }>("GET", "/jobs");
  assert.equal(rows.jobs.length, 1);
  assert.equal((await admin.json("GET", "/jobs/bucket/plain")).write_gate, "open");
});
