/**
 * The delta store's visible traces: `x-amz-storage-type` / `x-svc-cache` with
 * SVC_DEBUG_HEADERS=true (and nothing without it), and the delta series of /_/metrics.
 */
import assert from "node:assert/strict";
import { randomBytes, signedFetch as fetch, startSvc } from "./helpers/svc.ts";

function metric(text: string, series: string): number {
  const line = text.split("\n").find((l) => l.startsWith(series + " "));
  return line ? Number(line.slice(series.length + 1)) : NaN;
}

Deno.test("delta debug headers and metrics: reference, delta, passthrough; cache miss then hit", async () => {
  const dataDir = await Deno.makeTempDir({ prefix: "svc-debug-" });
  await using svc = await startSvc({ dataDir, env: { SVC_DEBUG_HEADERS: "true" } });
  assert.equal((await fetch(`${svc.url}/dbg`, { method: "PUT" })).status, 200);
  const v1 = randomBytes(1 << 20);
  const v2 = v1.slice();
  v2.set(randomBytes(2048), 4096);
  const put = async (key: string, body: Uint8Array<ArrayBuffer>) => {
    const response = await fetch(`${svc.url}/dbg/${key}`, { method: "PUT", body });
    assert.equal(response.status, 200, await response.text());
    return response.headers.get("x-amz-storage-type");
  };
  assert.equal(await put("app/v1.zip", v1), "reference");
  assert.equal(await put("app/v2.zip", v2), "delta");
  assert.equal(await put("app/v3.zip", randomBytes(1 << 20)), "passthrough");
  assert.equal(await put("app/notes.txt", v1), "passthrough");

  const first = await fetch(`${svc.url}/dbg/app/v2.zip`);
  assert.deepEqual(new Uint8Array(await first.arrayBuffer()), v2);
  assert.equal(first.headers.get("x-amz-storage-type"), "delta");
  assert.equal(first.headers.get("x-svc-cache"), "hit", "the PUT left the baseline cached");
  const head = await fetch(`${svc.url}/dbg/app/v3.zip`, { method: "HEAD" });
  assert.equal(head.headers.get("x-amz-storage-type"), "passthrough");
  assert.equal(head.headers.get("x-svc-cache"), null);

  const text = await (await fetch(`${svc.url}/_/metrics`)).text();
  for (
    const [labels, count] of [
      ['decision="reference",reason="new_baseline"', 1],
      ['decision="delta",reason="ratio_met"', 1],
      ['decision="passthrough",reason="ratio_exceeded"', 1],
      ['decision="passthrough",reason="not_eligible"', 1],
    ] as const
  ) {
    assert.equal(metric(text, `svc_delta_decisions_total{${labels}}`), count);
  }
  assert.ok(metric(text, "svc_delta_bytes_saved_total") > 1_000_000);
  // v1 against itself (the baseline), v2, and v3 until it passed the ratio.
  assert.equal(metric(text, "svc_delta_encode_duration_seconds_count"), 3);
  // No decode: the PUT of v2 left its verified bytes in the rebuilt cache.
  assert.equal(metric(text, "svc_delta_decode_duration_seconds_count"), 0);
  assert.ok(metric(text, "svc_cache_size_bytes") >= 1 << 20);
  assert.ok(metric(text, "svc_codec_semaphore_available") >= 16);

  // A restarted server starts with an empty reference cache: miss, then hit.
  await svc.stop();
  await using again = await startSvc({ dataDir: svc.dataDir, env: { SVC_DEBUG_HEADERS: "true" } });
  for (const expected of ["miss", "hit"]) {
    const response = await fetch(`${again.url}/dbg/app/v2.zip`);
    assert.deepEqual(new Uint8Array(await response.arrayBuffer()), v2);
    assert.equal(response.headers.get("x-svc-cache"), expected);
  }
  await Deno.remove(svc.dataDir, { recursive: true });
});

Deno.test("delta debug headers are absent unless SVC_DEBUG_HEADERS is on", async () => {
  await using svc = await startSvc();
  assert.equal((await fetch(`${svc.url}/quiet`, { method: "PUT" })).status, 200);
  const put = await fetch(`${svc.url}/quiet/a/v1.zip`, { method: "PUT", body: randomBytes(1000) });
  assert.equal(put.status, 200);
  assert.equal(put.headers.get("x-amz-storage-type"), null);
  const get = await fetch(`${svc.url}/quiet/a/v1.zip`);
  await get.arrayBuffer();
  assert.equal(get.headers.get("x-amz-storage-type"), null);
  assert.equal(get.headers.get("x-svc-cache"), null);
});
