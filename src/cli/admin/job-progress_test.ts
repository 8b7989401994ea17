import assert from "node:assert/strict";
import { progressLine, progressText, progressView, renderBar } from "./job-progress.ts";

const today = {
  id: "maintenance:3",
  status: "running",
  paused: false,
  progress: { phase: "copy", objects_done: 120, objects_failed: 0, bytes_done: 5 * 1024 * 1024 },
};

Deno.test("progressView reads today's counters: no total, no percentage", () => {
  const view = progressView(today);
  assert.deepEqual(view, {
    phase: "copy",
    done: 120,
    total: undefined,
    failed: 0,
    bytesDone: 5 * 1024 * 1024,
    bytesTotal: undefined,
    etaSeconds: undefined,
  });
  assert.equal(progressText(view), "120 objects, 5.00 MiB");
  assert.equal(progressLine(today, 80), "maintenance:3 running (copy) 120 objects, 5.00 MiB");
});

Deno.test("progressView uses totals, percent and eta when the server sends them", () => {
  const withTotals = {
    ...today,
    progress: { ...today.progress, total: 480, objects_failed: 2, eta_seconds: 185 },
  };
  const view = progressView(withTotals);
  assert.equal(view.percent, 25);
  assert.equal(progressText(view), "25%, 120/480 objects, 2 failed, 5.00 MiB, eta 3m05s");
  // A server percentage wins over the derived one, and is clamped.
  assert.equal(progressView({ progress: { percent: 40, total: 10, objects_done: 9 } }).percent, 40);
  assert.equal(progressView({ progress: { percent: 140 } }).percent, 100);
  assert.equal(progressView({ progress: { bytes_done: 1, bytes_total: 4 } }).percent, 25);
  assert.deepEqual(progressView({}), {
    phase: undefined,
    done: undefined,
    total: undefined,
    failed: undefined,
    bytesDone: undefined,
    bytesTotal: undefined,
    etaSeconds: undefined,
  });
});

Deno.test("renderBar fills its inner width by the percentage", () => {
  assert.equal(renderBar(0, 12), "[----------]");
  assert.equal(renderBar(50, 12), "[#####-----]");
  assert.equal(renderBar(100, 12), "[##########]");
  assert.equal(renderBar(250, 6), "[####]");
});

Deno.test("progressLine draws a bar only on a terminal wide enough", () => {
  const job = { ...today, paused: true, progress: { ...today.progress, total: 240 } };
  const line = progressLine(job, 100);
  assert.match(line, /^maintenance:3 running paused \(copy\) \[#+-+\] 50%, 120\/240 objects/);
  assert.ok(line.length <= 100, line);
  assert.equal(
    progressLine(job),
    "maintenance:3 running paused (copy) 50%, 120/240 objects, 5.00 MiB",
  );
  assert.ok(progressLine(job, 40).length < 40);
  assert.doesNotMatch(progressLine(job, 40), /\[/);
});
