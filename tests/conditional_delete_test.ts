/**
 * DeleteObject with If-Match, as AWS S3 answers it: the object goes only while its ETag is the one
 * named (204), another ETag is 412 PreconditionFailed and leaves the object, a missing key is 404.
 * Several svc instances over a svc backend rely on it (docs/DELTA.md "Several instances over one
 * backend").
 */
import assert from "node:assert/strict";
import {
  CreateBucketCommand,
  DeleteObjectCommand,
  HeadObjectCommand,
  PutObjectCommand,
  S3ServiceException,
} from "@aws-sdk/client-s3";
import { startSvc } from "./helpers/svc.ts";

Deno.test({
  name: "DeleteObject: If-Match deletes only the version named",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    const svc = await startSvc();
    const s3 = svc.client();
    try {
      await s3.send(new CreateBucketCommand({ Bucket: "cond" }));
      const first = await s3.send(new PutObjectCommand({ Bucket: "cond", Key: "k", Body: "one" }));
      const second = await s3.send(new PutObjectCommand({ Bucket: "cond", Key: "k", Body: "two" }));
      const status = async (ifMatch: string, key = "k") => {
        try {
          const out = await s3.send(
            new DeleteObjectCommand({ Bucket: "cond", Key: key, IfMatch: ifMatch }),
          );
          return out.$metadata.httpStatusCode;
        } catch (err) {
          assert.ok(err instanceof S3ServiceException, String(err));
          return err.$metadata.httpStatusCode;
        }
      };
      assert.equal(await status(first.ETag!), 412, "an overwritten version is not deleted");
      const head = await s3.send(new HeadObjectCommand({ Bucket: "cond", Key: "k" }));
      assert.equal(head.ETag, second.ETag, "the newer write is still there");
      assert.equal(await status(second.ETag!), 204);
      await assert.rejects(s3.send(new HeadObjectCommand({ Bucket: "cond", Key: "k" })));
      assert.equal(await status(second.ETag!), 404, "nothing to match");
      assert.equal(await status(second.ETag!, "never"), 404);
    } finally {
      s3.destroy();
      await svc.stop();
    }
  },
});
