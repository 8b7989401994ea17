import assert from "node:assert/strict";
import {
  byteSplits,
  cellText,
  countersText,
  formatAgo,
  formatBytes,
  formatCount,
  formatDuration,
  formatPercent,
  formatRate,
  statsEntries,
  timeRange,
  valueRange,
} from "./format.ts";

Deno.test("formatBytes: binary units, three significant digits, a dash for nothing", () => {
  assert.equal(formatBytes(0), "0 B");
  assert.equal(formatBytes(1023), "1023 B");
  assert.equal(formatBytes(1024), "1.0 KiB");
  assert.equal(formatBytes(1536), "1.5 KiB");
  assert.equal(formatBytes(512 * 1024), "512 KiB");
  assert.equal(formatBytes(20 * 1024 * 1024), "20.0 MiB");
  assert.equal(formatBytes(3.25 * 1024 ** 3), "3.3 GiB");
  assert.equal(formatBytes(-2048), "-2.0 KiB", "a deltaspace can cost more than it saves");
  assert.equal(formatBytes(null), "–");
  assert.equal(formatBytes(Number.NaN), "–");
});

Deno.test("formatRate, formatCount, formatPercent", () => {
  assert.equal(formatRate(2 * 1024 * 1024), "2.0 MiB/s");
  assert.equal(formatRate(null), "–");
  assert.equal(formatCount(1234567), "1,234,567");
  assert.equal(formatCount(2.5), "2.5");
  assert.equal(formatPercent(42.46), "42.5 %");
  assert.equal(formatPercent(100), "100 %");
  assert.equal(formatPercent(undefined), "–");
});

Deno.test("formatDuration: seconds, minutes, hours, days", () => {
  assert.equal(formatDuration(0), "0 s");
  assert.equal(formatDuration(45.4), "45 s");
  assert.equal(formatDuration(200), "3 min 20 s");
  assert.equal(formatDuration(2 * 3600 + 5 * 60), "2 h 05 min");
  assert.equal(formatDuration(3 * 86400 + 4 * 3600 + 59), "3 d 4 h");
  assert.equal(formatDuration(null), "–");
  assert.equal(formatDuration(-1), "–");
});

Deno.test("cellText: byte fields in binary units, other numbers as they are", () => {
  assert.equal(cellText("logical_bytes", 2048), "2.0 KiB");
  assert.equal(cellText("bytes_done", 5 * 1024 * 1024), "5.0 MiB");
  assert.equal(cellText("total_stored_size", 1024), "1.0 KiB");
  assert.equal(cellText("rate_bytes_per_sec", 1024), "1.0 KiB/s");
  assert.equal(cellText("savings_percentage", 12.345), "12.3 %");
  assert.equal(cellText("object_count", 2048), "2048");
  assert.equal(cellText("bytes_total", null), "–");
  assert.equal(cellText("scope", { bucket: "b" }), '{"bucket":"b"}');
});

Deno.test("countersText: a run's counters in words, nulls left out", () => {
  assert.equal(
    countersText({ objects_done: 60, bytes_done: 245760, objects_total: null, errors: 0 }),
    "objects_done 60 · bytes_done 240 KiB · errors 0",
  );
  assert.equal(countersText({}), "–");
  assert.equal(countersText(null), "–");
});

Deno.test("statsEntries: /_/stats as labelled readable rows, buckets left out", () => {
  const rows = statsEntries({
    total_objects: 12345,
    total_original_size: 10 * 1024 * 1024,
    total_stored_size: 4 * 1024 * 1024,
    savings_percentage: 60,
    buckets: { a: {} },
    instances: 2,
  });
  assert.deepEqual(rows, [
    { label: "Objects", text: "12,345" },
    { label: "Logical size (what clients stored)", text: "10.0 MiB" },
    { label: "Stored size (on the backends)", text: "4.0 MiB" },
    { label: "Space saved", text: "60 %" },
    { label: "instances", text: "2" },
    { label: "Bytes saved", text: "6.0 MiB" },
  ]);
});

Deno.test("timeRange: from the samples' seconds; one sample spans a minute, not years", () => {
  const now = Date.UTC(2026, 10, 28, 20, 0, 0) / 1000;
  // What uPlot proposes for one sample (min + 86400 / 1e-3) must not matter: only the data does.
  const [lo, hi] = timeRange([now]);
  assert.equal(hi - lo, 60);
  assert.equal(new Date(lo * 1000).getUTCFullYear(), 2026);
  assert.equal(new Date(hi * 1000).getUTCFullYear(), 2026);
  assert.deepEqual(timeRange([now - 1, now]), [now - 60, now]);
  assert.deepEqual(timeRange([now - 600, now - 5, now]), [now - 600, now]);
  const [emptyLo, emptyHi] = timeRange([]);
  assert.equal(emptyHi - emptyLo, 60);
  assert.ok(Math.abs(emptyHi - Date.now() / 1000) < 5, "an empty chart shows the last minute");
  assert.deepEqual(valueRange(0), [0, 1]);
  assert.equal(valueRange(100)[0], 0);
  assert.equal(valueRange(100)[1].toFixed(1), "110.0");
});

Deno.test("byteSplits: round binary steps from 0", () => {
  const MiB = 1024 * 1024;
  assert.deepEqual(byteSplits(3 * 1000 * 1000), [0, MiB, 2 * MiB]);
  assert.deepEqual(byteSplits(10 * MiB).map(formatBytes), [
    "0 B",
    "5.0 MiB",
    "10.0 MiB",
  ]);
  assert.deepEqual(byteSplits(900), [0, 500]);
  assert.deepEqual(byteSplits(100 * 1024).map(formatBytes), [
    "0 B",
    "50.0 KiB",
    "100 KiB",
  ]);
  assert.deepEqual(byteSplits(0), [0]);
  for (const max of [1, 1000, 5e6, 7e9, 3e12]) {
    const ticks = byteSplits(max);
    assert.ok(ticks.length >= 2 && ticks.length <= 11, `${max}: ${ticks.length} ticks`);
    assert.ok(ticks.at(-1)! <= max);
  }
});

Deno.test("formatAgo: seconds since, never negative, a dash when unknown", () => {
  const now = Date.parse("2026-11-29T00:01:00Z");
  assert.equal(formatAgo("2026-11-29T00:00:55Z", now), "5 s ago");
  assert.equal(formatAgo(now - 125_000, now), "2 min 05 s ago");
  assert.equal(formatAgo("2026-11-29T00:01:02Z", now), "0 s ago");
  assert.equal(formatAgo(null, now), "–");
  assert.equal(formatAgo("garbage", now), "–");
});
