/**
 * Black-box tests of `replication_target_only`: every client write shape to the bucket answers
 * 403 AccessDenied, through its own name and through an alias naming the same real bucket;
 * reads go on.
 */
import assert from "node:assert/strict";
import * as S3 from "@aws-sdk/client-s3";
import { assertError, assertSdkError, codeOf } from "./helpers/assertions.ts";
import { signedPostForm } from "./helpers/post-form.ts";
import { signedFetch, startSvc } from "./helpers/svc.ts";

const CONFIG = `
storage:
  buckets:
    mirror:
      replication_target_only: true
    mirror-view:
      alias: mirror
`;

Deno.test("replication_target_only: client writes refused, also through an alias; reads go on", async (t) => {
  const dataDir = await Deno.makeTempDir({ prefix: "svc-target-only-" });
  try {
    // Seed without the policy: the replicated content a mirror would hold.
    {
      await using svc = await startSvc({ dataDir });
      const s3 = svc.client();
      for (const bucket of ["mirror", "source"]) {
        await s3.send(new S3.CreateBucketCommand({ Bucket: bucket }));
      }
      await s3.send(new S3.PutObjectCommand({ Bucket: "mirror", Key: "a.txt", Body: "replica" }));
      await s3.send(new S3.PutObjectCommand({ Bucket: "source", Key: "s.txt", Body: "source" }));
    }
    await Deno.writeTextFile(`${dataDir}/svc.yaml`, CONFIG);
    await using svc = await startSvc({ dataDir });
    const s3 = svc.client();

    for (const bucket of ["mirror", "mirror-view"]) {
      await t.step(`every write shape through "${bucket}" is refused`, async () => {
        const denied = async (response: Promise<Response>) => {
          const res = await response;
          const text = await res.text();
          assert.equal(res.status, 403, text);
          assert.equal(codeOf(text), "AccessDenied", text);
          assert.match(text, /replication target/);
        };
        const url = `${svc.url}/${bucket}`;
        await denied(signedFetch(`${url}/new.txt`, { method: "PUT", body: "x" }));
        await denied(fetch(url, { method: "POST", body: signedPostForm(bucket, "f", "x") }));
        await denied(signedFetch(`${url}/mp?uploads`, { method: "POST" }));
        await denied(
          signedFetch(`${url}/mp?partNumber=1&uploadId=u`, { method: "PUT", body: "p" }),
        );
        await denied(
          signedFetch(`${url}/mp?partNumber=1&uploadId=u`, {
            method: "PUT",
            headers: { "x-amz-copy-source": "source/s.txt" },
          }),
        );
        await denied(
          signedFetch(`${url}/mp?uploadId=u`, {
            method: "POST",
            body: "<CompleteMultipartUpload/>",
          }),
        );
        await denied(
          signedFetch(`${url}/copy.txt`, {
            method: "PUT",
            headers: { "x-amz-copy-source": "source/s.txt" },
          }),
        );
        await denied(signedFetch(`${url}/a.txt`, { method: "DELETE" }));
        await denied(signedFetch(`${url}/dir/`, { method: "DELETE" }));
        const tagging =
          "<Tagging><TagSet><Tag><Key>k</Key><Value>v</Value></Tag></TagSet></Tagging>";
        await denied(signedFetch(`${url}/a.txt?tagging`, { method: "PUT", body: tagging }));
        await denied(signedFetch(`${url}/a.txt?tagging`, { method: "DELETE" }));
        await denied(
          signedFetch(`${url}?delete`, {
            method: "POST",
            body: "<Delete><Object><Key>a.txt</Key></Object></Delete>",
          }),
        );
        await denied(signedFetch(url, { method: "DELETE" }));
        await denied(signedFetch(url, { method: "PUT" }));
      });
    }

    await t.step("the SDK sees AccessDenied too", async () => {
      await assertSdkError(
        s3.send(new S3.PutObjectCommand({ Bucket: "mirror", Key: "b", Body: "x" })),
        403,
        "AccessDenied",
      );
      await assertSdkError(
        s3.send(
          new S3.CopyObjectCommand({ Bucket: "mirror-view", Key: "c", CopySource: "source/s.txt" }),
        ),
        403,
        "AccessDenied",
      );
    });

    await t.step("reads of the target bucket go on, and it can be copied from", async () => {
      const got = await s3.send(new S3.GetObjectCommand({ Bucket: "mirror", Key: "a.txt" }));
      assert.equal(await got.Body?.transformToString(), "replica");
      const head = await s3.send(new S3.HeadObjectCommand({ Bucket: "mirror", Key: "a.txt" }));
      assert.equal(head.ContentLength, 7);
      const listing = await s3.send(new S3.ListObjectsV2Command({ Bucket: "mirror" }));
      assert.deepEqual(listing.Contents?.map((o) => o.Key), ["a.txt"]);
      await s3.send(
        new S3.CopyObjectCommand({ Bucket: "source", Key: "copied", CopySource: "mirror/a.txt" }),
      );
      // Aborting an upload only discards parts: not gated (here the upload does not exist).
      await assertError(
        signedFetch(`${svc.url}/mirror/mp?uploadId=nope`, { method: "DELETE" }),
        404,
        "NoSuchUpload",
      );
    });

    await t.step("other buckets stay writable", async () => {
      await s3.send(new S3.PutObjectCommand({ Bucket: "source", Key: "more", Body: "ok" }));
    });
  } finally {
    await Deno.remove(dataDir, { recursive: true }).catch(() => {});
  }
});
