/**
 * Black-box tests of CompleteMultipartUpload without a rewrite: on the filesystem backend the
 * parts become the object's extents (hard links, no byte copied), the sha256 and the multipart
 * ETag stay right, reads and ranges cross extent boundaries, overwrites and deletes release the
 * extents, a read in progress survives an overwrite, and what a crash leaves is swept at start.
 * Delta-eligible keys still go through the delta store. Runs on an S3 backend too (npm test),
 * where the checks that look into the data directory skip themselves.
 */
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import * as S3 from "@aws-sdk/client-s3";
import {
  bytesOf,
  objectsOnLocalDisk,
  randomBytes,
  signedFetch as fetch,
  startSvc,
} from "./helpers/svc.ts";
import { concat, multipartEtag } from "./helpers/multipart.ts";
import { getJsonXattr, setJsonXattr } from "../src/native/xattr.ts";
import { clientFor, startBackingSvc, startFront } from "./helpers/s3-front.ts";

const MiB = 1024 * 1024;
const sha256hex = (b: Uint8Array) => createHash("sha256").update(b).digest("hex");
const md5hex = (b: Uint8Array) => createHash("md5").update(b).digest("hex");

async function upload(s3: S3.S3Client, Bucket: string, Key: string, bodies: Uint8Array[]) {
  const { UploadId } = await s3.send(new S3.CreateMultipartUploadCommand({ Bucket, Key }));
  const parts = await Promise.all(bodies.map(async (Body, i) => {
    const input = { Bucket, Key, UploadId, PartNumber: i + 1, Body };
    return { PartNumber: i + 1, ETag: (await s3.send(new S3.UploadPartCommand(input))).ETag! };
  }));
  const complete = () =>
    s3.send(
      new S3.CompleteMultipartUploadCommand({
        Bucket,
        Key,
        UploadId,
        MultipartUpload: { Parts: parts },
      }),
    );
  return { uploadId: UploadId!, parts, complete };
}

async function extentDirs(dataDir: string): Promise<string[]> {
  const names = await Array.fromAsync(Deno.readDir(`${dataDir}/.svc/extents`), (e) => e.name);
  return names.filter((name) => !name.startsWith(".")).sort();
}

Deno.test("multipart extents: parts become the object without a copy; sha256, ETag, ranges", async (t) => {
  await using svc = await startSvc();
  const s3 = svc.client();
  const B = "ext";
  await s3.send(new S3.CreateBucketCommand({ Bucket: B }));
  const p = [randomBytes(5 * MiB), randomBytes(5 * MiB + 7), randomBytes(5 * MiB), randomBytes(99)];
  const all = concat(...p);
  const { uploadId, complete } = await upload(s3, B, "big.bin", p);
  const partInode = objectsOnLocalDisk
    ? (await Deno.stat(`${svc.dataDir}/.svc/multipart/${uploadId}/00002`)).ino
    : null;
  assert.equal((await complete()).ETag, multipartEtag(p));

  await t.step(
    "no byte copied: the object's second extent is the uploaded part's file",
    async () => {
      if (!objectsOnLocalDisk) return;
      const [dir] = await extentDirs(svc.dataDir);
      assert.ok(dir, "an extents directory exists");
      const extent = await Deno.stat(`${svc.dataDir}/.svc/extents/${dir}/00002`);
      assert.equal(extent.ino, partInode);
      const entry = `${svc.dataDir}/${B}/big.bin`;
      assert.equal((await Deno.stat(entry)).size, 0, "the entry holds metadata only");
      const meta = getJsonXattr<{ sha256: string; size: number }>(entry, "user.svc.meta")!;
      assert.equal(meta.sha256, sha256hex(all), "sha256 of the whole object");
      assert.equal(meta.size, all.length);
    },
  );

  await t.step("GET, HEAD and LIST agree; whole body right", async () => {
    const got = await s3.send(new S3.GetObjectCommand({ Bucket: B, Key: "big.bin" }));
    assert.equal(got.ETag, multipartEtag(p));
    assert.equal(got.ContentLength, all.length);
    assert.equal(sha256hex(await bytesOf(got.Body)), sha256hex(all));
    const list = await s3.send(new S3.ListObjectsV2Command({ Bucket: B, Prefix: "big" }));
    assert.deepEqual([list.Contents?.[0].Size, list.Contents?.[0].ETag], [
      all.length,
      multipartEtag(p),
    ]);
  });

  await t.step("ranges inside, across and at the ends of extents", async () => {
    const cuts = [
      [0, 0],
      [5 * MiB - 3, 5 * MiB + 3], // across the first boundary
      [5 * MiB, 10 * MiB + 6], // exactly part 2
      [MiB, 15 * MiB + 50], // three boundaries
      [all.length - 99, all.length - 1], // the last part
    ];
    for (const [start, end] of cuts) {
      const r = await fetch(`${svc.url}/${B}/big.bin`, {
        headers: { range: `bytes=${start}-${end}` },
      });
      assert.equal(r.status, 206);
      const bytes = new Uint8Array(await r.arrayBuffer());
      assert.equal(md5hex(bytes), md5hex(all.subarray(start, end + 1)), `${start}-${end}`);
    }
    const part3 = await fetch(`${svc.url}/${B}/big.bin?partNumber=3`);
    assert.equal(md5hex(new Uint8Array(await part3.arrayBuffer())), md5hex(p[2]));
  });

  await t.step("a copy verifies the stored sha256 and gets its own bytes", async () => {
    await s3.send(
      new S3.CopyObjectCommand({ Bucket: B, Key: "copy.bin", CopySource: `${B}/big.bin` }),
    );
    const got = await s3.send(new S3.GetObjectCommand({ Bucket: B, Key: "copy.bin" }));
    assert.equal(got.ETag, multipartEtag(p));
    assert.equal(sha256hex(await bytesOf(got.Body)), sha256hex(all));
  });

  await t.step("a read in progress finishes with its version across an overwrite", async () => {
    const reading = await fetch(`${svc.url}/${B}/big.bin`);
    const reader = reading.body!.getReader();
    const first = await reader.read();
    await s3.send(new S3.PutObjectCommand({ Bucket: B, Key: "big.bin", Body: p[3] }));
    const rest: Uint8Array[] = [first.value!];
    for (let r = await reader.read(); !r.done; r = await reader.read()) rest.push(r.value);
    assert.equal(sha256hex(concat(...rest)), sha256hex(all));
    assert.equal(
      md5hex(
        await bytesOf((await s3.send(new S3.GetObjectCommand({ Bucket: B, Key: "big.bin" }))).Body),
      ),
      md5hex(p[3]),
    );
    if (objectsOnLocalDisk) {
      // Released once that read ended.
      for (let i = 0; i < 50 && (await extentDirs(svc.dataDir)).length > 0; i++) {
        await new Promise((r) => setTimeout(r, 20));
      }
      assert.deepEqual(await extentDirs(svc.dataDir), []);
    }
  });

  await t.step("a delete removes the extents", async () => {
    const again = await upload(s3, B, "gone.bin", [p[0], p[3]]);
    await again.complete();
    if (objectsOnLocalDisk) assert.equal((await extentDirs(svc.dataDir)).length, 1);
    await s3.send(new S3.DeleteObjectCommand({ Bucket: B, Key: "gone.bin" }));
    if (objectsOnLocalDisk) assert.deepEqual(await extentDirs(svc.dataDir), []);
    const head = await fetch(`${svc.url}/${B}/gone.bin`, { method: "HEAD" });
    assert.equal(head.status, 404);
  });
  s3.destroy();
});

Deno.test({
  name: "multipart extents: a delta-eligible key still goes through the delta store",
  // A backing svc keeps compression on and refuses the front's reference.bin (see helpers/svc.ts).
  ignore: !objectsOnLocalDisk,
  fn: async () => {
    await using svc = await startSvc({ env: { SVC_DEBUG_HEADERS: "true" } });
    const s3 = svc.client();
    await s3.send(new S3.CreateBucketCommand({ Bucket: "dzip" }));
    const p = [randomBytes(5 * MiB), randomBytes(1000)];
    const { uploadId, parts } = await upload(s3, "dzip", "app/v1.zip", p);
    const xml = `<CompleteMultipartUpload>${
      parts.map((x) =>
        `<Part><PartNumber>${x.PartNumber}</PartNumber><ETag>${x.ETag}</ETag></Part>`
      )
        .join("")
    }</CompleteMultipartUpload>`;
    const done = await fetch(`${svc.url}/dzip/app/v1.zip?uploadId=${uploadId}`, {
      method: "POST",
      body: xml,
    });
    const text = await done.text();
    assert.equal(done.status, 200, text + svc.logs.slice(-5).join("\n"));
    assert.equal(done.headers.get("x-amz-storage-type"), "reference");
    const got = await s3.send(new S3.GetObjectCommand({ Bucket: "dzip", Key: "app/v1.zip" }));
    assert.equal(got.ETag, multipartEtag(p));
    assert.equal(sha256hex(await bytesOf(got.Body)), sha256hex(concat(...p)));
    s3.destroy();
  },
});

Deno.test({
  name: "multipart extents: extents a crash left unreferenced are removed at start",
  ignore: !objectsOnLocalDisk,
  fn: async () => {
    const dataDir = await Deno.makeTempDir({ prefix: "svc-extents-" });
    try {
      const p = [randomBytes(5 * MiB), randomBytes(10)];
      let kept: string;
      {
        await using svc = await startSvc({ dataDir });
        const s3 = svc.client();
        await s3.send(new S3.CreateBucketCommand({ Bucket: "crash" }));
        await (await upload(s3, "crash", "k", p)).complete();
        [kept] = await extentDirs(dataDir);
        s3.destroy();
      }
      // What a crash between linking and the commit leaves: extents nobody points to, a staging
      // directory and a trash directory.
      const orphan = `${dataDir}/.svc/extents/${crypto.randomUUID()}`;
      await Deno.mkdir(orphan);
      await Deno.link(`${dataDir}/.svc/extents/${kept}/00001`, `${orphan}/00001`);
      setJsonXattr(orphan, "user.svc.extent-owner", { bucket: "crash", key: "k" });
      await Deno.mkdir(`${dataDir}/.svc/extents/.tmp-x`);
      await Deno.mkdir(`${dataDir}/.svc/extents/.trash-y`);
      {
        await using svc = await startSvc({ dataDir });
        const names = await Array.fromAsync(Deno.readDir(`${dataDir}/.svc/extents`), (e) => e.name);
        assert.deepEqual(names, [kept]);
        const s3 = svc.client();
        const got = await s3.send(new S3.GetObjectCommand({ Bucket: "crash", Key: "k" }));
        assert.equal(sha256hex(await bytesOf(got.Body)), sha256hex(concat(...p)));
        s3.destroy();
      }
    } finally {
      await Deno.remove(dataDir, { recursive: true });
    }
  },
});

Deno.test("multipart extents: on an S3 backend the client's parts become the backend's parts", async () => {
  const backing = await startBackingSvc(["mapped"]);
  try {
    await using front = await startFront(backing);
    const s3 = front.client();
    await s3.send(new S3.CreateBucketCommand({ Bucket: "mapped" }));
    // Part sizes no spool split would produce (the spool sends 8 MiB pieces): 5 MiB + 6 MiB + 1.
    const p = [randomBytes(5 * MiB), randomBytes(6 * MiB), randomBytes(1)];
    assert.equal((await (await upload(s3, "mapped", "k", p)).complete()).ETag, multipartEtag(p));
    // The backend stores the same three parts: same multipart ETag, part 2 readable there.
    const direct = clientFor(backing);
    const head = await direct.send(new S3.HeadObjectCommand({ Bucket: "mapped", Key: "k" }));
    assert.equal(head.ETag, multipartEtag(p));
    const part2 = await direct.send(
      new S3.GetObjectCommand({ Bucket: "mapped", Key: "k", PartNumber: 2 }),
    );
    assert.equal(md5hex(await bytesOf(part2.Body)), md5hex(p[1]));
    // And the front reads it back, whole and by part.
    const got = await s3.send(new S3.GetObjectCommand({ Bucket: "mapped", Key: "k" }));
    assert.equal(sha256hex(await bytesOf(got.Body)), sha256hex(concat(...p)));
    const one = await s3.send(
      new S3.GetObjectCommand({ Bucket: "mapped", Key: "k", PartNumber: 3 }),
    );
    assert.equal(md5hex(await bytesOf(one.Body)), md5hex(p[2]));
    direct.destroy();
    s3.destroy();
  } finally {
    await backing.stop();
  }
});

Deno.test({
  name: "multipart extents: the sha256 is right when parts straddle a restart",
  ignore: !objectsOnLocalDisk,
  fn: async () => {
    const dataDir = await Deno.makeTempDir({ prefix: "svc-chain-restart-" });
    try {
      const p = [randomBytes(5 * MiB), randomBytes(5 * MiB), randomBytes(77)];
      let uploadId: string;
      let first: { PartNumber: number; ETag: string };
      {
        await using svc = await startSvc({ dataDir });
        const s3 = svc.client();
        await s3.send(new S3.CreateBucketCommand({ Bucket: "chain" }));
        ({ UploadId: uploadId } = await s3.send(
          new S3.CreateMultipartUploadCommand({ Bucket: "chain", Key: "k" }),
        ) as { UploadId: string });
        const input = { Bucket: "chain", Key: "k", UploadId: uploadId, PartNumber: 1, Body: p[0] };
        first = { PartNumber: 1, ETag: (await s3.send(new S3.UploadPartCommand(input))).ETag! };
        s3.destroy();
      }
      {
        // This process's chain never saw part 1: it cannot start, and Complete reads the parts.
        await using svc = await startSvc({ dataDir });
        const s3 = svc.client();
        const parts = [first];
        for (const n of [2, 3]) {
          const input = {
            Bucket: "chain",
            Key: "k",
            UploadId: uploadId,
            PartNumber: n,
            Body: p[n - 1],
          };
          parts.push({
            PartNumber: n,
            ETag: (await s3.send(new S3.UploadPartCommand(input))).ETag!,
          });
        }
        await s3.send(
          new S3.CompleteMultipartUploadCommand({
            Bucket: "chain",
            Key: "k",
            UploadId: uploadId,
            MultipartUpload: { Parts: parts },
          }),
        );
        const meta = getJsonXattr<{ sha256: string }>(`${dataDir}/chain/k`, "user.svc.meta")!;
        assert.equal(meta.sha256, sha256hex(concat(...p)));
        s3.destroy();
      }
    } finally {
      await Deno.remove(dataDir, { recursive: true });
    }
  },
});
