/**
 * Black-box tests of deltaspace groups (bucket setting `deltaspace`, docs/DELTA.md): with the
 * default `auto`, versions in per-version folders share one baseline under `.dg/<id>/`, reads and
 * listings are unchanged for clients, `.dg/` stays hidden and reserved, and deleting the last
 * version removes the baseline and its markers. Policy changes (parent -> auto -> template) across
 * restarts orphan nothing: deltas written before decode from where their metadata says, old data
 * without the `deltaspace` field included. The data directory is read to prove what is stored.
 */
import assert from "node:assert/strict";
import {
  DeleteObjectCommand,
  GetObjectCommand,
  HeadObjectCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  type S3Client,
} from "@aws-sdk/client-s3";
import { bytesOf, objectsOnLocalDisk, signedFetch as fetch, startSvc } from "./helpers/svc.ts";
import { assertError, md5Hex } from "./helpers/assertions.ts";
import { ArtifactSeries } from "./helpers/tar.ts";
import { sha256Hex, type StoredFile, storedFiles } from "./helpers/delta.ts";
import { getJsonXattr, setJsonXattr } from "../src/native/xattr.ts";

const BUCKET = "artifacts";
const GROUP_BASELINE = /^\.dg\/[0-9a-f]{32}\/reference\.bin$/;
const MARKER = /^\.dg\/[0-9a-f]{32}\/refs\/[0-9a-f]{64}(\.[0-9a-f]{16})?$/; // one per delta write
const ignore = !objectsOnLocalDisk;

async function put(s3: S3Client, key: string, body: Uint8Array) {
  await s3.send(new PutObjectCommand({ Bucket: BUCKET, Key: key, Body: body }));
}

async function assertReadsBack(s3: S3Client, key: string, body: Uint8Array) {
  const got = await s3.send(new GetObjectCommand({ Bucket: BUCKET, Key: key }));
  assert.equal(sha256Hex(await bytesOf(got.Body)), sha256Hex(body), `${key}: body differs`);
  assert.equal(got.ETag, `"${md5Hex(body)}"`);
  const ranged = await s3.send(
    new GetObjectCommand({ Bucket: BUCKET, Key: key, Range: "bytes=1000-70000" }),
  );
  assert.equal(sha256Hex(await bytesOf(ranged.Body)), sha256Hex(body.subarray(1000, 70001)));
  const head = await s3.send(new HeadObjectCommand({ Bucket: BUCKET, Key: key }));
  assert.equal(head.ContentLength, body.length);
}

async function listAll(s3: S3Client, prefix?: string, delimiter?: string) {
  const page = await s3.send(
    new ListObjectsV2Command({ Bucket: BUCKET, Prefix: prefix, Delimiter: delimiter }),
  );
  return {
    objects: (page.Contents ?? []).map((o) => [o.Key!, o.Size!] as const),
    prefixes: (page.CommonPrefixes ?? []).map((p) => p.Prefix!),
  };
}

const names = (files: StoredFile[]) => files.map((f) => f.name);
const baselines = (files: StoredFile[]) =>
  names(files).filter((name) => name.endsWith("reference.bin"));

/** A config file with the bucket's `deltaspace` setting (none: the default, auto). */
async function configWith(dir: string, deltaspace?: string): Promise<string[]> {
  const path = `${dir}/svc-${crypto.randomUUID()}.yaml`;
  const policy = deltaspace === undefined ? "{}" : `{ deltaspace: ${JSON.stringify(deltaspace)} }`;
  await Deno.writeTextFile(path, `storage:\n  buckets:\n    ${BUCKET}: ${policy}\n`);
  return ["--config", path];
}

const ENV = { SVC_CODEC_SLOT_WAIT_SECS: "250", SVC_DEBUG_HEADERS: "true" };

Deno.test({
  name: "deltaspace groups: per-version folders share one baseline under .dg (auto default)",
  ignore,
  async fn() {
    await using svc = await startSvc({ env: ENV });
    const s3 = svc.client();
    const url = (key: string) => `${svc.url}/${BUCKET}/${key}`;
    assert.equal((await fetch(`${svc.url}/${BUCKET}`, { method: "PUT" })).status, 200);
    const series = new ArtifactSeries();
    const versions = [series.current(), series.next(), series.next()];
    const keys = [
      "releases/1.2.3/app.tar",
      "releases/1.2.4/app.tar",
      "releases/v1.3.0-rc.1/app.tar",
    ];
    for (const [i, key] of keys.entries()) {
      const res = await fetch(url(key), { method: "PUT", body: versions[i] });
      assert.equal(res.status, 200);
      assert.equal(res.headers.get("x-svc-deltaspace"), "releases/*/app.tar");
      assert.equal(res.headers.get("x-amz-storage-type"), i === 0 ? "reference" : "delta");
    }
    await put(s3, "releases/1.2.4/notes.txt", new TextEncoder().encode("notes"));

    // One baseline for all three versions, one marker each, small deltas beside the keys.
    const files = storedFiles(svc.dataDir, BUCKET);
    assert.equal(baselines(files).length, 1, names(files).join(" "));
    assert.match(baselines(files)[0], GROUP_BASELINE);
    const folder = baselines(files)[0].slice(0, -"reference.bin".length);
    assert.equal(names(files).filter((n) => MARKER.test(n)).length, 3);
    for (const [i, key] of keys.entries()) {
      const delta = files.find((f) => f.name === `${key}.delta`);
      assert.ok(delta, `${key}.delta stored`);
      assert.equal(delta.meta?.deltaspace, folder);
      assert.equal(delta.meta?.deltaGroup, "releases/*/app.tar");
      assert.equal(delta.meta?.storageReason, i === 0 ? "new_baseline" : "ratio_met");
      if (i > 0) assert.ok(delta.size < versions[i].length / 20, `${key}: ${delta.size} bytes`);
    }
    const notes = files.find((f) => f.name === "releases/1.2.4/notes.txt");
    assert.equal(notes?.meta?.storageReason, "not_eligible");

    // The newest version reads warm: its PUT renamed the verified spool into the rebuilt cache.
    const newest = `${svc.dataDir}/.svc/rebuilt/${sha256Hex(versions[2])}`;
    for (let i = 0; i < 100 && !(await Deno.stat(newest).then(() => true, () => false)); i++) {
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    const warm = await fetch(url(keys[2]));
    assert.equal(sha256Hex(new Uint8Array(await warm.arrayBuffer())), sha256Hex(versions[2]));
    assert.equal(warm.headers.get("x-svc-cache"), "hit");
    const metrics = await (await fetch(`${svc.url}/_/metrics`)).text();
    assert.match(metrics, /^svc_delta_decode_duration_seconds_count 0$/m, "no decode yet");

    for (const [i, key] of keys.entries()) await assertReadsBack(s3, key, versions[i]);
    const head = await fetch(url(keys[1]), { method: "HEAD" });
    assert.equal(head.headers.get("x-svc-deltaspace"), "releases/*/app.tar");
    const got = await fetch(url(keys[2]));
    assert.equal(got.headers.get("x-svc-deltaspace"), "releases/*/app.tar");
    await got.body?.cancel();

    // Listings show logical keys and sizes only: never .dg/, .delta or reference.bin.
    const all = [...keys.map((k, i) => [k, versions[i].length] as const)];
    all.splice(2, 0, ["releases/1.2.4/notes.txt", 5]);
    assert.deepEqual((await listAll(s3)).objects, all);
    assert.deepEqual(await listAll(s3, undefined, "/"), { objects: [], prefixes: ["releases/"] });
    assert.deepEqual(await listAll(s3, "releases/"), { objects: all, prefixes: [] });
    assert.deepEqual(await listAll(s3, "releases/", "/"), {
      objects: [],
      prefixes: ["releases/1.2.3/", "releases/1.2.4/", "releases/v1.3.0-rc.1/"],
    });
    for (const [prefix, delimiter] of [[".dg/", undefined], [".d", "/"], [".", undefined]]) {
      assert.deepEqual(await listAll(s3, prefix, delimiter), { objects: [], prefixes: [] });
    }
    const paged = await s3.send(new ListObjectsV2Command({ Bucket: BUCKET, MaxKeys: 1 }));
    assert.equal(paged.Contents?.[0].Key, keys[0]);

    // `.dg/` is reserved: refused on PUT, absent on GET.
    await assertError(fetch(url(".dg/x"), { method: "PUT", body: "x" }), 400, "InvalidArgument");
    await assertError(fetch(url(`${folder}reference.bin`)), 404, "NoSuchKey");

    // Deleting every version removes the baseline and its markers.
    for (const key of [...keys, "releases/1.2.4/notes.txt"]) {
      await s3.send(new DeleteObjectCommand({ Bucket: BUCKET, Key: key }));
    }
    assert.deepEqual(names(storedFiles(svc.dataDir, BUCKET)), []);
    assert.equal((await fetch(`${svc.url}/${BUCKET}`, { method: "DELETE" })).status, 204);
  },
});

Deno.test({
  name: "deltaspace groups: parent -> auto -> template across restarts orphans nothing",
  ignore,
  async fn() {
    const dir = await Deno.makeTempDir({ prefix: "svc-groups-" });
    try {
      const dataDir = `${dir}/data`;
      await Deno.mkdir(dataDir);
      const series = new ArtifactSeries();
      const v = [series.current(), series.next(), series.next(), series.next(), series.next()];

      // 1. parent: today's layout, one baseline per version folder.
      {
        const args = await configWith(dir, "parent");
        await using svc = await startSvc({ dataDir, env: ENV, args });
        const s3 = svc.client();
        assert.equal((await fetch(`${svc.url}/${BUCKET}`, { method: "PUT" })).status, 200);
        await put(s3, "r/1.0/app.tar", v[0]);
        await put(s3, "r/1.0/lib.tar", v[1]);
        await put(s3, "r/1.1/app.tar", v[2]);
        const files = storedFiles(svc.dataDir, BUCKET);
        assert.deepEqual(baselines(files), ["r/1.0/reference.bin", "r/1.1/reference.bin"]);
        const head = await fetch(`${svc.url}/${BUCKET}/r/1.0/lib.tar`, { method: "HEAD" });
        assert.equal(head.headers.get("x-svc-deltaspace"), "r/1.0/");
      }
      // Old data: the deltas lose the fields today's code adds (as written before groups).
      for (const name of ["r/1.0/app.tar.delta", "r/1.0/lib.tar.delta", "r/1.1/app.tar.delta"]) {
        const path = `${dataDir}/${BUCKET}/${name}`;
        const meta = getJsonXattr<Record<string, unknown>>(path, "user.svc.meta")!;
        assert.equal(meta.deltaspace, name.slice(0, name.lastIndexOf("/") + 1));
        delete meta.deltaspace;
        delete meta.deltaGroup;
        delete meta.storageReason;
        setJsonXattr(path, "user.svc.meta", meta);
      }

      // 2. auto (the default): old deltas read back; new and overwritten ones join groups.
      let groupFolder: string;
      {
        await using svc = await startSvc({ dataDir, env: ENV, args: await configWith(dir) });
        const s3 = svc.client();
        await assertReadsBack(s3, "r/1.0/app.tar", v[0]);
        await assertReadsBack(s3, "r/1.0/lib.tar", v[1]);
        await assertReadsBack(s3, "r/1.1/app.tar", v[2]);
        await put(s3, "r/1.0/app.tar", v[3]); // overwrite: moves to the group r/*/app.tar
        let files = storedFiles(svc.dataDir, BUCKET);
        const group = baselines(files).filter((n) => GROUP_BASELINE.test(n));
        assert.equal(group.length, 1);
        groupFolder = group[0].slice(0, -"reference.bin".length);
        const app = files.find((f) => f.name === "r/1.0/app.tar.delta")!;
        assert.equal(app.meta?.deltaspace, groupFolder);
        // r/1.0/ keeps its baseline for lib.tar; r/1.1/ for the old app.tar.
        assert.deepEqual(baselines(files).filter((n) => !n.startsWith(".dg/")), [
          "r/1.0/reference.bin",
          "r/1.1/reference.bin",
        ]);
        await assertReadsBack(s3, "r/1.0/app.tar", v[3]);
        await assertReadsBack(s3, "r/1.0/lib.tar", v[1]);
        // Deleting the last old delta of each folder removes that folder's baseline.
        await s3.send(new DeleteObjectCommand({ Bucket: BUCKET, Key: "r/1.0/lib.tar" }));
        await s3.send(new DeleteObjectCommand({ Bucket: BUCKET, Key: "r/1.1/app.tar" }));
        files = storedFiles(svc.dataDir, BUCKET);
        assert.deepEqual(baselines(files), [`${groupFolder}reference.bin`]);
        await assertReadsBack(s3, "r/1.0/app.tar", v[3]);
      }

      // 3. template with the same group key: the same baseline serves the next version.
      {
        const args = await configWith(dir, "template:r/{version}/**");
        await using svc = await startSvc({ dataDir, env: ENV, args });
        const s3 = svc.client();
        const res = await fetch(`${svc.url}/${BUCKET}/r/2.0/app.tar`, {
          method: "PUT",
          body: v[4],
        });
        assert.equal(res.headers.get("x-svc-deltaspace"), "r/*/app.tar");
        assert.equal(res.headers.get("x-amz-storage-type"), "delta");
        const files = storedFiles(svc.dataDir, BUCKET);
        assert.deepEqual(baselines(files), [`${groupFolder}reference.bin`]);
        await assertReadsBack(s3, "r/2.0/app.tar", v[4]);
        await assertReadsBack(s3, "r/1.0/app.tar", v[3]);
        for (const key of ["r/1.0/app.tar", "r/2.0/app.tar"]) {
          await s3.send(new DeleteObjectCommand({ Bucket: BUCKET, Key: key }));
        }
        assert.deepEqual(names(storedFiles(svc.dataDir, BUCKET)), []);
      }
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
});

Deno.test({
  name: "deltaspace groups: a template groups layouts auto keeps apart",
  ignore,
  async fn() {
    const dir = await Deno.makeTempDir({ prefix: "svc-groups-" });
    try {
      const args = await configWith(dir, "template:nightly/{version}/*");
      await using svc = await startSvc({ env: ENV, args });
      const s3 = svc.client();
      assert.equal((await fetch(`${svc.url}/${BUCKET}`, { method: "PUT" })).status, 200);
      const series = new ArtifactSeries();
      const v = [series.current(), series.next()];
      await put(s3, "nightly/monday/app.tar", v[0]);
      const res = await fetch(`${svc.url}/${BUCKET}/nightly/tuesday/app.tar`, {
        method: "PUT",
        body: v[1],
      });
      assert.equal(res.headers.get("x-svc-deltaspace"), "nightly/*/app.tar");
      assert.equal(res.headers.get("x-amz-storage-type"), "delta");
      // Keys the template does not match fall back to auto.
      await put(s3, "other/monday/app.tar", v[0]);
      const head = await fetch(`${svc.url}/${BUCKET}/other/monday/app.tar`, { method: "HEAD" });
      assert.equal(head.headers.get("x-svc-deltaspace"), "other/monday/app.tar");
      const files = storedFiles(svc.dataDir, BUCKET);
      assert.equal(baselines(files).length, 2);
      assert.ok(baselines(files).every((n) => GROUP_BASELINE.test(n)));
      await assertReadsBack(s3, "nightly/tuesday/app.tar", v[1]);
      await assertReadsBack(s3, "nightly/monday/app.tar", v[0]);
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
});

Deno.test({
  name: "deltaspace groups: a policy change applies on SIGHUP, old deltas keep reading",
  ignore,
  async fn() {
    const dir = await Deno.makeTempDir({ prefix: "svc-groups-" });
    try {
      const file = `${dir}/svc.yaml`;
      const yaml = (policy: string) =>
        `storage:\n  buckets:\n    ${BUCKET}:\n      deltaspace: ${policy}\n`;
      await Deno.writeTextFile(file, yaml("parent"));
      await using svc = await startSvc({ env: ENV, args: ["--config", file] });
      const s3 = svc.client();
      const url = (key: string) => `${svc.url}/${BUCKET}/${key}`;
      assert.equal((await fetch(`${svc.url}/${BUCKET}`, { method: "PUT" })).status, 200);
      const series = new ArtifactSeries();
      const v = [series.current(), series.next(), series.next()];
      await put(s3, "r/1.0/app.tar", v[0]);
      await Deno.writeTextFile(file, yaml("auto"));
      const mark = svc.logs.length;
      svc.kill("SIGHUP");
      let line: string | undefined;
      for (let i = 0; i < 100 && line === undefined; i++) {
        line = svc.logs.slice(mark).find((l) => /config reloaded/.test(l));
        if (line === undefined) await new Promise((resolve) => setTimeout(resolve, 50));
      }
      assert.match(line ?? "", /applied.*storage\.buckets\.artifacts\.deltaspace/);
      for (const [i, key] of ["r/1.1/app.tar", "r/1.2/app.tar"].entries()) {
        const res = await fetch(url(key), { method: "PUT", body: v[i + 1] });
        assert.equal(res.headers.get("x-svc-deltaspace"), "r/*/app.tar");
        assert.equal(res.headers.get("x-amz-storage-type"), i === 0 ? "reference" : "delta");
      }
      const files = storedFiles(svc.dataDir, BUCKET);
      assert.equal(baselines(files).length, 2); // r/1.0/'s, and the new group's
      assert.ok(baselines(files).includes("r/1.0/reference.bin"));
      for (const [i, key] of ["r/1.0/app.tar", "r/1.1/app.tar", "r/1.2/app.tar"].entries()) {
        await assertReadsBack(s3, key, v[i]);
      }
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
});
