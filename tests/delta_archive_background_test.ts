/**
 * Black-box tests of background archive conversion (`archive_deltas: background`, the default;
 * docs/DELTA.md "Archives converted in the background"): a PUT stores an archive as it came and
 * answers; the same write becomes an archive delta soon after, with its ETag, Last-Modified, size
 * and bytes unchanged; an overwrite or a delete that comes during a conversion always wins; a
 * kill -9 with conversions waiting loses none of them. The data directory shows what is stored.
 */
import assert from "node:assert/strict";
import { gzipSync } from "node:zlib";
import { zipSync } from "fflate";
import {
  DeleteObjectCommand,
  GetObjectCommand,
  HeadObjectCommand,
  PutObjectCommand,
  type S3Client,
} from "@aws-sdk/client-s3";
import { bytesOf, objectsOnLocalDisk, signedFetch, startSvc } from "./helpers/svc.ts";
import { archivesConverted, sha256Hex, storedFiles } from "./helpers/delta.ts";
import { tar } from "./helpers/tar.ts";
import { AdminClient } from "./helpers/admin.ts";

const BUCKET = "artifacts";
const ignore = !objectsOnLocalDisk;
const utf8 = new TextEncoder();

/** Source-like members; `files` of them, a few lines changed per version. */
function tree(version: number, files = 30) {
  let seed = 11;
  const next = () => (seed = (seed * 1103515245 + 12345) % 2147483648);
  return Array.from({ length: files }, (_, file) => {
    const lines: string[] = [];
    for (let line = 0; line < 600; line++) {
      const n = next();
      lines.push(`let v${n % 9973} = compute(${(n >> 4) % 1000}, "${(n >> 9) % 777}");`);
      if (file % 7 === 0 && line % 101 === 0) lines.push(`// version ${version}`);
    }
    return { name: `pkg/lib/file-${file}.js`, data: utf8.encode(lines.join("\n")) };
  });
}

const tgzOf = (v: number, files?: number) =>
  new Uint8Array(gzipSync(tar(tree(v, files)), { level: 9 }));
const zipOf = (v: number) =>
  new Uint8Array(
    zipSync(Object.fromEntries(tree(v).map((m) => [m.name, [m.data, { mtime: 1e12 }]])), {
      level: 6,
    }),
  );

async function put(s3: S3Client, key: string, body: Uint8Array) {
  await s3.send(new PutObjectCommand({ Bucket: BUCKET, Key: key, Body: body }));
}

async function head(s3: S3Client, key: string) {
  const got = await s3.send(new HeadObjectCommand({ Bucket: BUCKET, Key: key }));
  return { etag: got.ETag, lastModified: got.LastModified?.getTime(), size: got.ContentLength };
}

async function readBack(s3: S3Client, key: string): Promise<string> {
  const got = await s3.send(new GetObjectCommand({ Bucket: BUCKET, Key: key }));
  return sha256Hex(await bytesOf(got.Body));
}

async function createBucket(url: string) {
  assert.equal((await signedFetch(`${url}/${BUCKET}`, { method: "PUT" })).status, 200);
}

Deno.test({
  name: "archive background: a PUT stores the archive as it came; it becomes a delta unchanged",
  ignore,
  async fn() {
    await using svc = await startSvc({ env: { SVC_DEBUG_HEADERS: "true" } });
    const s3 = svc.client();
    await createBucket(svc.url);
    const bodies: Record<string, Uint8Array<ArrayBuffer>> = {};
    for (const v of [0, 1, 2]) {
      bodies[`rel/1.${v}/app.tgz`] = tgzOf(v);
      bodies[`rel/1.${v}/app.zip`] = zipOf(v);
    }
    const before: Record<string, Awaited<ReturnType<typeof head>>> = {};
    for (const [key, body] of Object.entries(bodies)) {
      const res = await signedFetch(`${svc.url}/${BUCKET}/${key}`, { method: "PUT", body });
      assert.equal(res.status, 200, await res.text());
      // Answered before any conversion: the archive is stored as it came.
      assert.equal(res.headers.get("x-amz-storage-type"), "passthrough");
      before[key] = await head(s3, key);
      assert.equal(await readBack(s3, key), sha256Hex(body), `${key} reads back at once`);
    }
    await archivesConverted(svc);
    const files = storedFiles(svc.dataDir, BUCKET);
    for (const [key, body] of Object.entries(bodies)) {
      const delta = files.find((f) => f.name === `${key}.delta`);
      assert.ok(delta, `${key} is stored as a delta`);
      assert.equal(delta.meta?.transform === "archive-tokens-1" || delta.size === 0, true);
      assert.ok(!files.some((f) => f.name === key), `${key}: the passthrough copy went`);
      assert.deepEqual(await head(s3, key), before[key], `${key}: ETag, Last-Modified, size kept`);
      assert.equal(await readBack(s3, key), sha256Hex(body), `${key} reads back`);
      if (!key.startsWith("rel/1.0/")) {
        assert.ok(delta.size < body.length / 10, `${key}: delta ${delta.size} of ${body.length}`);
      }
    }
    // The usage counters follow the conversions (stored bytes fell; objects and logical bytes not).
    const admin = new AdminClient(svc.url);
    await admin.login();
    const stats = await admin.json("GET", `/_/stats?bucket=${BUCKET}`) as Record<string, number>;
    const logical = Object.values(bodies).reduce((n, b) => n + b.length, 0);
    assert.equal(stats.total_objects, 6);
    assert.equal(stats.total_original_size, logical);
    const onDisk = storedFiles(svc.dataDir, BUCKET).reduce((n, f) => n + f.size, 0);
    assert.ok(stats.total_stored_size < logical / 2, JSON.stringify(stats));
    assert.ok(Math.abs(stats.total_stored_size - onDisk) < onDisk / 10, `${onDisk} on disk`);
    const scrape = await (await fetch(`${svc.url}/_/metrics`)).text();
    const converted = scrape.match(/^svc_archive_conversions_total\{outcome="converted"\} (\d+)/m);
    assert.equal(Number(converted?.[1]), 6, "six conversions counted");
  },
});

Deno.test({
  name: "archive background: an overwrite or a delete during a conversion wins",
  ignore,
  async fn() {
    await using svc = await startSvc({});
    const s3 = svc.client();
    await createBucket(svc.url);
    await put(s3, "rel/1.0/big.tgz", tgzOf(0, 200));
    await archivesConverted(svc);
    for (let round = 1; round <= 3; round++) {
      // The first write's conversion is running (or queued) when the second comes.
      const overwritten = `rel/1.${round}/big.tgz`;
      const deleted = `rel/2.${round}/big.tgz`;
      await put(s3, overwritten, tgzOf(round, 200));
      await put(s3, deleted, tgzOf(round + 10, 200));
      const newer = round % 2 === 0 ? utf8.encode("not an archive any more") : tgzOf(round + 20);
      await put(s3, overwritten, newer);
      await s3.send(new DeleteObjectCommand({ Bucket: BUCKET, Key: deleted }));
      await archivesConverted(svc);
      assert.equal(await readBack(s3, overwritten), sha256Hex(newer), `round ${round}: newer`);
      const gone = await s3.send(new HeadObjectCommand({ Bucket: BUCKET, Key: deleted })).then(
        () => "served",
        (err) => err.name,
      );
      assert.equal(gone, "NotFound", `round ${round}: the deleted key stays deleted`);
      const names = storedFiles(svc.dataDir, BUCKET).map((f) => f.name);
      assert.ok(!names.some((n) => n.startsWith(deleted)), `round ${round}: ${names.join(" ")}`);
      assert.equal(names.filter((n) => n.startsWith(overwritten)).length, 1, names.join(" "));
    }
    // The deletes came while conversions were queued: theirs found nothing to convert.
    const scrape = await (await fetch(`${svc.url}/_/metrics`)).text();
    const superseded = scrape.match(
      /^svc_archive_conversions_total\{outcome="superseded"\} (\d+)/m,
    );
    assert.ok(Number(superseded?.[1]) >= 1, "conversions of writes deleted meanwhile");
  },
});

Deno.test({
  name: "archive background: kill -9 with conversions waiting resumes them after the restart",
  ignore,
  async fn() {
    const dataDir = await Deno.makeTempDir({ prefix: "svc-background-" });
    const bodies: Record<string, Uint8Array> = {};
    for (const v of [0, 1, 2, 3]) bodies[`dist/pkg-1.${v}.0.tgz`] = tgzOf(v, 400);
    try {
      const svc = await startSvc({ dataDir });
      const s3 = svc.client();
      await createBucket(svc.url);
      for (const [key, body] of Object.entries(bodies)) await put(s3, key, body);
      svc.kill("SIGKILL"); // the last PUT's conversion cannot have ended: it takes seconds
      await svc.stop().catch(() => {});
      s3.destroy();
      const waiting = [];
      for await (const entry of Deno.readDir(`${dataDir}/.svc/archive-backlog`)) {
        if (entry.name.endsWith(".json")) waiting.push(entry.name);
      }
      assert.ok(waiting.length >= 1, "conversions were waiting at the kill");

      await using again = await startSvc({ dataDir });
      await archivesConverted(again);
      const files = storedFiles(dataDir, BUCKET);
      const client = again.client();
      for (const [key, body] of Object.entries(bodies)) {
        assert.ok(files.some((f) => f.name === `${key}.delta`), `${key} converted`);
        assert.ok(!files.some((f) => f.name === key), `${key}: no passthrough copy left`);
        assert.equal(await readBack(client, key), sha256Hex(body), `${key} reads back`);
      }
    } finally {
      await Deno.remove(dataDir, { recursive: true });
    }
  },
});

Deno.test({
  name: "archive background: a bucket with archive_deltas: inline converts during the PUT",
  ignore,
  async fn() {
    const dir = await Deno.makeTempDir({ prefix: "svc-inline-config-" });
    try {
      await Deno.writeTextFile(
        `${dir}/svc.yaml`,
        `storage:\n  buckets:\n    ${BUCKET}: { archive_deltas: inline }\n`,
      );
      await using svc = await startSvc({
        args: ["--config", `${dir}/svc.yaml`],
        env: { SVC_DEBUG_HEADERS: "true" },
      });
      await createBucket(svc.url);
      const kinds: string[] = [];
      for (const v of [0, 1]) {
        const res = await signedFetch(`${svc.url}/${BUCKET}/rel/1.${v}/app.tgz`, {
          method: "PUT",
          body: tgzOf(v),
        });
        assert.equal(res.status, 200, await res.text());
        kinds.push(res.headers.get("x-amz-storage-type") ?? "");
      }
      assert.deepEqual(kinds, ["reference", "delta"], "stored in their final form by the PUT");
      const scrape = await (await fetch(`${svc.url}/_/metrics`)).text();
      assert.match(scrape, /^svc_archive_backlog 0$/m);
      assert.doesNotMatch(scrape, /^svc_archive_conversions_total\{/m, "no background conversion");
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
});
