import assert from "node:assert/strict";
import {
  CreateBucketCommand,
  GetObjectCommand,
  HeadObjectCommand,
  ListObjectsV2Command,
  PutObjectCommand,
} from "@aws-sdk/client-s3";
import { Upload } from "@aws-sdk/lib-storage";
import { bytesOf, randomBytes, startSvc } from "./helpers/svc.ts";

Deno.test("sdk smoke: put/get/head/list and a streamed multipart upload", async () => {
  await using svc = await startSvc();
  const s3 = svc.client();
  await s3.send(new CreateBucketCommand({ Bucket: "smoke" }));
  const body = randomBytes(100_000);
  await s3.send(
    new PutObjectCommand({
      Bucket: "smoke",
      Key: "a b/ü+%~.bin",
      Body: body,
      Metadata: { x: "1" },
    }),
  );
  const got = await s3.send(new GetObjectCommand({ Bucket: "smoke", Key: "a b/ü+%~.bin" }));
  assert.deepEqual(await bytesOf(got.Body), body);
  assert.equal(got.Metadata?.x, "1");
  const head = await s3.send(new HeadObjectCommand({ Bucket: "smoke", Key: "a b/ü+%~.bin" }));
  assert.equal(head.ContentLength, 100_000);
  const big = randomBytes(12 * 1024 * 1024);
  const stream = new ReadableStream({
    start(c) {
      for (let i = 0; i < big.length; i += 1 << 20) c.enqueue(big.subarray(i, i + (1 << 20)));
      c.close();
    },
  });
  await new Upload({
    client: s3,
    params: { Bucket: "smoke", Key: "big", Body: stream },
    partSize: 5 * 1024 * 1024,
  }).done();
  const back = await s3.send(new GetObjectCommand({ Bucket: "smoke", Key: "big" }));
  assert.deepEqual(await bytesOf(back.Body), big);
  assert.match(back.ETag!, /-3"$/);
  const list = await s3.send(new ListObjectsV2Command({ Bucket: "smoke" }));
  assert.deepEqual(list.Contents?.map((c) => c.Key), ["a b/ü+%~.bin", "big"]);
  s3.destroy();
});
