/**
 * The integrity scan across a restart and live: a slow (paced) scan interrupted by a server stop
 * resumes from its persisted cursor with its counters, the SSE stream delivers its progress, and
 * a stopped scan stays stopped across a restart.
 */
import assert from "node:assert/strict";
import { PutObjectCommand } from "@aws-sdk/client-s3";
import { AdminClient } from "./helpers/admin.ts";
import { type ScanStatus, waitForScan } from "./helpers/diagnostics.ts";
import { objectsOnLocalDisk, randomBytes, signedFetch, startSvc } from "./helpers/svc.ts";

const BUCKET = "slow";
const OBJECTS = 12;
const SIZE = 40_000;
/** About 0.5 s per object: the scan takes ~6 s, long enough to interrupt. */
const RATE = 80_000;

/** Reads SSE `progress` events until `count` arrived; returns their data. */
async function progressEvents(admin: AdminClient, count: number): Promise<ScanStatus[]> {
  const response = await admin.request("GET", "/diagnostics/scan/stream?interval_ms=200");
  assert.equal(response.status, 200);
  assert.match(response.headers.get("content-type") ?? "", /text\/event-stream/);
  const events: ScanStatus[] = [];
  const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader();
  let buffered = "";
  try {
    while (events.length < count) {
      const { value, done } = await reader.read();
      if (done) break;
      buffered += value;
      let end;
      while ((end = buffered.indexOf("\n\n")) >= 0) {
        const block = buffered.slice(0, end);
        buffered = buffered.slice(end + 2);
        if (!/^event: progress$/m.test(block)) continue;
        events.push(JSON.parse(block.match(/^data: (.*)$/m)![1]));
      }
    }
  } finally {
    await reader.cancel();
  }
  return events;
}

Deno.test({
  name: "diagnostics: a paced scan streams progress and resumes after a restart",
  // A restarted server keeps its objects only on local disk (SVC_TEST_BACKEND starts a new one).
  ignore: !objectsOnLocalDisk,
  fn: async (t) => {
    const dataDir = await Deno.makeTempDir({ prefix: "svc-test-" });
    try {
      const first = await startSvc({ dataDir });
      let stoppedAt: ScanStatus;
      try {
        assert.equal((await signedFetch(`${first.url}/${BUCKET}`, { method: "PUT" })).status, 200);
        const s3 = first.client();
        for (let i = 0; i < OBJECTS; i++) {
          const key = `data/${String(i).padStart(2, "0")}.bin`;
          await s3.send(
            new PutObjectCommand({ Bucket: BUCKET, Key: key, Body: randomBytes(SIZE) }),
          );
        }
        const admin = new AdminClient(first.url);
        await admin.login();
        await admin.json(
          "POST",
          "/diagnostics/scan/start",
          { bucket: BUCKET, bytes_per_sec: RATE },
          202,
        );

        await t.step("the SSE stream delivers progress as the scan goes", async () => {
          const events = await progressEvents(admin, 3);
          assert.equal(events.length, 3);
          assert.ok(events.every((e) => e.state === "running"));
          const checked = events.map((e) => e.totals.objects_checked);
          assert.ok(checked[2] > checked[0], `progress moves: ${checked}`);
        });

        stoppedAt = await waitForScan(admin, (s) => s.totals.objects_checked >= 5);
        assert.ok(stoppedAt.totals.objects_checked < OBJECTS, "the pacing keeps the scan slow");
        // A live stream left open (a Diagnostics page) ends when svc stops, not hold it up.
        const open = await admin.request("GET", "/diagnostics/scan/stream");
        const reader = open.body!.getReader();
        await reader.read();
        const started = Date.now();
        await first.stop();
        assert.ok(Date.now() - started < 10_000, `stopped in ${Date.now() - started} ms`);
        for (;;) if ((await reader.read()).done) break;
      } finally {
        await first.stop();
      }
      // What the stop left on disk: the cursor and the counters that go with it.
      const saved = JSON.parse(await Deno.readTextFile(`${dataDir}/.svc/scrub-state.json`));
      assert.equal(saved.state, "running");
      assert.equal(saved.cursor.bucket, BUCKET);
      assert.match(saved.cursor.after, /^data\/\d\d\.bin$/);
      const savedChecked = saved.per_bucket[BUCKET].objects_checked;
      assert.ok(savedChecked >= 4, `saved ${savedChecked}`);

      await using second = await startSvc({ dataDir });
      const admin = new AdminClient(second.url);
      await admin.login();

      await t.step("the restarted server resumes from the cursor", async () => {
        const resumed = await admin.json<ScanStatus>("GET", "/diagnostics/scan/status");
        assert.equal(resumed.resumes, 1);
        assert.ok(resumed.totals.objects_checked >= savedChecked);
        const done = await waitForScan(admin, (s) => s.state === "finished", 60_000);
        // Each object once: the ones before the cursor were not checked again.
        assert.equal(done.totals.objects_checked, OBJECTS);
        assert.equal(done.totals.objects_ok, OBJECTS);
        assert.equal(done.totals.bytes_read, OBJECTS * SIZE);
        assert.deepEqual(done.findings, []);
      });

      await t.step("a stopped scan stays stopped across a restart", async () => {
        await admin.json("POST", "/diagnostics/scan/start", { bytes_per_sec: 1000 }, 202);
        const again = await admin.json<{ started: boolean }>(
          "POST",
          "/diagnostics/scan/start",
          {},
          202,
        );
        assert.equal(again.started, false, "a second start joins the running scan");
        const stopped = await admin.json<{ stopped: boolean; scan: ScanStatus }>(
          "POST",
          "/diagnostics/scan/stop",
        );
        assert.equal(stopped.stopped, true);
        assert.equal(stopped.scan.state, "stopped");
        const audit = await admin.json<{ entries: { event: string }[] }>("GET", "/audit?limit=20");
        assert.ok(audit.entries.some((e) => e.event === "scrub_stopped"));
      });
      await second.stop();
      await using third = await startSvc({ dataDir });
      const admin3 = new AdminClient(third.url);
      await admin3.login();
      const status = await admin3.json<ScanStatus>("GET", "/diagnostics/scan/status");
      assert.equal(status.state, "stopped");
      assert.equal(status.running, false);
    } finally {
      await Deno.remove(dataDir, { recursive: true }).catch(() => {});
    }
  },
});
