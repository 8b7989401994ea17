import assert from "node:assert/strict";
import { emptyProgress, progressView } from "./job-progress.ts";
import { forgetLive, liveProgress, trackLive } from "./live-progress.ts";
import { ProgressMeter } from "./progress-meter.ts";
import { type JobRecord, jobRow } from "./job-model.ts";

const running = { status: "running", startedAt: 1000, finishedAt: null };

Deno.test("progressView: percent and ETA of a running job from its totals and stored rate", () => {
  const view = progressView({
    ...emptyProgress("copy"),
    objects_done: 30,
    objects_failed: 10,
    bytes_done: 3000,
    objects_total: 100,
    bytes_total: 10_000,
    rate_objects_per_sec: 4,
    rate_bytes_per_sec: 400,
  }, running);
  assert.equal(view.percent, 40);
  assert.equal(view.eta_seconds, 15, "60 objects left at 4/s");
  assert.equal(view.rate_bytes_per_sec, 400);
  assert.equal(view.bytes_total, 10_000);
});

Deno.test("progressView: an old row without the new fields answers them as null", () => {
  const view = progressView(
    { phase: "copy", objects_done: 3, objects_failed: 0, bytes_done: 30 },
    running,
  );
  assert.deepEqual(view, {
    phase: "copy",
    objects_done: 3,
    objects_failed: 0,
    bytes_done: 30,
    objects_total: null,
    bytes_total: null,
    percent: null,
    rate_bytes_per_sec: null,
    rate_objects_per_sec: null,
    eta_seconds: null,
  });
});

Deno.test("progressView: after a run, the whole run's average and no time left", () => {
  const stored = {
    ...emptyProgress("done"),
    objects_done: 50,
    bytes_done: 5_000_000,
    objects_total: 50,
    rate_objects_per_sec: 99,
  };
  const done = progressView(stored, { status: "succeeded", startedAt: 0, finishedAt: 10_000 });
  assert.equal(done.percent, 100);
  assert.equal(done.eta_seconds, 0);
  assert.equal(done.rate_objects_per_sec, 5);
  assert.equal(done.rate_bytes_per_sec, 500_000);
  const cancelled = progressView(
    { ...stored, objects_done: 10 },
    { status: "cancelled", startedAt: 0, finishedAt: 10_000 },
  );
  assert.equal(cancelled.percent, 20);
  assert.equal(cancelled.eta_seconds, null, "a cancelled job has no ETA");
});

Deno.test("progressView: a rule's run counters keep their names and fill the common fields", () => {
  const counters = {
    objects_scanned: 40,
    objects_affected: 7,
    objects_skipped: 33,
    bytes_affected: 700,
    errors: 1,
  };
  const view = progressView(counters, { status: "succeeded", startedAt: 0, finishedAt: 4000 });
  assert.equal(view.objects_scanned, 40);
  assert.equal(view.objects_done, 40, "a walk's done is what it went through");
  assert.equal(view.objects_failed, 1);
  assert.equal(view.bytes_done, 700);
  assert.equal(view.objects_total, null);
  assert.equal(view.percent, null);
  assert.equal(view.rate_objects_per_sec, 10.25);
  assert.equal(view.phase, "done");
  assert.equal(
    progressView({}, { status: "idle", startedAt: null, finishedAt: null }).phase,
    "idle",
  );
});

Deno.test("live progress: a rule row shows its run's counters and rate while it goes", () => {
  let now = 50_000;
  let scanned = 0;
  const job: JobRecord = {
    id: "lifecycle:live-test",
    kind: "lifecycle",
    type: "expire",
    scope: { bucket: "b", prefix: "" },
    status: "succeeded",
    paused: false,
    cancelRequested: false,
    progress: { objects_scanned: 3 } as never,
    state: {},
    error: null,
    createdBy: "config",
    createdAt: 0,
    startedAt: 40_000,
    finishedAt: 41_000,
    updatedAt: 41_000,
  };
  const untrack = trackLive("lifecycle:live-test", () => ({
    ...emptyProgress("scan"),
    objects_done: scanned,
  }), () => now);
  scanned = 20;
  now += 2000;
  const row = jobRow(job).progress as Record<string, unknown>;
  assert.equal(row.phase, "scan");
  assert.equal(row.objects_done, 20);
  assert.equal(row.rate_objects_per_sec, 10);
  assert.equal(row.eta_seconds, null, "no total: no ETA");
  untrack();
  assert.equal(liveProgress("lifecycle:live-test"), null);
  assert.equal((jobRow(job).progress as Record<string, unknown>).objects_done, 3);
});

Deno.test("live progress: a stalled maintenance job's rate falls and its ETA grows", () => {
  let now = 100_000;
  const progress = {
    ...emptyProgress("copy"),
    objects_done: 0,
    objects_total: 100,
    bytes_total: 100_000,
  };
  const meter = new ProgressMeter();
  meter.record({ at: now, objects: 0, bytes: 0 });
  const job: JobRecord = {
    id: "maintenance:9001",
    kind: "maintenance",
    type: "migrate",
    scope: { bucket: "b", prefix: "" },
    status: "running",
    paused: false,
    cancelRequested: false,
    progress: { ...progress },
    state: {},
    error: null,
    createdBy: "admin",
    createdAt: 0,
    startedAt: now,
    finishedAt: null,
    updatedAt: now,
  };
  trackLive(job.id, () => progress, () => now, meter);
  // 20 objects in 2 s (the worker samples at its saves), then nothing for 8 s.
  now += 2000;
  progress.objects_done = 20;
  progress.bytes_done = 20_000;
  meter.record({ at: now, objects: 20, bytes: 20_000 });
  const moving = jobRow(job).progress as Record<string, unknown>;
  assert.equal(moving.rate_objects_per_sec, 10);
  assert.equal(moving.eta_seconds, 8);
  assert.equal(moving.percent, 20);
  now += 8000;
  const stalled = jobRow(job).progress as Record<string, unknown>;
  assert.equal(stalled.rate_objects_per_sec, 2, "20 objects over 10 s");
  assert.equal(stalled.eta_seconds, 40);
  forgetLive(job.id);
  assert.equal(liveProgress(job.id), null);
  assert.equal((jobRow(job).progress as Record<string, unknown>).objects_done, 0, "stored again");
});
