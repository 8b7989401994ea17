/**
 * Lifecycle rules, black-box: a real svc with a filesystem backend and a second svc as an S3
 * backend, driven over the admin API like an operator and over S3 with the AWS SDK. Object ages
 * come from the test aid SVC_TEST_CLOCK_OFFSET_SECS: svc first runs 40 days in the past (old
 * objects are PUT then), then restarts at the present (new objects), so expiry, transition and
 * retain-newest decide on created_at values the test controls, without sleeping.
 */
import {
  CreateBucketCommand,
  GetObjectCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  type S3Client,
} from "@aws-sdk/client-s3";
import assert from "node:assert/strict";
import { AdminClient } from "./helpers/admin.ts";
import { sha256, startBackingSvc } from "./helpers/s3-front.ts";
import { ACCESS_KEY, SECRET_KEY, startSvc, type SvcProcess } from "./helpers/svc.ts";

type Json = Record<string, unknown>;
type Report = Json & { candidates: Json[]; failures: Json[] };

const DAY_SECS = 86_400;

const RULES = [
  {
    name: "expire",
    enabled: true,
    bucket: "logs",
    prefix: "app/",
    action: "delete",
    expire_after: "30d",
  },
  {
    name: "move",
    enabled: true,
    bucket: "data",
    prefix: "reports/",
    expire_after: "30d",
    batch_size: 2,
    action: {
      type: "transition",
      destination: { bucket: "cold", prefix: "archive/" },
      delete_source_after_success: true,
    },
  },
  {
    name: "copy",
    enabled: true,
    bucket: "data",
    prefix: "keep/",
    expire_after: "30d",
    action: { type: "archive", destination: { bucket: "backup" } },
  },
  {
    name: "builds",
    enabled: true,
    bucket: "builds",
    action: {
      type: "retain-newest",
      count: 2,
      qualify: { min_size_bytes: 1 },
      protect_younger_than: "7d",
    },
  },
  { name: "ghost", enabled: true, bucket: "ghost", action: "delete", expire_after: "1d" },
  { name: "off", enabled: false, bucket: "logs", action: "delete", expire_after: "1d" },
];

async function writeConfig(dir: string, backing: { endpoint: string }, enabled: boolean) {
  const config = {
    storage: {
      filesystem: dir,
      default_backend: "local",
      backends: [
        { name: "local", type: "filesystem", path: `${dir}/local` },
        {
          name: "remote",
          type: "s3",
          endpoint: backing.endpoint,
          access_key_id: ACCESS_KEY,
          secret_access_key: SECRET_KEY,
        },
      ],
      buckets: { cold: { backend: "remote" } },
      lifecycle: { enabled, tick_interval: "1h", rules: RULES },
    },
  };
  await Deno.mkdir(`${dir}/local`, { recursive: true });
  // JSON is YAML.
  await Deno.writeTextFile(`${dir}/svc.yaml`, JSON.stringify(config));
}

function start(dir: string, offsetSecs: number): Promise<SvcProcess> {
  return startSvc({
    dataDir: dir,
    args: ["--config", `${dir}/svc.yaml`],
    env: { SVC_TEST_CLOCK_OFFSET_SECS: String(offsetSecs) },
  });
}

async function put(s3: S3Client, Bucket: string, Key: string, body: string) {
  // Bytes, not a string: an empty string would reach the SDK as a stream of unknown length.
  const Body = new TextEncoder().encode(body);
  await s3.send(new PutObjectCommand({ Bucket, Key, Body }));
}

async function keys(s3: S3Client, Bucket: string): Promise<string[]> {
  const out = await s3.send(new ListObjectsV2Command({ Bucket }));
  return (out.Contents ?? []).map((o) => o.Key!);
}

async function text(s3: S3Client, Bucket: string, Key: string): Promise<string> {
  const out = await s3.send(new GetObjectCommand({ Bucket, Key }));
  return await out.Body!.transformToString();
}

async function expectStatus(admin: AdminClient, path: string, status: number): Promise<Json> {
  const response = await admin.request("POST", path);
  const body = await response.json();
  assert.equal(response.status, status, `${path}: ${JSON.stringify(body)}`);
  return body;
}

function candidateKeys(report: Report): string[] {
  return report.candidates.map((c) => String(c.key));
}

async function lifecycleEvents(admin: AdminClient, count: number): Promise<Json[]> {
  const deadline = Date.now() + 20_000;
  for (;;) {
    const page = await admin.json<{ rows: Json[] }>("GET", "/event-outbox?limit=1000");
    const events = page.rows.map((row) => row.event as Json)
      .filter((event) => String(event.kind).startsWith("Lifecycle"));
    if (events.length >= count || Date.now() > deadline) return events;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

Deno.test("lifecycle: expiry, transition and retain-newest on controlled ages; preview = run", async () => {
  const backing = await startBackingSvc(["cold"]);
  const dir = await Deno.makeTempDir({ prefix: "svc-lifecycle-" });
  let svc: SvcProcess | undefined;
  try {
    // ── 40 days ago: lifecycle off (no tick runs), the rules paused, the old objects PUT.
    await writeConfig(dir, backing, false);
    svc = await start(dir, -40 * DAY_SECS);
    assert.ok(svc.logs.some((line) => line.includes("SVC_TEST_CLOCK_OFFSET_SECS=-3456000")));
    let admin = new AdminClient(svc.url);
    await admin.login();
    let s3 = svc.client();
    for (const bucket of ["logs", "data", "cold", "backup", "builds"]) {
      await s3.send(new CreateBucketCommand({ Bucket: bucket }));
    }
    const off = await expectStatus(admin, "/jobs/lifecycle:expire/run-now", 409);
    assert.match(String(off.message), /lifecycle is disabled/);
    for (const rule of ["expire", "move", "copy", "builds", "ghost"]) {
      const row = await admin.json("POST", `/jobs/lifecycle:${rule}/pause`);
      assert.equal(row.paused, true);
    }
    await put(s3, "logs", "app/old-1.log", "old one");
    await put(s3, "logs", "app/old-2.log", "old two");
    await put(s3, "logs", "app/folder/", "");
    await put(s3, "logs", "other/old.log", "outside the prefix");
    await put(s3, "data", "reports/r1.csv", "report one");
    await put(s3, "data", "reports/r2.csv", "report two");
    await put(s3, "data", "keep/k1.txt", "kept one");
    await put(s3, "builds", "build-1", "b1");
    await put(s3, "builds", "build-2", "b2");
    await put(s3, "builds", "empty", "");
    await svc.stop();

    // ── Now: lifecycle on; the paused rules are left alone by the boot tick.
    await writeConfig(dir, backing, true);
    svc = await start(dir, 0);
    admin = new AdminClient(svc.url);
    await admin.login();
    s3 = svc.client();
    const listed = await s3.send(new ListObjectsV2Command({ Bucket: "logs" }));
    const oldAge = Date.now() - listed.Contents!.find((o) => o.Key === "app/old-1.log")!
      .LastModified!.getTime();
    assert.ok(oldAge > 39 * DAY_SECS * 1000 && oldAge < 41 * DAY_SECS * 1000, String(oldAge));
    await put(s3, "logs", "app/new.log", "new");
    await put(s3, "data", "reports/r3.csv", "report three");
    await put(s3, "builds", "build-3", "b3");
    await put(s3, "builds", "build-4", "b4");
    await put(s3, "builds", "build-5", "b5");

    const { jobs } = await admin.json<{ jobs: Json[] }>("GET", "/jobs");
    const row = jobs.find((job) => job.id === "lifecycle:move")!;
    assert.equal(row.kind, "lifecycle");
    assert.equal(row.type, "transition");
    assert.deepEqual(row.scope, { bucket: "data", prefix: "reports/", target: "cold/archive/" });
    assert.equal(row.paused, true);

    // Paused, disabled: run-now refused; actions outside the matrix: 405.
    assert.match(
      String((await expectStatus(admin, "/jobs/lifecycle:expire/run-now", 409)).message),
      /paused/,
    );
    assert.match(
      String((await expectStatus(admin, "/jobs/lifecycle:off/run-now", 409)).message),
      /disabled/,
    );
    for (const action of ["kill", "verify"]) {
      const refused = await expectStatus(admin, `/jobs/lifecycle:expire/${action}`, 405);
      assert.deepEqual(refused.supported, ["pause", "resume", "run-now", "preview", "delete"]);
    }

    // Expiry.
    const expirePreview = await admin.json<Report>("POST", "/jobs/lifecycle:expire/preview");
    assert.equal(expirePreview.run_id, undefined);
    assert.deepEqual(candidateKeys(expirePreview), ["app/old-1.log", "app/old-2.log"]);
    assert.equal(expirePreview.objects_scanned, 4);
    assert.equal(expirePreview.objects_skipped, 2); // the marker and the new key
    assert.equal((await keys(s3, "logs")).length, 5);
    await admin.json("POST", "/jobs/lifecycle:expire/resume");
    const expired = await admin.json<Report>("POST", "/jobs/lifecycle:expire/run-now");
    assert.equal(expired.status, "succeeded");
    assert.equal(typeof expired.run_id, "number");
    assert.deepEqual(expired.candidates, expirePreview.candidates);
    assert.equal(expired.objects_affected, 2);
    assert.equal(expired.bytes_affected, "old one".length + "old two".length);
    assert.deepEqual(await keys(s3, "logs"), ["app/folder/", "app/new.log", "other/old.log"]);
    const runs = await admin.json<{ runs: Json[] }>("GET", "/jobs/lifecycle:expire/runs");
    assert.equal(runs.runs[0].triggered_by, "run-now");
    assert.equal(runs.runs[0].status, "succeeded");
    assert.equal((runs.runs[0].counters as Json).objects_affected, 2);

    // Transition (move) to a bucket on the S3 backend.
    const movePreview = await admin.json<Report>("POST", "/jobs/lifecycle:move/preview");
    assert.deepEqual(
      movePreview.candidates.map((c) => [c.key, c.action, c.destination_bucket, c.destination_key]),
      [
        ["reports/r1.csv", "transition", "cold", "archive/r1.csv"],
        ["reports/r2.csv", "transition", "cold", "archive/r2.csv"],
      ],
    );
    await admin.json("POST", "/jobs/lifecycle:move/resume");
    const moved = await admin.json<Report>("POST", "/jobs/lifecycle:move/run-now");
    assert.equal(moved.status, "succeeded", JSON.stringify(moved));
    assert.deepEqual(moved.candidates, movePreview.candidates);
    assert.deepEqual(await keys(s3, "data"), ["keep/k1.txt", "reports/r3.csv"]);
    assert.deepEqual(await keys(s3, "cold"), ["archive/r1.csv", "archive/r2.csv"]);
    assert.equal(await text(s3, "cold", "archive/r2.csv"), "report two");
    // The bytes really are on the second backend.
    assert.deepEqual(await keys(backing.svc.client(), "cold"), [
      "archive/r1.csv",
      "archive/r2.csv",
    ]);

    // Archive (copy only) to a local bucket.
    await admin.json("POST", "/jobs/lifecycle:copy/resume");
    const copied = await admin.json<Report>("POST", "/jobs/lifecycle:copy/run-now");
    assert.deepEqual(candidateKeys(copied), ["keep/k1.txt"]);
    assert.equal(
      sha256(new TextEncoder().encode(await text(s3, "backup", "keep/k1.txt"))),
      sha256(new TextEncoder().encode("kept one")),
    );
    assert.ok((await keys(s3, "data")).includes("keep/k1.txt"));

    // retain-newest: keep build-5 and build-4; build-3 is young (protected); 2 and 1 go;
    // `empty` fails qualify (ignored).
    const retainPreview = await admin.json<Report>("POST", "/jobs/lifecycle:builds/preview");
    assert.deepEqual(candidateKeys(retainPreview), ["build-2", "build-1"]);
    assert.equal(retainPreview.objects_ignored, 1);
    assert.equal(retainPreview.objects_protected, 1);
    await admin.json("POST", "/jobs/lifecycle:builds/resume");
    const retained = await admin.json<Report>("POST", "/jobs/lifecycle:builds/run-now");
    assert.deepEqual(retained.candidates, retainPreview.candidates);
    assert.deepEqual(await keys(s3, "builds"), ["build-3", "build-4", "build-5", "empty"]);

    // Events: LifecycleExpired (2 expiry + 2 moved sources + 2 retain-newest),
    // LifecycleTransitioned (2 moved + 1 archived).
    const events = await lifecycleEvents(admin, 9);
    const summary = events.map((e) => {
      const detail = e.lifecycle as Json;
      return `${e.kind} ${detail.rule} ${detail.action} ${e.bucket}/${e.key}`;
    }).sort();
    assert.deepEqual(summary, [
      "LifecycleExpired builds retain-newest builds/build-1",
      "LifecycleExpired builds retain-newest builds/build-2",
      "LifecycleExpired expire expire logs/app/old-1.log",
      "LifecycleExpired expire expire logs/app/old-2.log",
      "LifecycleExpired move transition-source-delete data/reports/r1.csv",
      "LifecycleExpired move transition-source-delete data/reports/r2.csv",
      "LifecycleTransitioned copy transition data/keep/k1.txt",
      "LifecycleTransitioned move transition data/reports/r1.csv",
      "LifecycleTransitioned move transition data/reports/r2.csv",
    ]);
    const expiredEvent = events.find((e) => e.key === "app/old-1.log")!;
    const detail = expiredEvent.lifecycle as Json;
    assert.ok(Number(detail.expiration_age_seconds) >= 39 * DAY_SECS);
    assert.equal(detail.content_length, "old one".length);
    assert.equal(detail.expire_after, "30d");
    assert.ok(Date.parse(String(detail.object_created_at)) < Date.now() - 39 * DAY_SECS * 1000);
    const transition = events.find((e) =>
      e.kind === "LifecycleTransitioned" && e.key === "reports/r1.csv"
    )!.lifecycle as Json;
    assert.deepEqual(
      [transition.source_bucket, transition.destination_bucket, transition.destination_key],
      ["data", "cold", "archive/r1.csv"],
    );
    assert.equal(transition.copied_bytes, "report one".length);

    // A rule whose bucket does not exist: the run fails with a failure row.
    await admin.json("POST", "/jobs/lifecycle:ghost/resume");
    const ghost = await admin.json<Report>("POST", "/jobs/lifecycle:ghost/run-now");
    assert.equal(ghost.status, "failed");
    const failures = await admin.json<{ failures: Json[] }>(
      "GET",
      "/jobs/lifecycle:ghost/failures",
    );
    assert.equal(failures.failures.length, 1);
    assert.match(String(failures.failures[0].error_message), /ghost/);
    assert.equal(failures.failures[0].run_id, ghost.run_id);

    // Deleting a rule takes it out of the config and off the jobs surface.
    await admin.json("POST", "/jobs/lifecycle:ghost/delete");
    const after = await admin.json<{ jobs: Json[] }>("GET", "/jobs");
    assert.ok(!after.jobs.some((job) => job.id === "lifecycle:ghost"));
    assert.ok(!(await Deno.readTextFile(`${dir}/svc.yaml`)).includes("ghost"));
  } finally {
    await svc?.stop();
    await backing.stop();
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
});
