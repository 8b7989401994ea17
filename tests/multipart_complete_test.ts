/**
 * Black-box tests of what a completed multipart object remembers: a repeated
 * CompleteMultipartUpload answers as the first one did (SDKs retry it after a timeout), and
 * GET/HEAD `?partNumber=N` read one part back. npm test runs this file again on an S3 backend.
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
import { multipartEtag } from "./helpers/multipart.ts";

const MiB = 1024 * 1024;
const md5hex = (b: Uint8Array) => createHash("md5").update(b).digest("hex");

function completeXml(parts: { PartNumber: number; ETag: string }[]): string {
  const xml = parts.map((p) =>
    `<Part><PartNumber>${p.PartNumber}</PartNumber><ETag>${p.ETag}</ETag></Part>`
  );
  return `<CompleteMultipartUpload>${xml.join("")}</CompleteMultipartUpload>`;
}

async function raw(url: string, method = "GET", body?: string, headers?: HeadersInit) {
  const r = await fetch(url, { method, body, headers });
  const bytes = new Uint8Array(await r.arrayBuffer());
  const text = new TextDecoder().decode(bytes);
  return {
    status: r.status,
    code: /<Code>([^<]*)<\/Code>/.exec(text)?.[1],
    etag: /<ETag>([^<]*)<\/ETag>/.exec(text)?.[1]?.replaceAll("&quot;", '"'),
    headers: r.headers,
    bytes,
  };
}

type Part = { PartNumber: number; ETag: string };

async function upload(s3: S3.S3Client, Bucket: string, Key: string, bodies: Uint8Array[]) {
  const { UploadId } = await s3.send(new S3.CreateMultipartUploadCommand({ Bucket, Key }));
  const parts: Part[] = [];
  for (const [i, Body] of bodies.entries()) {
    const input = { Bucket, Key, UploadId, PartNumber: i + 1, Body };
    parts.push({ PartNumber: i + 1, ETag: (await s3.send(new S3.UploadPartCommand(input))).ETag! });
  }
  return { uploadId: UploadId!, parts };
}

Deno.test("multipart: a repeated Complete answers as the first; another part list is NoSuchUpload", async () => {
  await using svc = await startSvc();
  const s3 = svc.client();
  await s3.send(new S3.CreateBucketCommand({ Bucket: "rep" }));
  const a = randomBytes(5 * MiB), b = randomBytes(1000);
  const { uploadId, parts } = await upload(s3, "rep", "k", [a, b]);
  const url = `${svc.url}/rep/k?uploadId=${uploadId}`;
  const first = await raw(url, "POST", completeXml(parts));
  assert.deepEqual([first.status, first.etag], [200, multipartEtag([a, b])]);
  // The retry an SDK sends after a timeout: same answer.
  const again = await raw(url, "POST", completeXml(parts));
  assert.deepEqual([again.status, again.etag], [200, multipartEtag([a, b])]);
  // Through the SDK too.
  const sdk = await s3.send(
    new S3.CompleteMultipartUploadCommand({
      Bucket: "rep",
      Key: "k",
      UploadId: uploadId,
      MultipartUpload: { Parts: parts },
    }),
  );
  assert.equal(sdk.ETag, multipartEtag([a, b]));
  // Another part list, another key or an unknown id: the upload no longer exists.
  const fewer = await raw(url, "POST", completeXml(parts.slice(0, 1)));
  assert.deepEqual([fewer.status, fewer.code], [404, "NoSuchUpload"]);
  const otherKey = await raw(
    `${svc.url}/rep/other?uploadId=${uploadId}`,
    "POST",
    completeXml(parts),
  );
  assert.deepEqual([otherKey.status, otherKey.code], [404, "NoSuchUpload"]);
  // The repeat did not write again: an object put since stays.
  await s3.send(new S3.PutObjectCommand({ Bucket: "rep", Key: "k", Body: b }));
  const later = await raw(url, "POST", completeXml(parts));
  assert.deepEqual([later.status, later.etag], [200, multipartEtag([a, b])]);
  const head = await s3.send(new S3.HeadObjectCommand({ Bucket: "rep", Key: "k" }));
  assert.equal(head.ETag, `"${md5hex(b)}"`);
  // Uploads are still listed as gone and cannot take parts.
  const listed = await s3.send(new S3.ListMultipartUploadsCommand({ Bucket: "rep" }));
  assert.equal(listed.Uploads?.length ?? 0, 0);
  const part = await raw(`${url}&partNumber=3`, "PUT", "x");
  assert.deepEqual([part.status, part.code], [404, "NoSuchUpload"]);
  s3.destroy();
});

Deno.test("multipart: concurrent Completes of one upload both succeed with the same ETag", async () => {
  await using svc = await startSvc();
  const s3 = svc.client();
  await s3.send(new S3.CreateBucketCommand({ Bucket: "race" }));
  const a = randomBytes(5 * MiB), b = randomBytes(5 * MiB), c = randomBytes(10);
  const { uploadId, parts } = await upload(s3, "race", "k", [a, b, c]);
  const url = `${svc.url}/race/k?uploadId=${uploadId}`;
  const answers = await Promise.all([1, 2, 3].map(() => raw(url, "POST", completeXml(parts))));
  const expected = multipartEtag([a, b, c]);
  assert.deepEqual(answers.map((r) => [r.status, r.etag]), Array(3).fill([200, expected]));
  const got = await s3.send(new S3.GetObjectCommand({ Bucket: "race", Key: "k" }));
  assert.equal((await bytesOf(got.Body)).length, 10 * MiB + 10);
  s3.destroy();
});

Deno.test({
  name: "multipart: the record of a completed upload survives a restart",
  ignore: !objectsOnLocalDisk, // a restart would also replace the backing store
  fn: async () => {
    const dataDir = await Deno.makeTempDir({ prefix: "svc-mp-done-" });
    try {
      const a = randomBytes(5 * MiB), b = randomBytes(7);
      let url: string, xml: string;
      {
        await using svc = await startSvc({ dataDir });
        const s3 = svc.client();
        await s3.send(new S3.CreateBucketCommand({ Bucket: "rsb" }));
        const { uploadId, parts } = await upload(s3, "rsb", "k", [a, b]);
        xml = completeXml(parts);
        url = `/rsb/k?uploadId=${uploadId}`;
        assert.equal((await raw(`${svc.url}${url}`, "POST", xml)).status, 200);
        s3.destroy();
      }
      {
        await using svc = await startSvc({ dataDir });
        const again = await raw(`${svc.url}${url}`, "POST", xml);
        assert.deepEqual([again.status, again.etag], [200, multipartEtag([a, b])]);
      }
      // Records older than the idle TTL are swept at start: then the id is unknown again.
      await new Promise((r) => setTimeout(r, 800));
      {
        await using svc = await startSvc({
          dataDir,
          env: { SVC_MULTIPART_IDLE_TTL_HOURS: "0.0001" },
        });
        const gone = await raw(`${svc.url}${url}`, "POST", xml);
        assert.deepEqual([gone.status, gone.code], [404, "NoSuchUpload"]);
      }
    } finally {
      await Deno.remove(dataDir, { recursive: true });
    }
  },
});

Deno.test("multipart: GET/HEAD ?partNumber=N reads one part", async (t) => {
  await using svc = await startSvc();
  const s3 = svc.client();
  await s3.send(new S3.CreateBucketCommand({ Bucket: "pnb" }));
  const p1 = randomBytes(5 * MiB), p2 = randomBytes(5 * MiB + 3), p3 = randomBytes(1234);
  const { uploadId, parts } = await upload(s3, "pnb", "mp", [p1, p2, p3]);
  await s3.send(
    new S3.CompleteMultipartUploadCommand({
      Bucket: "pnb",
      Key: "mp",
      UploadId: uploadId,
      MultipartUpload: { Parts: parts },
    }),
  );
  const total = p1.length + p2.length + p3.length;

  await t.step("each part: 206, Content-Range, parts count, the part's bytes", async () => {
    let start = 0;
    for (const [i, part] of [p1, p2, p3].entries()) {
      const r = await raw(`${svc.url}/pnb/mp?partNumber=${i + 1}`);
      assert.equal(r.status, 206);
      const end = start + part.length - 1;
      assert.equal(r.headers.get("content-range"), `bytes ${start}-${end}/${total}`);
      assert.equal(r.headers.get("content-length"), String(part.length));
      assert.equal(r.headers.get("x-amz-mp-parts-count"), "3");
      assert.equal(r.headers.get("etag"), multipartEtag([p1, p2, p3]));
      assert.ok(
        r.bytes.length === part.length && md5hex(r.bytes) === md5hex(part),
        `part ${i + 1}`,
      );
      start = end + 1;
    }
  });

  await t.step("HEAD and the SDK's PartNumber", async () => {
    const head = await fetch(`${svc.url}/pnb/mp?partNumber=2`, { method: "HEAD" });
    assert.equal(head.status, 206);
    assert.equal(head.headers.get("content-length"), String(p2.length));
    assert.equal(
      head.headers.get("content-range"),
      `bytes ${p1.length}-${p1.length + p2.length - 1}/${total}`,
    );
    const sdk = await s3.send(new S3.GetObjectCommand({ Bucket: "pnb", Key: "mp", PartNumber: 3 }));
    assert.equal(sdk.PartsCount, 3);
    assert.equal(md5hex(await bytesOf(sdk.Body)), md5hex(p3));
  });

  await t.step(
    "past the last part 416 InvalidPartNumber; bad numbers and Range refused",
    async () => {
      const past = await raw(`${svc.url}/pnb/mp?partNumber=4`);
      assert.deepEqual([past.status, past.code], [416, "InvalidPartNumber"]);
      const headPast = await fetch(`${svc.url}/pnb/mp?partNumber=4`, { method: "HEAD" });
      await headPast.body?.cancel();
      assert.equal(headPast.status, 416);
      for (const bad of ["0", "10001", "x", "-1"]) {
        const r = await raw(`${svc.url}/pnb/mp?partNumber=${bad}`);
        assert.deepEqual([r.status, r.code], [400, "InvalidArgument"], bad);
      }
      const both = await raw(`${svc.url}/pnb/mp?partNumber=1`, "GET", undefined, {
        range: "bytes=0-1",
      });
      assert.deepEqual([both.status, both.code], [400, "InvalidRequest"]);
    },
  );

  await t.step("a plain object is one part: partNumber=1 is all of it (as AWS)", async () => {
    const body = randomBytes(3000);
    await s3.send(new S3.PutObjectCommand({ Bucket: "pnb", Key: "plain", Body: body }));
    const one = await raw(`${svc.url}/pnb/plain?partNumber=1`);
    assert.equal(one.status, 206);
    assert.equal(one.headers.get("content-range"), `bytes 0-2999/3000`);
    assert.equal(one.headers.get("x-amz-mp-parts-count"), null);
    assert.equal(md5hex(one.bytes), md5hex(body));
    const two = await raw(`${svc.url}/pnb/plain?partNumber=2`);
    assert.deepEqual([two.status, two.code], [416, "InvalidPartNumber"]);
  });

  await t.step("a copy keeps the part layout", async () => {
    await s3.send(new S3.CopyObjectCommand({ Bucket: "pnb", Key: "copy", CopySource: "pnb/mp" }));
    const r = await raw(`${svc.url}/pnb/copy?partNumber=3`);
    assert.equal(r.status, 206);
    assert.equal(md5hex(r.bytes), md5hex(p3));
  });
  s3.destroy();
});
