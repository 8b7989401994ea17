/**
 * Black-box tests of re-baselining (docs/DELTA.md "Re-baselining"): when the versions of a group
 * drift away from its baseline, a later version becomes the baseline of a new generation
 * `.dg/<id>/g<N>/`, later deltas are small again, every version (old and new) reads back after a
 * restart with an empty rebuilt cache, deleting the first generation's versions removes its
 * baseline and markers while the second stays, and a one-off odd version moves nothing. The data
 * directory is read to prove what is stored.
 */
import assert from "node:assert/strict";
import { gzipSync } from "node:zlib";
import {
  DeleteObjectCommand,
  GetObjectCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  type S3Client,
} from "@aws-sdk/client-s3";
import {
  bytesOf,
  objectsOnLocalDisk,
  randomBytes,
  signedFetch as fetch,
  startSvc,
} from "./helpers/svc.ts";
import { ArtifactSeries, tar, type TarMember } from "./helpers/tar.ts";
import { archivesConverted, sha256Hex, type StoredFile, storedFiles } from "./helpers/delta.ts";
import { AdminClient } from "./helpers/admin.ts";
import { type ScanStatus, waitForScan } from "./helpers/diagnostics.ts";
import { getJsonXattr, setJsonXattr } from "../src/native/xattr.ts";

const BUCKET = "drift";
const ENV = { SVC_CODEC_SLOT_WAIT_SECS: "250", SVC_DEBUG_HEADERS: "true" };
const ignore = !objectsOnLocalDisk;

/**
 * Releases that drift: each version replaces the next `replace` of `files` members (cyclically)
 * with new content, so version k shares less and less with version 0.
 */
class DriftingSeries {
  #members: TarMember[];
  #cursor = 0;

  constructor(readonly files = 25, readonly replace = 3, size = 24 * 1024) {
    this.#members = Array.from({ length: files }, (_, i) => ({
      name: `app/lib/part-${i}.bin`,
      data: randomBytes(size),
    }));
  }

  current(): Uint8Array<ArrayBuffer> {
    return tar(this.#members);
  }

  next(): Uint8Array<ArrayBuffer> {
    for (let i = 0; i < this.replace; i++) {
      const at = this.#cursor++ % this.files;
      this.#members[at] = {
        ...this.#members[at],
        data: randomBytes(this.#members[at].data.length),
      };
    }
    return this.current();
  }

  versions(n: number): Uint8Array<ArrayBuffer>[] {
    return [this.current(), ...Array.from({ length: n - 1 }, () => this.next())];
  }
}

async function put(s3: S3Client, key: string, body: Uint8Array) {
  await s3.send(new PutObjectCommand({ Bucket: BUCKET, Key: key, Body: body }));
}

async function readsBack(s3: S3Client, key: string, body: Uint8Array) {
  const got = await s3.send(new GetObjectCommand({ Bucket: BUCKET, Key: key }));
  assert.equal(sha256Hex(await bytesOf(got.Body)), sha256Hex(body), `${key}: body differs`);
}

const keyOf = (i: number) => `releases/1.0.${i}/app.tar`;
const names = (files: StoredFile[]) => files.map((f) => f.name);
const baselines = (files: StoredFile[]) =>
  names(files).filter((n) => n.endsWith("reference.bin")).sort();
const deltaOf = (files: StoredFile[], key: string) => files.find((f) => f.name === `${key}.delta`);
const totalBytes = (files: StoredFile[]) => files.reduce((sum, f) => sum + f.size, 0);

async function createBucket(url: string) {
  assert.equal((await fetch(`${url}/${BUCKET}`, { method: "PUT" })).status, 200);
}

Deno.test({
  name: "rebaseline: a drifting series gets a second generation; all versions survive a restart",
  ignore,
  async fn() {
    const dir = await Deno.makeTempDir({ prefix: "svc-rebaseline-" });
    try {
      const dataDir = `${dir}/data`;
      await Deno.mkdir(dataDir);
      // 12% of the members change per version: deltas against version 0 are ~12%, ~24%, ~36%.
      const v = new DriftingSeries().versions(9);
      let root = "";
      {
        await using svc = await startSvc({ dataDir, env: ENV });
        const s3 = svc.client();
        await createBucket(svc.url);
        for (let i = 0; i < 8; i++) await put(s3, keyOf(i), v[i]);
        const files = storedFiles(dataDir, BUCKET);
        const bases = baselines(files);
        assert.equal(bases.length, 2, JSON.stringify(names(files)));
        root = bases.find((n) => !n.includes("/g1/"))!.slice(0, -"reference.bin".length);
        assert.match(root, /^\.dg\/[0-9a-f]{32}\/$/);
        assert.deepEqual(bases, [`${root}g1/reference.bin`, `${root}reference.bin`].sort());
        // v0 is generation 0's baseline; v1 fits; v2-v5 strike, their deltas beyond v1's
        // (~12%, ~24%, ~36%, ~48% of a version) reach 1.5 baselines with v6's: v6 starts g1.
        const space = (i: number) => deltaOf(files, keyOf(i))!.meta!.deltaspace;
        assert.deepEqual([0, 1, 2, 3, 4, 5, 6, 7].map(space), [
          root,
          root,
          root,
          root,
          root,
          root,
          `${root}g1/`,
          `${root}g1/`,
        ]);
        const g1 = files.find((f) => f.name === `${root}g1/reference.bin`)!;
        assert.equal(g1.meta!.sha256, sha256Hex(v[6]));
        assert.equal(g1.meta!.deltaGroup, "releases/*/app.tar");
        assert.equal(deltaOf(files, keyOf(6))!.meta!.storageReason, "new_baseline");
        const size = (i: number) => deltaOf(files, keyOf(i))!.size;
        assert.ok(size(5) > 0.2 * v[5].length, `v5's delta ${size(5)} grew`);
        assert.ok(size(7) < 0.2 * v[7].length, `v7's delta ${size(7)} is small again`);
        assert.ok(size(7) * 1.5 < size(5), `v7 ${size(7)} vs v5 ${size(5)}`);
        const markers = (folder: string) =>
          names(files).filter((n) =>
            new RegExp(`^${folder}refs/[0-9a-f]{64}(\\.[0-9a-f]{16})?$`).test(n)
          ).length;
        assert.equal(markers(root), 6);
        assert.equal(markers(`${root}g1/`), 2);
        // Listings show the logical keys only.
        const listed = await s3.send(new ListObjectsV2Command({ Bucket: BUCKET }));
        assert.deepEqual(
          (listed.Contents ?? []).map((o) => o.Key),
          [0, 1, 2, 3, 4, 5, 6, 7].map(keyOf),
        );
        const top = await s3.send(new ListObjectsV2Command({ Bucket: BUCKET, Delimiter: "/" }));
        assert.deepEqual((top.CommonPrefixes ?? []).map((p) => p.Prefix), ["releases/"]);
        assert.equal(top.Contents, undefined);
        const head = await fetch(`${svc.url}/${BUCKET}/${keyOf(4)}`, { method: "HEAD" });
        assert.equal(head.headers.get("x-svc-deltaspace"), "releases/*/app.tar");
      }
      // Restart, rebuilt cache off: every version decodes from its own generation.
      {
        await using svc = await startSvc({
          dataDir,
          env: { ...ENV, SVC_REBUILT_CACHE_MB: "0" },
        });
        const s3 = svc.client();
        for (let i = 0; i < 8; i++) await readsBack(s3, keyOf(i), v[i]);
        // The current generation is found again after the restart (one LIST): v8 joins g1.
        await put(s3, keyOf(8), v[8]);
        let files = storedFiles(dataDir, BUCKET);
        assert.equal(deltaOf(files, keyOf(8))!.meta!.deltaspace, `${root}g1/`);
        assert.equal(baselines(files).length, 2);
        await readsBack(s3, keyOf(8), v[8]);

        // The scrub classifies every name: no orphan, no finding.
        const admin = new AdminClient(svc.url);
        await admin.login();
        await admin.json("POST", "/diagnostics/scan/start", { bytes_per_sec: 0 }, 202);
        const status: ScanStatus = await waitForScan(admin, (s) => s.state === "finished");
        assert.deepEqual(status.findings, []);
        // The efficiency report has one deltaspace row per generation, both of the group.
        type Space = { deltaspace: string; objects: number; baseline_bytes: number };
        const report = await admin.json<
          { buckets: { deltaspaces: (Space & Record<string, unknown>)[] }[] }
        >(
          "GET",
          `/diagnostics/delta-efficiency?bucket=${BUCKET}`,
        );
        const rows = report.buckets[0].deltaspaces;
        assert.deepEqual(rows.map((r) => r.deltaspace).sort(), [root, `${root}g1/`].sort());
        for (const row of rows) {
          assert.equal(row.group_key, "releases/*/app.tar");
          assert.equal(row.objects, row.deltaspace === root ? 6 : 3);
          const base = files.find((f) => f.name === `${row.deltaspace}reference.bin`)!;
          assert.equal(row.baseline_bytes, base.size);
        }

        // Deleting generation 0's versions removes its baseline and markers; g1 stays.
        for (let i = 0; i < 6; i++) {
          await s3.send(new DeleteObjectCommand({ Bucket: BUCKET, Key: keyOf(i) }));
        }
        files = storedFiles(dataDir, BUCKET);
        const dg = names(files).filter((n) => n.startsWith(root));
        assert.deepEqual(
          dg.filter((n) => !n.startsWith(`${root}g1/`)),
          [],
          `generation 0 left: ${JSON.stringify(dg)}`,
        );
        assert.ok(dg.includes(`${root}g1/reference.bin`));
        assert.equal(dg.filter((n) => n.startsWith(`${root}g1/refs/`)).length, 3);
        for (let i = 6; i < 9; i++) await readsBack(s3, keyOf(i), v[i]);
        // And the last versions take g1 with them.
        for (let i = 6; i < 9; i++) {
          await s3.send(new DeleteObjectCommand({ Bucket: BUCKET, Key: keyOf(i) }));
        }
        assert.deepEqual(names(storedFiles(dataDir, BUCKET)), []);
      }
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
});

Deno.test({
  name: "rebaseline: a one-off odd version does not move the baseline",
  ignore,
  async fn() {
    await using svc = await startSvc({ env: ENV });
    const s3 = svc.client();
    await createBucket(svc.url);
    const series = new ArtifactSeries();
    const size = series.current().length;
    const odd = () => tar([{ name: "odd/blob.bin", data: randomBytes(size - 2048) }]);
    const bodies = [series.current(), series.next(), odd(), series.next(), odd(), series.next()];
    const key = (i: number) => `tools/2.${i}/cli.tar`;
    for (let i = 0; i < bodies.length; i++) await put(s3, key(i), bodies[i]);
    const files = storedFiles(svc.dataDir, BUCKET);
    assert.equal(baselines(files).length, 1, JSON.stringify(names(files)));
    for (const i of [2, 4]) {
      const stored = files.find((f) => f.name === key(i))!;
      assert.equal(stored.storage, "passthrough");
      assert.equal(stored.meta!.storageReason, "ratio_exceeded");
    }
    for (const i of [1, 3, 5]) {
      assert.equal(deltaOf(files, key(i))!.meta!.storageReason, "ratio_met");
    }
    for (let i = 0; i < bodies.length; i++) await readsBack(s3, key(i), bodies[i]);
  },
});

Deno.test({
  name: "rebaseline: stored bytes of a drifting series with and without re-baselining",
  ignore,
  async fn() {
    const v = new DriftingSeries().versions(13);
    const logical = v.reduce((sum, b) => sum + b.length, 0);
    const stored: Record<string, number> = {};
    const generations: Record<string, number> = {};
    for (const ratio of ["0.2", "0"]) {
      await using svc = await startSvc({ env: { ...ENV, SVC_REBASELINE_RATIO: ratio } });
      const s3 = svc.client();
      await createBucket(svc.url);
      for (let i = 0; i < v.length; i++) await put(s3, keyOf(i), v[i]);
      for (let i = 0; i < v.length; i++) await readsBack(s3, keyOf(i), v[i]);
      const files = storedFiles(svc.dataDir, BUCKET);
      stored[ratio] = totalBytes(files);
      generations[ratio] = baselines(files).length;
      if (ratio === "0") assert.equal(generations[ratio], 1);
      else assert.ok(generations[ratio] >= 3, `generations: ${generations[ratio]}`);
    }
    console.log(
      `drifting series, ${v.length} versions, ${logical} logical bytes: stored ` +
        `${stored["0.2"]} with re-baselining (${generations["0.2"]} baselines), ${
          stored["0"]
        } without`,
    );
    assert.ok(stored["0.2"] < stored["0"], JSON.stringify(stored));
  },
});

Deno.test({
  name: "rebaseline: stored bytes when only the last versions are kept",
  ignore,
  async fn() {
    // 16 releases, each one deleting the release 4 before it (a retention of 4 versions).
    const v = new DriftingSeries().versions(16);
    const stored: Record<string, number> = {};
    for (const ratio of ["0.2", "0"]) {
      await using svc = await startSvc({ env: { ...ENV, SVC_REBASELINE_RATIO: ratio } });
      const s3 = svc.client();
      await createBucket(svc.url);
      for (let i = 0; i < v.length; i++) {
        await put(s3, keyOf(i), v[i]);
        if (i >= 4) await s3.send(new DeleteObjectCommand({ Bucket: BUCKET, Key: keyOf(i - 4) }));
      }
      for (let i = v.length - 4; i < v.length; i++) await readsBack(s3, keyOf(i), v[i]);
      const files = storedFiles(svc.dataDir, BUCKET);
      stored[ratio] = totalBytes(files);
      if (ratio === "0.2") {
        // Only generations the kept versions use are left (old ones went with their versions).
        const spaces = new Set(
          files.filter((f) => f.name.endsWith(".delta")).map((f) => f.meta!.deltaspace),
        );
        assert.equal(baselines(files).length, spaces.size);
        const highest = Math.max(
          ...baselines(files).map((n) => Number(/\/g(\d+)\//.exec(n)?.[1] ?? 0)),
        );
        assert.ok(highest >= 2, `generations went up to ${highest}`);
      }
    }
    // Without re-baselining the first baseline also goes once its last delta is deleted, and the
    // next version starts a new one: the two end close (measured, not compared; see DELTA.md).
    const kept = v.slice(-4).reduce((sum, b) => sum + b.length, 0);
    console.log(
      `retention of 4 of 16 versions, ${kept} logical bytes kept: stored ` +
        `${stored["0.2"]} with re-baselining, ${stored["0"]} without`,
    );
  },
});

Deno.test({
  name: "rebaseline: an archive's new generation baseline is the archive, used in token form",
  ignore,
  async fn() {
    await using svc = await startSvc({ env: ENV });
    const s3 = svc.client();
    await createBucket(svc.url);
    const v = new DriftingSeries().versions(7).map((t) =>
      new Uint8Array(gzipSync(t, { level: 6 }))
    );
    const key = (i: number) => `dist/pkg-1.${i}.0.tgz`;
    for (let i = 0; i < v.length; i++) await put(s3, key(i), v[i]);
    await archivesConverted(svc);
    const files = storedFiles(svc.dataDir, BUCKET);
    const bases = files.filter((f) => f.name.endsWith("reference.bin"));
    assert.equal(bases.length, 2, JSON.stringify(names(files)));
    // Kept as the archive itself (its token form derived on use, docs/DELTA.md).
    for (const base of bases) assert.equal(base.meta!.baselineForm, "archive-tokens-1");
    const g1 = bases.find((f) => f.name.includes("/g1/"))!;
    assert.equal(
      deltaOf(files, key(6))!.meta!.deltaspace,
      g1.name.slice(0, -"reference.bin".length),
    );
    assert.equal(deltaOf(files, key(5))!.meta!.transform, "archive-tokens-1");
    for (let i = 0; i < v.length; i++) await readsBack(s3, key(i), v[i]);
  },
});

Deno.test({
  name: "rebaseline: concurrent PUTs of a drifting group agree on generations",
  ignore,
  async fn() {
    await using svc = await startSvc({ env: ENV });
    const s3 = svc.client();
    await createBucket(svc.url);
    const v = new DriftingSeries().versions(12);
    await Promise.all(v.slice(0, 6).map((body, i) => put(s3, keyOf(i), body)));
    await Promise.all(v.slice(6).map((body, i) => put(s3, keyOf(i + 6), body)));
    const files = storedFiles(svc.dataDir, BUCKET);
    const byName = new Map(files.map((f) => [f.name, f]));
    const deltas = files.filter((f) => f.name.endsWith(".delta"));
    // A version encoded against the old generation while another PUT moved the group on may miss
    // max_delta_ratio, and is then stored as it came, saying so (seen once in CI, loaded): that
    // is the write path's rule, not a disagreement on generations. Nothing else goes passthrough.
    const stored = files.filter((f) => f.name.endsWith(".tar"));
    for (const f of stored) {
      assert.equal(f.meta?.storageReason, "ratio_exceeded", `${f.name}: ${JSON.stringify(f.meta)}`);
    }
    assert.ok(stored.length <= 1, JSON.stringify(names(files)));
    assert.equal(deltas.length + stored.length, v.length, JSON.stringify(names(files)));
    const perSpace = new Map<string, number>();
    for (const delta of deltas) {
      // Each delta's baseline is where its metadata says, with the sha256 it was encoded against.
      const space = delta.meta!.deltaspace as string;
      const base = byName.get(`${space}reference.bin`);
      assert.ok(base, `${delta.name}: no baseline in ${space}`);
      assert.equal(base.meta!.sha256, delta.meta!.referenceSha256);
      perSpace.set(space, (perSpace.get(space) ?? 0) + 1);
    }
    assert.ok(perSpace.size >= 2, `generations: ${[...perSpace.keys()]}`);
    for (const [space, count] of perSpace) {
      const markers = names(files).filter((n) => n.startsWith(`${space}refs/`));
      assert.equal(markers.length, count, `${space}: markers`);
    }
    assert.equal(baselines(files).length, perSpace.size, "no baseline without a delta");
    for (let i = 0; i < v.length; i++) await readsBack(s3, keyOf(i), v[i]);
  },
});

Deno.test({
  name: "rebaseline: a crash after a new generation's baseline, before its delta, loses nothing",
  ignore,
  async fn() {
    const dir = await Deno.makeTempDir({ prefix: "svc-rebaseline-crash-" });
    try {
      const dataDir = `${dir}/data`;
      await Deno.mkdir(dataDir);
      const v = new DriftingSeries().versions(9);
      let root = "";
      {
        await using svc = await startSvc({ dataDir, env: ENV });
        await createBucket(svc.url);
        for (let i = 0; i < 7; i++) await put(svc.client(), keyOf(i), v[i]);
        const bases = baselines(storedFiles(dataDir, BUCKET));
        assert.equal(bases.length, 2);
        root = bases.find((n) => !n.includes("/g1/"))!.slice(0, -"reference.bin".length);
      }
      // What a kill -9 right after a rebaseline wrote its baseline leaves: g2's baseline, no
      // marker, no delta (its content: the newest version, as a real one would be).
      const g1 = `${dataDir}/${BUCKET}/${root}g1/reference.bin`;
      await Deno.mkdir(`${dataDir}/${BUCKET}/${root}g2`);
      const g2 = `${dataDir}/${BUCKET}/${root}g2/reference.bin`;
      await Deno.copyFile(g1, g2);
      setJsonXattr(
        g2,
        "user.svc.meta",
        getJsonXattr<Record<string, unknown>>(g1, "user.svc.meta")!,
      );
      {
        await using svc = await startSvc({ dataDir, env: { ...ENV, SVC_REBUILT_CACHE_MB: "0" } });
        const s3 = svc.client();
        // The highest generation present is the current one: the next version joins it.
        await put(s3, keyOf(7), v[7]);
        const files = storedFiles(dataDir, BUCKET);
        assert.equal(deltaOf(files, keyOf(7))!.meta!.deltaspace, `${root}g2/`);
        assert.ok(names(files).some((n) => n.startsWith(`${root}g2/refs/`)));
        for (let i = 0; i < 8; i++) await readsBack(s3, keyOf(i), v[i]);
        const admin = new AdminClient(svc.url);
        await admin.login();
        await admin.json("POST", "/diagnostics/scan/start", { bytes_per_sec: 0 }, 202);
        const status: ScanStatus = await waitForScan(admin, (s) => s.state === "finished");
        assert.deepEqual(status.findings, []);
      }
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
});
