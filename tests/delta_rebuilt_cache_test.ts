/**
 * Black-box tests of the rebuilt-object cache (issue 11, warm delta GET): a repeat GET of a delta
 * object streams the verified file kept under `.svc/rebuilt` instead of decoding again, ranges
 * included; an overwrite or delete is never answered from it; it stays within
 * `rebuilt_cache_size_mb` and is emptied at start. The tests tell a cached answer from a rebuilt
 * one by damaging the stored delta on disk after the first GET: only the cache can still answer.
 */
import assert from "node:assert/strict";
import { signedFetch as fetch, type SvcProcess } from "./helpers/svc.ts";
import { ArtifactSeries } from "./helpers/tar.ts";
import { corruptFile, layoutOf, putBytes, sha256Hex, startWithBucket } from "./helpers/delta.ts";

const BUCKET = "rebuilt";

const started = (env: Record<string, string>, dataDir?: string) =>
  startWithBucket(BUCKET, env, dataDir);

const put = (svc: SvcProcess, key: string, body: Uint8Array<ArrayBuffer>) =>
  putBytes(svc, BUCKET, key, body);

async function get(svc: SvcProcess, key: string, headers: Record<string, string> = {}) {
  const res = await fetch(`${svc.url}/${BUCKET}/${key}`, { headers });
  return { res, bytes: new Uint8Array(await res.arrayBuffer()) };
}

/** Bytes held by the rebuilt-object cache directory. */
function rebuiltBytes(dataDir: string): number {
  let total = 0;
  for (const entry of Deno.readDirSync(`${dataDir}/.svc/rebuilt`)) {
    total += Deno.statSync(`${dataDir}/.svc/rebuilt/${entry.name}`).size;
  }
  return total;
}

Deno.test("rebuilt cache: a repeat delta GET streams the verified file, ranges too", async () => {
  await using svc = await started({});
  const series = new ArtifactSeries(4, 64 * 1024);
  const v1 = series.current(), v2 = series.next();
  await put(svc, "app/v1.tar", v1);
  await put(svc, "app/v2.tar", v2);
  assert.deepEqual(layoutOf(svc.dataDir, BUCKET), [
    "app/reference.bin:reference",
    "app/v1.tar.delta:delta",
    "app/v2.tar.delta:delta",
  ]);
  const first = await get(svc, "app/v2.tar");
  assert.equal(first.res.status, 200);
  assert.equal(sha256Hex(first.bytes), sha256Hex(v2));
  assert.ok(rebuiltBytes(svc.dataDir) >= v2.length, "the rebuilt object was not kept");

  // The stored delta is now damaged: rebuilding would fail, the cached verified file does not.
  await corruptFile(`${svc.dataDir}/${BUCKET}/app/v2.tar.delta`, 64);
  const again = await get(svc, "app/v2.tar");
  assert.equal(again.res.status, 200);
  assert.equal(again.res.headers.get("x-svc-cache"), "hit");
  assert.equal(sha256Hex(again.bytes), sha256Hex(v2));
  const ranged = await get(svc, "app/v2.tar", { range: "bytes=1000-70999" });
  assert.equal(ranged.res.status, 206);
  assert.equal(ranged.res.headers.get("content-range"), `bytes 1000-70999/${v2.length}`);
  assert.deepEqual(ranged.bytes, v2.subarray(1000, 71000));
});

Deno.test("rebuilt cache: an overwrite or delete is never answered from the cache", async () => {
  await using svc = await started({});
  const series = new ArtifactSeries(4, 64 * 1024);
  const v1 = series.current(), v2 = series.next(), v3 = series.next();
  await put(svc, "app/v1.tar", v1);
  await put(svc, "app/cur.tar", v2);
  assert.equal(sha256Hex((await get(svc, "app/cur.tar")).bytes), sha256Hex(v2));
  await put(svc, "app/cur.tar", v3); // a new delta under the same key
  const after = await get(svc, "app/cur.tar");
  assert.equal(after.res.status, 200);
  assert.equal(sha256Hex(after.bytes), sha256Hex(v3));
  assert.equal(sha256Hex((await get(svc, "app/cur.tar")).bytes), sha256Hex(v3));
  const del = await fetch(`${svc.url}/${BUCKET}/app/cur.tar`, { method: "DELETE" });
  assert.equal(del.status, 204);
  assert.equal((await get(svc, "app/cur.tar")).res.status, 404);
  // Only v1's file may remain (its PUT left it warm): none of cur.tar's versions.
  const cached = [...Deno.readDirSync(`${svc.dataDir}/.svc/rebuilt`)].map((e) => e.name);
  for (const gone of [v2, v3]) assert.ok(!cached.includes(sha256Hex(gone)), cached.join(","));
  assert.ok(rebuiltBytes(svc.dataDir) <= v1.length, "a replaced object's file stayed cached");
});

Deno.test("rebuilt cache: bounded by rebuilt_cache_size_mb, 0 disables, emptied at start", async () => {
  const series = new ArtifactSeries(4, 96 * 1024); // ~390 KB per version
  const versions = [series.current(), series.next(), series.next(), series.next(), series.next()];
  const dataDir = await Deno.makeTempDir({ prefix: "svc-rebuilt-cache-" });
  let svc = await started({ SVC_REBUILT_CACHE_MB: "1" }, dataDir);
  try {
    for (const [i, body] of versions.entries()) await put(svc, `app/v${i}.tar`, body);
    for (const [i, body] of versions.entries()) {
      const { res, bytes } = await get(svc, `app/v${i}.tar`);
      assert.equal(res.status, 200);
      assert.equal(sha256Hex(bytes), sha256Hex(body));
      assert.ok(rebuiltBytes(dataDir) <= 1024 * 1024, `over budget after v${i}`);
    }
    assert.ok(rebuiltBytes(dataDir) > 0);
    await svc.stop();

    // Restarted with the cache off: the directory was emptied, and reads rebuild every time.
    svc = await started({ SVC_REBUILT_CACHE_MB: "0" }, dataDir);
    assert.equal(rebuiltBytes(dataDir), 0);
    const first = await get(svc, "app/v4.tar");
    assert.equal(sha256Hex(first.bytes), sha256Hex(versions[4]));
    assert.equal(rebuiltBytes(dataDir), 0);
    await corruptFile(`${dataDir}/${BUCKET}/app/v4.tar.delta`, 64);
    const { res } = await get(svc, "app/v4.tar");
    assert.equal(res.status, 500, "a damaged delta must fail when nothing is cached");
  } finally {
    await svc.stop();
    await Deno.remove(dataDir, { recursive: true });
  }
});
