import assert from "node:assert/strict";
import { Pacer } from "./pacer.ts";

Deno.test("pacer: reads at most the rate, after a quarter-second burst", async () => {
  const pacer = new Pacer(() => 1_000_000);
  const started = performance.now();
  const body = ReadableStream.from([new Uint8Array(400_000), new Uint8Array(400_000)]);
  let bytes = 0;
  for await (const chunk of pacer.paced(body)) bytes += chunk.byteLength;
  const ms = performance.now() - started;
  assert.equal(bytes, 800_000);
  // 800 KB at 1 MB/s is 800 ms, less the 250 ms burst.
  assert.ok(ms >= 500, `took ${ms} ms`);
  assert.ok(ms < 3000, `took ${ms} ms`);
});

Deno.test("pacer: 0 is unpaced, and a stop ends the wait", async () => {
  const unpaced = new Pacer(() => 0);
  const started = performance.now();
  await unpaced.take(1e12);
  assert.ok(performance.now() - started < 100);
  const stop = new AbortController();
  const slow = new Pacer(() => 1, stop.signal);
  const waiting = slow.take(1_000_000);
  stop.abort(new Error("stopped"));
  await assert.rejects(waiting, /stopped/);
});
