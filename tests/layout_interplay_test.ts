/**
 * Features that meet in the filesystem layout, driven together through the S3 API: an object kept
 * as multipart extents that must move inside a directory when a key below it arrives (nesting),
 * then gets tags (an in-place metadata rewrite), is listed, read, read by part, and deleted, which
 * releases its extents. Each piece has its own suite; this one checks they compose.
 */
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import * as S3 from "@aws-sdk/client-s3";
import { bytesOf, objectsOnLocalDisk, randomBytes, startSvc } from "./helpers/svc.ts";

const MiB = 1024 * 1024;
const sha256hex = (b: Uint8Array) => createHash("sha256").update(b).digest("hex");

async function extentDirs(dataDir: string): Promise<string[]> {
  const names = await Array.fromAsync(
    Deno.readDir(`${dataDir}/.svc/extents`),
    (entry) => entry.name,
  ).catch(() => [] as string[]);
  return names.filter((name) => !name.startsWith("."));
}

Deno.test("layout interplay: a multipart object nested, tagged, listed and deleted", async () => {
  await using svc = await startSvc();
  const s3 = svc.client();
  const Bucket = "mix";
  await s3.send(new S3.CreateBucketCommand({ Bucket }));
  const parts = [randomBytes(5 * MiB), randomBytes(1234)];
  const all = new Uint8Array(parts[0].length + parts[1].length);
  all.set(parts[0]);
  all.set(parts[1], parts[0].length);

  const { UploadId } = await s3.send(
    new S3.CreateMultipartUploadCommand({ Bucket, Key: "a/b", Tagging: "stage=upload" }),
  );
  const done = await Promise.all(parts.map(async (Body, i) => ({
    PartNumber: i + 1,
    ETag: (await s3.send(
      new S3.UploadPartCommand({ Bucket, Key: "a/b", UploadId, PartNumber: i + 1, Body }),
    )).ETag,
  })));
  await s3.send(
    new S3.CompleteMultipartUploadCommand({
      Bucket,
      Key: "a/b",
      UploadId,
      MultipartUpload: { Parts: done },
    }),
  );
  if (objectsOnLocalDisk) assert.equal((await extentDirs(svc.dataDir)).length, 1);

  // A key below it turns a/b's path into a directory: the object moves inside it.
  await s3.send(new S3.PutObjectCommand({ Bucket, Key: "a/b/c", Body: "below" }));
  const read = await s3.send(new S3.GetObjectCommand({ Bucket, Key: "a/b" }));
  assert.equal(sha256hex(await bytesOf(read.Body)), sha256hex(all));
  assert.equal(read.TagCount, 1);

  // Tags rewritten in place keep the bytes (and the extents they live in).
  await s3.send(
    new S3.PutObjectTaggingCommand({
      Bucket,
      Key: "a/b",
      Tagging: { TagSet: [{ Key: "stage", Value: "release" }, { Key: "team", Value: "x" }] },
    }),
  );
  const tags = await s3.send(new S3.GetObjectTaggingCommand({ Bucket, Key: "a/b" }));
  assert.deepEqual(tags.TagSet, [{ Key: "stage", Value: "release" }, { Key: "team", Value: "x" }]);
  const part2 = await s3.send(new S3.GetObjectCommand({ Bucket, Key: "a/b", PartNumber: 2 }));
  assert.equal(part2.PartsCount, 2);
  assert.equal(sha256hex(await bytesOf(part2.Body)), sha256hex(parts[1]));
  const again = await s3.send(new S3.GetObjectCommand({ Bucket, Key: "a/b" }));
  assert.equal(sha256hex(await bytesOf(again.Body)), sha256hex(all));

  const listed = await s3.send(new S3.ListObjectsV2Command({ Bucket }));
  assert.deepEqual(
    listed.Contents?.map((o) => [o.Key, o.Size]),
    [["a/b", all.length], ["a/b/c", 5]],
  );

  await s3.send(new S3.DeleteObjectCommand({ Bucket, Key: "a/b" }));
  await assert.rejects(s3.send(new S3.HeadObjectCommand({ Bucket, Key: "a/b" })));
  const left = await s3.send(new S3.GetObjectCommand({ Bucket, Key: "a/b/c" }));
  assert.equal(new TextDecoder().decode(await bytesOf(left.Body)), "below");
  if (objectsOnLocalDisk) {
    // Extents are released once no read holds them; give the release its moment.
    for (let i = 0; i < 50 && (await extentDirs(svc.dataDir)).length > 0; i++) {
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    assert.deepEqual(await extentDirs(svc.dataDir), []);
  }
});
