/**
 * Job progress, black-box: a real svc with paced maintenance jobs, watched over the admin API
 * like an operator (or the admin CLI) would. A re-encrypt reports its totals (counted before
 * the walk), percent, window rates and an ETA while it runs, and after it the whole run's
 * average with nothing left; a lifecycle rule's row carries the same fields after a run-now
 * (a listing walk knows no total: percent and ETA stay null).
 */
import assert from "node:assert/strict";
import { CreateBucketCommand, PutObjectCommand } from "@aws-sdk/client-s3";
import { AdminClient } from "./helpers/admin.ts";
import { randomBytes, startSvc } from "./helpers/svc.ts";
import { until } from "./helpers/poll.ts";

type Json = Record<string, unknown>;

interface Progress {
  phase: string;
  objects_done: number;
  objects_failed: number;
  bytes_done: number;
  objects_total: number | null;
  bytes_total: number | null;
  percent: number | null;
  rate_bytes_per_sec: number | null;
  rate_objects_per_sec: number | null;
  eta_seconds: number | null;
}

const OBJECTS = 40;
const SIZE = 4096;
const PACE_MS = 100;

async function writeConfig(dir: string) {
  const config = {
    storage: {
      filesystem: dir,
      default_backend: "local",
      backends: [{ name: "local", type: "filesystem", path: `${dir}/local` }],
      lifecycle: {
        enabled: true,
        tick_interval: "1h",
        rules: [
          // Nothing is 30 days old: the run walks the bucket and deletes nothing.
          { name: "sweep", enabled: true, bucket: "paced", action: "delete", expire_after: "30d" },
        ],
      },
    },
  };
  await Deno.mkdir(`${dir}/local`, { recursive: true });
  await Deno.writeTextFile(`${dir}/svc.yaml`, JSON.stringify(config)); // JSON is YAML
}

Deno.test("jobs: progress shows totals, percent, rate and ETA during and after a run", async (t) => {
  const dir = await Deno.makeTempDir({ prefix: "svc-jobs-progress-" });
  await writeConfig(dir);
  await using svc = await startSvc({
    dataDir: dir,
    args: ["--config", `${dir}/svc.yaml`],
    env: { SVC_MAINTENANCE_PACE_MS: String(PACE_MS), SVC_MAINTENANCE_BATCH_SIZE: "8" },
  });
  const s3 = svc.client();
  const admin = new AdminClient(svc.url);
  await admin.login();
  await s3.send(new CreateBucketCommand({ Bucket: "paced" }));
  for (let i = 0; i < OBJECTS; i++) {
    const Key = `k-${String(i).padStart(3, "0")}`;
    await s3.send(new PutObjectCommand({ Bucket: "paced", Key, Body: randomBytes(SIZE) }));
  }
  const progressOf = async (id: string) =>
    (await admin.json<Json>("GET", `/jobs/${id}`)).progress as Progress;

  let id = "";
  await t.step("mid-run: totals counted first, percent, window rate and an ETA", async () => {
    const started = await admin.json<{ started: { id: string }[] }>(
      "POST",
      "/jobs/reencrypt",
      { buckets: ["paced"] },
      202,
    );
    id = started.started[0].id;
    // Past the first second of the walk (the window needs half a second) and well before its end.
    const mid = await until("the job a third through", async () => {
      const p = await progressOf(id);
      return p.phase === "rewrite" && p.objects_done >= 12 && p.objects_done <= 30 ? p : undefined;
    });
    assert.equal(mid.objects_total, OBJECTS, "the bucket was counted before the walk");
    assert.equal(mid.bytes_total, OBJECTS * SIZE);
    const processed = mid.objects_done + mid.objects_failed;
    assert.equal(mid.percent, Math.floor((1000 * processed) / OBJECTS) / 10);
    assert.ok(mid.percent! > 0 && mid.percent! < 100, `percent ${mid.percent}`);
    // Paced at 100 ms an object (plus the copy): at most 10 objects a second, well above 1.
    const rate = mid.rate_objects_per_sec!;
    assert.ok(rate > 1 && rate <= 1000 / PACE_MS + 0.5, `rate ${rate} objects/s`);
    assert.ok(mid.rate_bytes_per_sec! > SIZE, `byte rate ${mid.rate_bytes_per_sec}`);
    // The ETA is what remains at that rate (rounded up).
    assert.equal(mid.eta_seconds, Math.ceil((OBJECTS - processed) / rate));
    assert.ok(mid.eta_seconds! >= 1);

    // The bucket's gate view (browse sessions) carries the percent and ETA too.
    const gate = await admin.json<{ job: Json }>("GET", "/jobs/bucket/paced");
    assert.equal(gate.job.objects_total, OBJECTS);
    assert.equal(typeof gate.job.percent, "number");
  });

  await t.step("after the run: 100 %, the average rate, nothing left", async () => {
    const row = await until("the job to succeed", async () => {
      const job = await admin.json<Json>("GET", `/jobs/${id}`);
      return job.status === "succeeded" ? job : undefined;
    });
    const done = row.progress as Progress;
    assert.equal(done.phase, "done");
    assert.equal(done.objects_done, OBJECTS);
    assert.equal(done.bytes_done, OBJECTS * SIZE);
    assert.equal(done.percent, 100);
    assert.equal(done.eta_seconds, 0);
    const run = row.last_run as Json;
    const seconds = (Date.parse(String(run.finished_at)) - Date.parse(String(run.started_at))) /
      1000;
    assert.ok(seconds >= (OBJECTS * PACE_MS) / 1000, `the run took ${seconds} s`);
    assert.equal(done.rate_objects_per_sec, Math.round((OBJECTS / seconds) * 100) / 100);
    // The listing shows the same row.
    const { jobs } = await admin.json<{ jobs: Json[] }>("GET", "/jobs");
    assert.deepEqual(jobs.find((job) => job.id === id)?.progress, done);
  });

  await t.step("a lifecycle rule's row: counters, rate, no total, no percent", async () => {
    await until("the rule's row", async () => {
      const { jobs } = await admin.json<{ jobs: Json[] }>("GET", "/jobs");
      return jobs.some((job) => job.id === "lifecycle:sweep") ? true : undefined;
    });
    const report = await admin.json<Json>("POST", "/jobs/lifecycle:sweep/run-now");
    assert.equal(report.objects_scanned, OBJECTS);
    assert.equal(report.objects_affected, 0);
    const row = await admin.json<Json>("GET", "/jobs/lifecycle:sweep");
    const p = row.progress as Progress & Json;
    assert.equal(p.objects_scanned, OBJECTS, "the rule's own counters keep their names");
    assert.equal(p.objects_done, OBJECTS, "a walk's done is what it went through");
    assert.equal(p.objects_total, null);
    assert.equal(p.percent, null);
    assert.equal(p.eta_seconds, 0, "a run that succeeded has nothing left");
    // The run's average (null only if it took under a millisecond).
    const rate = p.rate_objects_per_sec;
    assert.ok(rate === null || rate > 0, `rate ${rate}`);
  });
  s3.destroy();
});
