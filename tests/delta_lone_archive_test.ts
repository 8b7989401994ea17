/**
 * A lone archive (one per folder under `deltaspace: parent`, or one version of an artifact) costs
 * no more than itself: its folder's baseline keeps the archive's own bytes and the object is an
 * empty delta against it (docs/DELTA.md "Archives: deltas of the token form"). Token-form
 * baselines were larger than the archive (0.83-0.95x of raw with storage compression). A second
 * version in the same folder still becomes a small token-form delta, and all read back exactly.
 */
import assert from "node:assert/strict";
import { gzipSync } from "node:zlib";
import { zipSync } from "fflate";
import { archivesConverted, sha256Hex, storedFiles } from "./helpers/delta.ts";
import { tar } from "./helpers/tar.ts";
import { objectsOnLocalDisk, signedFetch, startSvc, type SvcProcess } from "./helpers/svc.ts";

const BUCKET = "lone";
const utf8 = new TextEncoder();

function tree(version: number): { name: string; data: Uint8Array }[] {
  let seed = 5;
  const next = () => (seed = (seed * 1103515245 + 12345) % 2147483648);
  return Array.from({ length: 24 }, (_, file) => {
    const lines: string[] = [];
    for (let line = 0; line < 300; line++) {
      const n = next();
      lines.push(`export const k${n % 9973} = ${(n >> 5) % 1000}; // ${file}`);
      if (file % 5 === 0 && line % 89 === 0) lines.push(`// version ${version}`);
    }
    return { name: `src/m${file}.js`, data: utf8.encode(lines.join("\n")) };
  });
}
const tgzOf = (v: number): Uint8Array<ArrayBuffer> =>
  new Uint8Array(gzipSync(tar(tree(v)), { level: 9 }));
const zipOf = (v: number) =>
  zipSync(Object.fromEntries(tree(v).map((m) => [m.name, [m.data, { mtime: 1e12 }]])), {
    level: 6,
  }) as Uint8Array<ArrayBuffer>;

async function start(dataDir: string): Promise<SvcProcess> {
  const dir = await Deno.makeTempDir({ prefix: "svc-lone-config-" });
  await Deno.writeTextFile(
    `${dir}/svc.yaml`,
    `storage:\n  buckets:\n    ${BUCKET}: { deltaspace: parent }\n`,
  );
  const svc = await startSvc({
    dataDir,
    args: ["--config", `${dir}/svc.yaml`],
    env: { SVC_REBUILT_CACHE_MB: "0" },
  });
  const res = await signedFetch(`${svc.url}/${BUCKET}`, { method: "PUT" });
  assert.ok(res.status === 200 || res.status === 409, await res.text());
  return svc;
}

async function put(svc: SvcProcess, key: string, body: Uint8Array<ArrayBuffer>) {
  const res = await signedFetch(`${svc.url}/${BUCKET}/${key}`, { method: "PUT", body });
  assert.equal(res.status, 200, `PUT ${key}: ${await res.text()}`);
  await archivesConverted(svc);
}

async function readsBack(svc: SvcProcess, key: string, body: Uint8Array) {
  const res = await signedFetch(`${svc.url}/${BUCKET}/${key}`);
  const got = new Uint8Array(await res.arrayBuffer());
  assert.equal(res.status, 200, `GET ${key}: ${new TextDecoder().decode(got)}`);
  assert.equal(sha256Hex(got), sha256Hex(body), `GET ${key}: wrong bytes`);
}

/** The reference cache's hit and miss counters (`/_/metrics`). */
async function cacheCounts(svc: SvcProcess): Promise<{ hits: number; misses: number }> {
  const text = await (await fetch(`${svc.url}/_/metrics`)).text();
  const value = (name: string) => Number(text.match(new RegExp(`^${name} (\\S+)$`, "m"))?.[1] ?? 0);
  return { hits: value("svc_cache_hits_total"), misses: value("svc_cache_misses_total") };
}

/** Bytes on disk of the files under `folder` (baseline and deltas; metadata is in xattrs). */
function storedBytes(dataDir: string, folder: string): number {
  return storedFiles(dataDir, BUCKET)
    .filter((f) => f.name.startsWith(folder))
    .reduce((n, f) => n + f.size, 0);
}

Deno.test({
  name: "lone archive: a parent folder's only archive stores no more than its own bytes",
  ignore: !objectsOnLocalDisk,
  async fn() {
    const dataDir = await Deno.makeTempDir({ prefix: "svc-lone-archive-" });
    let svc = await start(dataDir);
    try {
      const lone = {
        "r/1.0/app.tgz": tgzOf(0),
        "r/1.1/app.tgz": tgzOf(1),
        "z/1.0/app.zip": zipOf(0),
      };
      for (const [key, body] of Object.entries(lone)) await put(svc, key, body);
      for (const [key, body] of Object.entries(lone)) {
        const folder = key.slice(0, key.lastIndexOf("/") + 1);
        const stored = storedBytes(dataDir, folder);
        assert.ok(stored <= body.length, `${key}: ${stored} bytes stored for ${body.length}`);
        const files = storedFiles(dataDir, BUCKET).filter((f) => f.name.startsWith(folder));
        const baseline = files.find((f) => f.name.endsWith("reference.bin"))!;
        assert.equal(baseline.meta?.baselineForm, "archive-tokens-1");
        assert.equal(baseline.meta?.sha256, sha256Hex(body), "the archive's own bytes");
        const delta = files.find((f) => f.name.endsWith(".delta"))!;
        assert.equal(delta.meta?.codec, "identity");
        assert.equal(delta.size, 0);
      }
      // A second version in a folder encodes against the derived token form: a small delta. Its
      // PUT finds the form in the reference cache (seeded by the first PUT, not derived again).
      const second = tgzOf(2);
      const before = await cacheCounts(svc);
      await put(svc, "r/1.0/app-next.tgz", second);
      const after = await cacheCounts(svc);
      assert.deepEqual([after.hits - before.hits, after.misses - before.misses], [1, 0]);
      const next = storedFiles(dataDir, BUCKET).find((f) => f.name === "r/1.0/app-next.tgz.delta");
      assert.ok(next, "stored as a delta");
      assert.equal(next.meta?.transform, "archive-tokens-1");
      assert.ok(next.size < second.length / 10, `delta of ${next.size} for ${second.length}`);

      // Restarted: nothing cached. A lone archive is its baseline's own bytes: read as they are
      // (one baseline fetched), no token form derived and rebuilt; the second version derives it.
      await svc.stop();
      svc = await start(dataDir);
      const cold = await cacheCounts(svc);
      for (const [key, body] of Object.entries(lone)) await readsBack(svc, key, body);
      const read = await cacheCounts(svc);
      assert.deepEqual([read.hits - cold.hits, read.misses - cold.misses], [0, 3]);
      await readsBack(svc, "r/1.0/app-next.tgz", second);
      const derived = await cacheCounts(svc);
      assert.deepEqual([derived.hits - read.hits, derived.misses - read.misses], [1, 1]);
      const ranged = await signedFetch(`${svc.url}/${BUCKET}/z/1.0/app.zip`, {
        headers: { range: "bytes=10-5000" },
      });
      assert.equal(ranged.status, 206);
      const part = new Uint8Array(await ranged.arrayBuffer());
      assert.equal(sha256Hex(part), sha256Hex(lone["z/1.0/app.zip"].subarray(10, 5001)));
    } finally {
      await svc.stop();
      await Deno.remove(dataDir, { recursive: true });
    }
  },
});
