/**
 * Black-box test of `max_total_multipart_bytes`: parts held by uploads in progress count against
 * one global cap; a part that would pass it is 503 SlowDown with nothing stored; aborting frees
 * the bytes; a restart remembers what stored parts hold; the gauge shows the bytes held.
 */
import assert from "node:assert/strict";
import * as S3 from "@aws-sdk/client-s3";
import { assertSdkError } from "./helpers/assertions.ts";
import { randomBytes, startSvc } from "./helpers/svc.ts";

const MiB = 1024 * 1024;
const CAP = { SVC_MAX_TOTAL_MULTIPART_BYTES: String(3 * MiB) };

async function heldGauge(url: string): Promise<number> {
  const text = await (await fetch(`${url}/_/metrics`)).text();
  return Number(/^svc_multipart_inflight_bytes (\d+)$/m.exec(text)?.[1]);
}

/** CreateMultipartUpload and UploadPart of `part` in bucket mpb, through `s3`. */
function uploadsIn(s3: S3.S3Client, part: Uint8Array) {
  return {
    start: async (key: string) =>
      (await s3.send(new S3.CreateMultipartUploadCommand({ Bucket: "mpb", Key: key }))).UploadId!,
    put: (key: string, uploadId: string, partNumber = 1) =>
      s3.send(
        new S3.UploadPartCommand({
          Bucket: "mpb",
          Key: key,
          UploadId: uploadId,
          PartNumber: partNumber,
          Body: part,
        }),
      ),
  };
}

Deno.test("max_total_multipart_bytes: one cap across uploads, freed by abort, kept across restarts", async () => {
  const dataDir = await Deno.makeTempDir({ prefix: "svc-mp-budget-" });
  try {
    const part = randomBytes(2 * MiB);
    let second: string;
    {
      await using svc = await startSvc({ dataDir, env: CAP });
      const s3 = svc.client();
      await s3.send(new S3.CreateBucketCommand({ Bucket: "mpb" }));
      const { start, put } = uploadsIn(s3, part);
      const first = await start("a");
      await put("a", first);
      // The same part sent again replaces it: still 2 MiB held, not 4.
      await put("a", first);
      assert.equal(await heldGauge(svc.url), 2 * MiB);
      second = await start("b");
      await assertSdkError(put("b", second), 503, "SlowDown");
      const parts = await s3.send(
        new S3.ListPartsCommand({ Bucket: "mpb", Key: "b", UploadId: second }),
      );
      assert.equal(parts.Parts?.length ?? 0, 0, "the refused part was not stored");
      await s3.send(
        new S3.AbortMultipartUploadCommand({ Bucket: "mpb", Key: "a", UploadId: first }),
      );
      await put("b", second);
      assert.equal(await heldGauge(svc.url), 2 * MiB);
    }
    await using again = await startSvc({ dataDir, env: CAP });
    const s3 = again.client();
    const { start, put } = uploadsIn(s3, part);
    const third = await start("c");
    await assertSdkError(put("c", third), 503, "SlowDown");
    // Completing b frees its bytes for c.
    const listed = await s3.send(
      new S3.ListPartsCommand({ Bucket: "mpb", Key: "b", UploadId: second }),
    );
    await s3.send(
      new S3.CompleteMultipartUploadCommand({
        Bucket: "mpb",
        Key: "b",
        UploadId: second,
        MultipartUpload: {
          Parts: listed.Parts!.map((p) => ({ PartNumber: p.PartNumber, ETag: p.ETag })),
        },
      }),
    );
    await put("c", third);
    assert.equal(await heldGauge(again.url), 2 * MiB);
  } finally {
    await Deno.remove(dataDir, { recursive: true }).catch(() => {});
  }
});
