/**
 * Black-box tests of bucket quotas (`storage.buckets.<bucket>.quota_bytes`): a write that would
 * pass the quota answers 403 QuotaExceeded, deletes bring a bucket back under, and quota 0
 * freezes every write shape while reads go on.
 */
import assert from "node:assert/strict";
import * as S3 from "@aws-sdk/client-s3";
import { assertError, assertSdkError, codeOf } from "./helpers/assertions.ts";
import { signedPostForm } from "./helpers/post-form.ts";
import { signedFetch, startSvc } from "./helpers/svc.ts";

const CONFIG = `
storage:
  buckets:
    capped:
      quota_bytes: 1000
    capped-mp:
      quota_bytes: 1000
    frozen:
      quota_bytes: 0
`;

const bytes = (n: number) => new Uint8Array(n).fill(97);

Deno.test("quota: overshoot refused, deletes bring the bucket back under, quota 0 freezes", async (t) => {
  const dataDir = await Deno.makeTempDir({ prefix: "svc-quota-" });
  try {
    // Seed without the policy, so the frozen bucket holds an object to read and to try to delete.
    {
      await using svc = await startSvc({ dataDir });
      const s3 = svc.client();
      for (const bucket of ["capped", "capped-mp", "frozen", "other"]) {
        await s3.send(new S3.CreateBucketCommand({ Bucket: bucket }));
      }
      await s3.send(new S3.PutObjectCommand({ Bucket: "frozen", Key: "keep.txt", Body: "kept" }));
      await s3.send(new S3.PutObjectCommand({ Bucket: "other", Key: "src", Body: bytes(700) }));
    }
    await Deno.writeTextFile(`${dataDir}/svc.yaml`, CONFIG);
    await using svc = await startSvc({ dataDir });
    const s3 = svc.client();
    const put = (bucket: string, key: string, size: number) =>
      signedFetch(`${svc.url}/${bucket}/${key}`, { method: "PUT", body: bytes(size) });

    await t.step("writes within the quota pass; one that would pass it is refused", async () => {
      assert.equal((await put("capped", "a", 600)).status, 200);
      const refused = await put("capped", "b", 500);
      const text = await refused.text();
      assert.equal(refused.status, 403, text);
      assert.equal(codeOf(text), "QuotaExceeded");
      assert.match(text, /bucket &quot;capped&quot;|bucket "capped"/);
      assert.match(text, /1000 bytes/);
      assert.equal((await put("capped", "b", 400)).status, 200); // exactly at the quota
    });

    await t.step("at the quota every write that adds bytes is refused", async () => {
      await assertError(put("capped", "c", 1), 403, "QuotaExceeded");
      await assertSdkError(
        s3.send(new S3.CopyObjectCommand({ Bucket: "capped", Key: "c", CopySource: "other/src" })),
        403,
        "QuotaExceeded",
      );
      await assertSdkError(
        s3.send(new S3.CreateMultipartUploadCommand({ Bucket: "capped", Key: "mp" })),
        403,
        "QuotaExceeded",
      );
      const form = await fetch(`${svc.url}/capped`, {
        method: "POST",
        body: signedPostForm("capped", "posted", "hello"),
      });
      await assertError(form, 403, "QuotaExceeded");
    });

    await t.step("deleting brings the bucket back under; the write then passes", async () => {
      await s3.send(new S3.DeleteObjectCommand({ Bucket: "capped", Key: "a" }));
      assert.equal((await put("capped", "c", 500)).status, 200);
      // 900 used: a 700-byte copy would pass the quota, a POST of 5 bytes does not.
      await assertSdkError(
        s3.send(new S3.CopyObjectCommand({ Bucket: "capped", Key: "d", CopySource: "other/src" })),
        403,
        "QuotaExceeded",
      );
      const form = await fetch(`${svc.url}/capped`, {
        method: "POST",
        body: signedPostForm("capped", "posted", "hello"),
      });
      assert.equal(form.status, 204, await form.text());
      // Overwrites count the difference: "c" (500) replaced by 595 bytes reaches 1000 exactly.
      assert.equal((await put("capped", "c", 595)).status, 200);
      await assertError(put("capped", "e", 1), 403, "QuotaExceeded");
      const batch = await s3.send(
        new S3.DeleteObjectsCommand({
          Bucket: "capped",
          Delete: { Objects: [{ Key: "b" }, { Key: "c" }] },
        }),
      );
      assert.equal(batch.Deleted?.length, 2);
      assert.equal((await put("capped", "e", 900)).status, 200);
    });

    await t.step("CompleteMultipartUpload is judged on the upload's total", async () => {
      const { UploadId } = await s3.send(
        new S3.CreateMultipartUploadCommand({ Bucket: "capped-mp", Key: "big" }),
      );
      const part = await s3.send(
        new S3.UploadPartCommand({
          Bucket: "capped-mp",
          Key: "big",
          UploadId,
          PartNumber: 1,
          Body: bytes(600),
        }),
      );
      assert.equal((await put("capped-mp", "small", 500)).status, 200);
      const complete = () =>
        s3.send(
          new S3.CompleteMultipartUploadCommand({
            Bucket: "capped-mp",
            Key: "big",
            UploadId,
            MultipartUpload: { Parts: [{ PartNumber: 1, ETag: part.ETag }] },
          }),
        );
      await assertSdkError(complete(), 403, "QuotaExceeded");
      await s3.send(new S3.DeleteObjectCommand({ Bucket: "capped-mp", Key: "small" }));
      await complete();
      const head = await s3.send(new S3.HeadObjectCommand({ Bucket: "capped-mp", Key: "big" }));
      assert.equal(head.ContentLength, 600);
      await assertError(put("capped-mp", "more", 401), 403, "QuotaExceeded");
    });

    await t.step("quota 0 freezes every write shape; reads go on", async () => {
      await assertError(put("frozen", "x", 1), 403, "QuotaExceeded");
      await assertError(put("frozen", "x", 0), 403, "QuotaExceeded");
      const form = await fetch(`${svc.url}/frozen`, {
        method: "POST",
        body: signedPostForm("frozen", "posted", "hello"),
      });
      await assertError(form, 403, "QuotaExceeded");
      await assertSdkError(
        s3.send(new S3.CopyObjectCommand({ Bucket: "frozen", Key: "c", CopySource: "other/src" })),
        403,
        "QuotaExceeded",
      );
      await assertSdkError(
        s3.send(new S3.CreateMultipartUploadCommand({ Bucket: "frozen", Key: "mp" })),
        403,
        "QuotaExceeded",
      );
      await assertError(
        signedFetch(`${svc.url}/frozen/mp?partNumber=1&uploadId=x`, { method: "PUT", body: "p" }),
        403,
        "QuotaExceeded",
      );
      await assertError(
        signedFetch(`${svc.url}/frozen/mp?uploadId=x`, {
          method: "POST",
          body: "<CompleteMultipartUpload/>",
        }),
        403,
        "QuotaExceeded",
      );
      await assertSdkError(
        s3.send(new S3.DeleteObjectCommand({ Bucket: "frozen", Key: "keep.txt" })),
        403,
        "QuotaExceeded",
      );
      await assertSdkError(
        s3.send(
          new S3.DeleteObjectsCommand({
            Bucket: "frozen",
            Delete: { Objects: [{ Key: "keep.txt" }] },
          }),
        ),
        403,
        "QuotaExceeded",
      );
      await assertSdkError(
        s3.send(new S3.DeleteBucketCommand({ Bucket: "frozen" })),
        403,
        "QuotaExceeded",
      );
      const kept = await s3.send(new S3.GetObjectCommand({ Bucket: "frozen", Key: "keep.txt" }));
      assert.equal(await kept.Body?.transformToString(), "kept");
      await s3.send(
        new S3.CopyObjectCommand({
          Bucket: "other",
          Key: "from-frozen",
          CopySource: "frozen/keep.txt",
        }),
      );
      const listing = await s3.send(new S3.ListObjectsV2Command({ Bucket: "frozen" }));
      assert.deepEqual(listing.Contents?.map((o) => o.Key), ["keep.txt"]);
    });
  } finally {
    await Deno.remove(dataDir, { recursive: true }).catch(() => {});
  }
});
