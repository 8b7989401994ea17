/**
 * Issue 30: kill -9 of one instance of a fleet (three svc instances over one S3 store behind
 * HAProxy, tests/helpers/fleet.ts) in the middle of 20 concurrent multipart uploads through the
 * load balancer. The clients only retry failed requests (the SDK's own retries); every upload
 * must complete through the surviving instances and every object read back byte-identical, also
 * through the killed instance once it is back.
 */
import assert from "node:assert/strict";
import {
  CompleteMultipartUploadCommand,
  CreateMultipartUploadCommand,
  GetObjectCommand,
  UploadPartCommand,
} from "@aws-sdk/client-s3";
import { createHash } from "node:crypto";
import { fleetReason, startFleet } from "./helpers/fleet.ts";
import { randomBytes } from "./helpers/svc.ts";

const BUCKET = "kill";
const MiB = 1024 * 1024;
const UPLOADS = 20;
const PART_SIZES = [5 * MiB, 5 * MiB, 1 * MiB];
const VICTIM = 1;

Deno.test({
  name: "fleet: kill -9 of one instance in the middle of 20 concurrent multipart uploads",
  ignore: fleetReason !== null,
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    await using fleet = await startFleet({ buckets: [BUCKET] });
    // Every part is a distinct window of one random pool: no two parts share their bytes, and the
    // test holds 16 MiB instead of 220.
    const pool = randomBytes(16 * MiB);
    const total = UPLOADS * PART_SIZES.length;
    const stride = Math.floor((pool.length - PART_SIZES[0]) / total);
    const partBytes = (upload: number, part: number) => {
      const offset = (upload * PART_SIZES.length + part) * stride;
      return pool.subarray(offset, offset + PART_SIZES[part]);
    };
    const expected = (upload: number) => {
      const hash = createHash("sha256");
      PART_SIZES.forEach((_, part) => hash.update(partBytes(upload, part)));
      return hash.digest("hex");
    };

    let acked = 0;
    let killedAfter = -1;
    let killing: Promise<void> | undefined;
    const onPartAcked = () => {
      acked++;
      // A third of the parts in: every upload has started, none can have finished.
      if (killing === undefined && acked >= Math.floor(total / 3)) {
        killedAfter = acked;
        killing = fleet.kill(VICTIM);
      }
    };

    const s3 = fleet.client({ maxAttempts: 10 });
    let retried = 0;
    /** Counts answers the SDK needed more than one attempt for. */
    const counted = <T extends { $metadata: { attempts?: number } }>(out: T): T => {
      if ((out.$metadata.attempts ?? 1) > 1) retried++;
      return out;
    };
    const upload = async (index: number) => {
      const Key = `obj-${index}.bin`;
      const created = counted(
        await s3.send(new CreateMultipartUploadCommand({ Bucket: BUCKET, Key })),
      );
      const UploadId = created.UploadId!;
      const parts: { PartNumber: number; ETag: string }[] = [];
      for (let part = 0; part < PART_SIZES.length; part++) {
        const out = counted(
          await s3.send(
            new UploadPartCommand({
              Bucket: BUCKET,
              Key,
              UploadId,
              PartNumber: part + 1,
              Body: partBytes(index, part),
            }),
          ),
        );
        parts.push({ PartNumber: part + 1, ETag: out.ETag! });
        onPartAcked();
      }
      counted(
        await s3.send(
          new CompleteMultipartUploadCommand({
            Bucket: BUCKET,
            Key,
            UploadId,
            MultipartUpload: { Parts: parts },
          }),
        ),
      );
    };
    try {
      const results = await Promise.allSettled(
        Array.from({ length: UPLOADS }, (_, i) => upload(i)),
      );
      await killing;
      const answers = await fleet.requests();
      const victimAnswers = answers.filter((r) => r.instance === VICTIM).length;
      console.log(
        `killed svc${VICTIM} after ${killedAfter} of ${total} parts; ${retried} requests ` +
          `needed a retry; svc${VICTIM} answered ${victimAnswers} of ${answers.length}`,
      );
      const failed = results.flatMap((r, i) =>
        r.status === "rejected"
          ? [`obj-${i}.bin: ${(r.reason as Error).name}: ${(r.reason as Error).message}`]
          : []
      );
      assert.deepEqual(failed, [], `${failed.length} of ${UPLOADS} uploads failed`);
      assert.ok(killedAfter > 0 && killedAfter < total, `killed after ${killedAfter} parts`);

      const sha = async (client: typeof s3, key: string) => {
        const out = await client.send(new GetObjectCommand({ Bucket: BUCKET, Key: key }));
        const hash = createHash("sha256");
        for await (const chunk of out.Body as AsyncIterable<Uint8Array>) hash.update(chunk);
        return hash.digest("hex");
      };
      for (let i = 0; i < UPLOADS; i++) {
        assert.equal(await sha(s3, `obj-${i}.bin`), expected(i), `obj-${i}.bin`);
      }
      // The killed instance, back on its data directory, serves them too.
      await fleet.restart(VICTIM);
      await fleet.waitBalanced();
      const victim = fleet.instanceClient(VICTIM);
      try {
        for (let i = 0; i < UPLOADS; i++) {
          assert.equal(await sha(victim, `obj-${i}.bin`), expected(i), `obj-${i}.bin on svc1`);
        }
      } finally {
        victim.destroy();
      }
    } finally {
      s3.destroy();
    }
  },
});
