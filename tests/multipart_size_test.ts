/**
 * Black-box size limits (issue 29): `max_object_size` bounds one request body (PUT, one part),
 * `max_passthrough_object_size` the total of a multipart object, judged at Complete.
 */
import assert from "node:assert/strict";
import * as S3 from "@aws-sdk/client-s3";
import { bytesOf, randomBytes, startSvc } from "./helpers/svc.ts";
import { concat, multipartEtag } from "./helpers/multipart.ts";

const MiB = 1024 * 1024;

/** The request fails with this status and S3 error code (the SDK parses the XML Code). */
async function rejects(work: Promise<unknown>, status: number, code: string): Promise<void> {
  const err = await work.then(() => undefined, (e) => e);
  assert.ok(err, `expected ${status} ${code}, but the request succeeded`);
  assert.equal(err.$metadata?.httpStatusCode, status, `${err.name}: ${err.message}`);
  assert.equal(err.name, code);
}

Deno.test("multipart size: parts are bounded by max_object_size, the total by max_passthrough_object_size", async () => {
  await using svc = await startSvc({
    env: {
      SVC_MAX_OBJECT_SIZE: String(6 * MiB),
      SVC_MAX_PASSTHROUGH_OBJECT_SIZE: String(16 * MiB),
    },
  });
  const s3 = svc.client();
  const Bucket = "sizes";
  await s3.send(new S3.CreateBucketCommand({ Bucket }));
  const parts = [1, 2, 3, 4].map(() => randomBytes(5 * MiB));

  // One request body above max_object_size is refused, as a PUT and as a part.
  await rejects(
    s3.send(new S3.PutObjectCommand({ Bucket, Key: "put", Body: randomBytes(7 * MiB) })),
    400,
    "EntityTooLarge",
  );
  await rejects(s3.send(new S3.HeadObjectCommand({ Bucket, Key: "put" })), 404, "NotFound");

  // A plain key completes in place; a .zip key (delta-eligible by name) is streamed through the
  // write path, which must allow the total too (and stores it passthrough: above max_object_size).
  for (const Key of ["big.bin", "big.zip"]) {
    const { UploadId } = await s3.send(new S3.CreateMultipartUploadCommand({ Bucket, Key }));
    const send = (PartNumber: number, Body: Uint8Array) =>
      s3.send(new S3.UploadPartCommand({ Bucket, Key, UploadId, PartNumber, Body }));
    await rejects(send(5, randomBytes(7 * MiB)), 400, "EntityTooLarge");
    const etags: string[] = [];
    for (const [i, body] of parts.entries()) etags.push((await send(i + 1, body)).ETag!);
    const list = (n: number) => etags.slice(0, n).map((ETag, i) => ({ PartNumber: i + 1, ETag }));
    const complete = (n: number) =>
      s3.send(
        new S3.CompleteMultipartUploadCommand({
          Bucket,
          Key,
          UploadId,
          MultipartUpload: { Parts: list(n) },
        }),
      );

    // Four parts total 20 MiB > 16 MiB: refused, and the upload stays for another Complete.
    await rejects(complete(4), 400, "EntityTooLarge");
    await rejects(s3.send(new S3.HeadObjectCommand({ Bucket, Key })), 404, "NotFound");
    // Three parts total 15 MiB: above max_object_size, within max_passthrough_object_size.
    const done = await complete(3);
    assert.equal(done.ETag, multipartEtag(parts.slice(0, 3)));
    const got = await s3.send(new S3.GetObjectCommand({ Bucket, Key }));
    assert.equal(got.ContentLength, 15 * MiB);
    assert.deepEqual(await bytesOf(got.Body), concat(...parts.slice(0, 3)));
  }
  s3.destroy();
});

Deno.test("copy size: CopyObject copies objects above max_object_size up to max_passthrough_object_size", async () => {
  // One data dir for two runs with different bounds (the helper keeps a dir it was given).
  const dataDir = await Deno.makeTempDir({ prefix: "svc-copy-size-" });
  const svc = await startSvc({
    dataDir,
    env: {
      SVC_MAX_OBJECT_SIZE: String(6 * MiB),
      SVC_MAX_PASSTHROUGH_OBJECT_SIZE: String(12 * MiB),
    },
  });
  const s3 = svc.client();
  const Bucket = "copies";
  await s3.send(new S3.CreateBucketCommand({ Bucket }));
  // 10 MiB objects (above max_object_size, within the passthrough bound), made by multipart.
  const make = async (Key: string, parts: Uint8Array[]) => {
    const { UploadId } = await s3.send(new S3.CreateMultipartUploadCommand({ Bucket, Key }));
    const etags: string[] = [];
    for (const [i, Body] of parts.entries()) {
      const sent = await s3.send(
        new S3.UploadPartCommand({ Bucket, Key, UploadId, PartNumber: i + 1, Body }),
      );
      etags.push(sent.ETag!);
    }
    const Parts = etags.map((ETag, i) => ({ PartNumber: i + 1, ETag }));
    await s3.send(
      new S3.CompleteMultipartUploadCommand({ Bucket, Key, UploadId, MultipartUpload: { Parts } }),
    );
  };
  const small = [randomBytes(5 * MiB), randomBytes(5 * MiB)];
  await make("ten.bin", small);
  await make("ten.zip", small);
  for (const Key of ["ten.bin", "ten.zip"]) {
    await s3.send(
      new S3.CopyObjectCommand({ Bucket, Key: `copy-${Key}`, CopySource: `${Bucket}/${Key}` }),
    );
    const got = await s3.send(new S3.GetObjectCommand({ Bucket, Key: `copy-${Key}` }));
    assert.equal(got.ContentLength, 10 * MiB);
    assert.deepEqual(await bytesOf(got.Body), concat(...small));
  }

  // With the passthrough bound lowered below the source, the copy is refused before any byte is
  // written.
  s3.destroy();
  await svc.stop();
  await using lowered = await startSvc({
    dataDir: svc.dataDir,
    env: {
      SVC_MAX_OBJECT_SIZE: String(6 * MiB),
      SVC_MAX_PASSTHROUGH_OBJECT_SIZE: String(8 * MiB),
    },
  });
  const s3b = lowered.client();
  await rejects(
    s3b.send(new S3.CopyObjectCommand({ Bucket, Key: "too-big", CopySource: `${Bucket}/ten.bin` })),
    400,
    "EntityTooLarge",
  );
  await rejects(s3b.send(new S3.HeadObjectCommand({ Bucket, Key: "too-big" })), 404, "NotFound");
  s3b.destroy();
  await lowered.stop();
  await Deno.remove(dataDir, { recursive: true });
});
