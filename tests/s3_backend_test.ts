/**
 * svc in front of real S3 servers: a second svc (filesystem storage, its buckets with
 * `compression: false`, so the front's `reference.bin` and `*.delta` are ordinary keys there) and
 * s3rver (npm). The front is a black box reached with the SDK; the backing stores are inspected
 * only through their own S3 API.
 */
import {
  CompleteMultipartUploadCommand,
  CopyObjectCommand,
  CreateBucketCommand,
  CreateMultipartUploadCommand,
  DeleteBucketCommand,
  DeleteObjectCommand,
  DeleteObjectsCommand,
  GetObjectCommand,
  HeadObjectCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  S3Client,
  UploadPartCommand,
} from "@aws-sdk/client-s3";
import assert from "node:assert/strict";
import {
  bytesOf,
  clientFor,
  md5,
  sha256,
  startBackingSvc,
  startFront,
} from "./helpers/s3-front.ts";
import { s3rverUnavailable, type S3Server, startS3rver } from "./helpers/s3-servers.ts";
import { randomBytes, type SvcProcess } from "./helpers/svc.ts";

const MiB = 1024 * 1024;

/** The data-plane scenario every backing store must pass. */
async function dataPlane(front: SvcProcess, backing: S3Client, bucket: string) {
  const s3 = front.client({ checksums: false });
  await s3.send(new CreateBucketCommand({ Bucket: bucket }));

  // An object another client put straight on the backend (no svc metadata, no sha256): it reads
  // and copies like any other (the copy checks its md5 instead).
  const foreign = randomBytes(70_000);
  await backing.send(new PutObjectCommand({ Bucket: bucket, Key: "foreign/a", Body: foreign }));
  await s3.send(
    new CopyObjectCommand({ Bucket: bucket, Key: "foreign/b", CopySource: `${bucket}/foreign/a` }),
  );
  assert.equal(sha256(await bytesOf(s3, bucket, "foreign/b")), sha256(foreign));
  await s3.send(
    new DeleteObjectsCommand({
      Bucket: bucket,
      Delete: { Objects: [{ Key: "foreign/a" }, { Key: "foreign/b" }] },
    }),
  );

  // Plain objects: metadata, ranges, conditionals.
  const body = randomBytes(300_000);
  const put = await s3.send(
    new PutObjectCommand({
      Bucket: bucket,
      Key: "docs/a b+c%.txt",
      Body: body,
      ContentType: "text/plain",
      Metadata: { owner: "team-a", "svc-like": "user value" },
      CacheControl: "max-age=60",
    }),
  );
  assert.equal(put.ETag, `"${md5(body)}"`);
  const head = await s3.send(new HeadObjectCommand({ Bucket: bucket, Key: "docs/a b+c%.txt" }));
  assert.equal(head.ContentLength, body.length);
  assert.equal(head.ContentType, "text/plain");
  assert.equal(head.CacheControl, "max-age=60");
  assert.deepEqual(head.Metadata, { owner: "team-a", "svc-like": "user value" });
  assert.equal(sha256(await bytesOf(s3, bucket, "docs/a b+c%.txt")), sha256(body));
  assert.deepEqual(
    await bytesOf(s3, bucket, "docs/a b+c%.txt", "bytes=1000-1999"),
    body.subarray(1000, 2000),
  );
  await assert.rejects(
    () =>
      s3.send(
        new GetObjectCommand({ Bucket: bucket, Key: "docs/a b+c%.txt", IfNoneMatch: put.ETag }),
      ),
    (err: { $metadata?: { httpStatusCode?: number } }) => err.$metadata?.httpStatusCode === 304,
  );

  // Listing: pages of two with a delimiter.
  for (const key of ["list/1", "list/2", "list/3", "list/sub/x", "list/sub/y"]) {
    await s3.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: key }));
  }
  const seen: string[] = [];
  let token: string | undefined;
  do {
    const page = await s3.send(
      new ListObjectsV2Command({
        Bucket: bucket,
        Prefix: "list/",
        Delimiter: "/",
        MaxKeys: 2,
        ContinuationToken: token,
      }),
    );
    seen.push(...(page.Contents ?? []).map((o) => o.Key!));
    seen.push(...(page.CommonPrefixes ?? []).map((p) => p.Prefix!));
    token = page.NextContinuationToken;
  } while (token);
  assert.deepEqual(seen.sort(), ["list/1", "list/2", "list/3", "list/sub/"]);

  // Multipart (two 5 MiB parts and a tail), then a copy of it.
  const parts = [randomBytes(5 * MiB), randomBytes(5 * MiB), randomBytes(1000)];
  const upload = await s3.send(
    new CreateMultipartUploadCommand({ Bucket: bucket, Key: "big.bin" }),
  );
  const etags: string[] = [];
  for (const [index, part] of parts.entries()) {
    const out = await s3.send(
      new UploadPartCommand({
        Bucket: bucket,
        Key: "big.bin",
        UploadId: upload.UploadId,
        PartNumber: index + 1,
        Body: part,
      }),
    );
    etags.push(out.ETag!);
  }
  const done = await s3.send(
    new CompleteMultipartUploadCommand({
      Bucket: bucket,
      Key: "big.bin",
      UploadId: upload.UploadId,
      MultipartUpload: { Parts: etags.map((ETag, i) => ({ ETag, PartNumber: i + 1 })) },
    }),
  );
  assert.match(done.ETag!, /-3"$/);
  const whole = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  parts.reduce((at, p) => (whole.set(p, at), at + p.length), 0);
  assert.equal(sha256(await bytesOf(s3, bucket, "big.bin")), sha256(whole));
  await s3.send(
    new CopyObjectCommand({ Bucket: bucket, Key: "big-copy.bin", CopySource: `${bucket}/big.bin` }),
  );
  const copyHead = await s3.send(new HeadObjectCommand({ Bucket: bucket, Key: "big-copy.bin" }));
  assert.equal(copyHead.ETag, done.ETag);
  const listed = await s3.send(new ListObjectsV2Command({ Bucket: bucket, Prefix: "big" }));
  assert.deepEqual(
    listed.Contents?.map((o) => [o.Key, o.Size, o.ETag]),
    [["big-copy.bin", whole.length, done.ETag], ["big.bin", whole.length, done.ETag]],
  );

  // Delta artifacts: a baseline and deltas on the backing store, logical objects in front.
  const v1 = randomBytes(2 * MiB);
  const v2 = v1.slice();
  v2.set(randomBytes(4096), MiB);
  for (const [key, data] of [["rel/v1.tar", v1], ["rel/v2.tar", v2]] as const) {
    await s3.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: data }));
  }
  assert.equal(sha256(await bytesOf(s3, bucket, "rel/v2.tar")), sha256(v2));
  assert.deepEqual(
    await bytesOf(s3, bucket, "rel/v2.tar", "bytes=-10"),
    v2.subarray(v2.length - 10),
  );
  const rel = await s3.send(new ListObjectsV2Command({ Bucket: bucket, Prefix: "rel/" }));
  assert.deepEqual(rel.Contents?.map((o) => [o.Key, o.Size]), [
    ["rel/v1.tar", v1.length],
    ["rel/v2.tar", v2.length],
  ]);
  const stored = await backing.send(new ListObjectsV2Command({ Bucket: bucket, Prefix: "rel/" }));
  const storedNames = stored.Contents?.map((o) => o.Key!) ?? [];
  assert.deepEqual(storedNames, ["rel/v1.tar.delta", "rel/v2.tar.delta"]);
  // The default policy, auto, keeps the shared baseline of `rel/v*.tar` and one marker per delta
  // under `.dg/<id>/`, through the backend's metadata like any stored object.
  const group = await backing.send(new ListObjectsV2Command({ Bucket: bucket, Prefix: ".dg/" }));
  const groupNames = group.Contents?.map((o) => o.Key!) ?? [];
  assert.equal(groupNames.filter((n) => /^\.dg\/[0-9a-f]{32}\/reference\.bin$/.test(n)).length, 1);
  assert.equal(
    groupNames.filter((n) => /\/refs\/[0-9a-f]{64}(\.[0-9a-f]{16})?$/.test(n)).length,
    2,
  );
  assert.equal(groupNames.length, 3, groupNames.join(","));
  const v2Delta = stored.Contents!.find((o) => o.Key === "rel/v2.tar.delta")!;
  assert.ok(v2Delta.Size! < 64 * 1024, `delta of ${v2Delta.Size} bytes`);

  // Deletes: single, batch, recursive; the baseline goes with the last delta.
  await s3.send(new DeleteObjectCommand({ Bucket: bucket, Key: "rel/v1.tar" }));
  await s3.send(
    new DeleteObjectsCommand({
      Bucket: bucket,
      Delete: { Objects: [{ Key: "rel/v2.tar" }, { Key: "big.bin" }, { Key: "big-copy.bin" }] },
    }),
  );
  await s3.send(new DeleteObjectCommand({ Bucket: bucket, Key: "list/" }));
  await s3.send(new DeleteObjectCommand({ Bucket: bucket, Key: "docs/a b+c%.txt" }));
  const left = await backing.send(new ListObjectsV2Command({ Bucket: bucket }));
  assert.deepEqual(left.Contents ?? [], []);
  await s3.send(new DeleteBucketCommand({ Bucket: bucket }));
}

/** Runs the data-plane scenario on a front svc whose only backend is `backing`. */
async function dataPlaneOn(backing: S3Server & { svc?: SvcProcess }): Promise<void> {
  try {
    const front = await startFront(backing);
    try {
      await dataPlane(front, clientFor(backing), "plane");
    } finally {
      await front.stop();
    }
  } finally {
    await backing.stop();
    if (backing.svc) await Deno.remove(backing.svc.dataDir, { recursive: true }).catch(() => {});
  }
}

Deno.test("s3 backend: the data plane on a second svc", async () => {
  await dataPlaneOn(await startBackingSvc(["plane"]));
});

const s3rverMissing = await s3rverUnavailable();

Deno.test({
  name: "s3 backend: the data plane on s3rver",
  ignore: s3rverMissing !== undefined,
  fn: async () => await dataPlaneOn(await startS3rver()),
});
if (s3rverMissing) console.warn(`s3rver tests skipped: ${s3rverMissing}`);
