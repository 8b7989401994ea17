import assert from "node:assert/strict";
import { etaSeconds, percentOf, ProgressMeter, RATE_WINDOW_MS } from "./progress-meter.ts";

Deno.test("progress meter: rates over the samples, null until half a second passed", () => {
  const meter = new ProgressMeter();
  meter.record({ at: 1000, objects: 0, bytes: 0 });
  assert.equal(meter.rates(1000), null, "one sample: no rate");
  meter.record({ at: 1200, objects: 4, bytes: 4096 });
  assert.equal(meter.rates(1200), null, "200 ms is noise");
  meter.record({ at: 3000, objects: 10, bytes: 20_480 });
  // 10 objects and 20 KiB in 2 s.
  assert.deepEqual(meter.rates(3000), { objects_per_sec: 5, bytes_per_sec: 10_240 });
});

Deno.test("progress meter: a job that stalls sees its rate fall", () => {
  const meter = new ProgressMeter();
  meter.record({ at: 0, objects: 0, bytes: 0 });
  meter.record({ at: 2000, objects: 20, bytes: 2000 });
  assert.equal(meter.rates(2000)!.objects_per_sec, 10);
  // Nothing moved for 8 more seconds: 20 objects over 10 s.
  assert.equal(meter.rates(10_000)!.objects_per_sec, 2);
});

Deno.test("progress meter: the window forgets a slow start", () => {
  const meter = new ProgressMeter(RATE_WINDOW_MS);
  // 1 object/s for 60 s, then 10 objects/s for 60 s.
  let objects = 0;
  for (let s = 0; s <= 60; s++) meter.record({ at: s * 1000, objects: objects++, bytes: 0 });
  objects--;
  for (let s = 61; s <= 120; s++) {
    objects += 10;
    meter.record({ at: s * 1000, objects, bytes: objects * 100 });
  }
  const rates = meter.rates(120_000)!;
  assert.equal(rates.objects_per_sec, 10, "only the last 30 s count");
  assert.equal(rates.bytes_per_sec, 1000);
});

Deno.test("progress meter: samples closer than 250 ms replace each other (bounded memory)", () => {
  const meter = new ProgressMeter(1000);
  for (let at = 0; at <= 100_000; at += 10) meter.record({ at, objects: at, bytes: at });
  // Still exact: 1 object per ms over the window.
  assert.equal(meter.rates(100_000)!.objects_per_sec, 1000);
  // A sample from the past (a clock step back) is ignored.
  meter.record({ at: 50, objects: 0, bytes: 0 });
  assert.equal(meter.rates(100_000)!.objects_per_sec, 1000);
});

Deno.test("percentOf: one decimal, clamped, null without a total, 100 of nothing", () => {
  assert.equal(percentOf(1, 3), 33.3);
  assert.equal(percentOf(2, 3), 66.6, "rounded down: 100 only when everything is done");
  assert.equal(percentOf(999, 1000), 99.9);
  assert.equal(percentOf(1000, 1000), 100);
  assert.equal(percentOf(1200, 1000), 100);
  assert.equal(percentOf(0, 0), 100);
  assert.equal(percentOf(5, null), null);
  assert.equal(percentOf(5, undefined), null);
});

Deno.test("etaSeconds: remaining over rate, rounded up; null without movement or total", () => {
  assert.equal(etaSeconds(100, 10), 10);
  assert.equal(etaSeconds(101, 10), 11);
  assert.equal(etaSeconds(0, 0), 0, "nothing left: done, whatever the rate");
  assert.equal(etaSeconds(50, 0), null);
  assert.equal(etaSeconds(50, null), null);
  assert.equal(etaSeconds(null, 10), null);
});
