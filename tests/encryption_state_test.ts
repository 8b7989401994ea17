/**
 * Black-box tests of what an encrypted backend leaves in svc's own state directory, and of damage
 * found through ranges (issue 26): multipart parts in flight are sealed at rest like the objects
 * they become (no file under the data directory, `.svc/` included, holds their plaintext), the
 * completed object reads back whole, by range and by `partNumber`; a truncated sealed object
 * answers 5xx to every read, suffix ranges included, never a 416 or wrong bytes.
 */
import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import {
  CompleteMultipartUploadCommand,
  CreateMultipartUploadCommand,
  GetObjectCommand,
  PutObjectCommand,
  UploadPartCommand,
} from "@aws-sdk/client-s3";
import { ACCESS_KEY, bytesOf, SECRET_KEY, signedFetch as fetch, startSvc } from "./helpers/svc.ts";
import { md5Hex } from "./helpers/assertions.ts";
import { concat, multipartEtag } from "./helpers/multipart.ts";
import { filesUnder, markedBytes } from "./helpers/files.ts";

const BUCKET = "vaulted";
const MiB = 1024 * 1024;
const KEY = "c3".repeat(32);
const MARKER = "PART-MARKER-51e7a";

const marked = (size: number) => markedBytes(size, MARKER);

/** Every file under `dir`, recursively (hidden ones and `.svc/` included). */

/**
 * Starts svc with one encrypted backend: its data directory (filesystem), or a second svc it
 * reaches as an S3 store (`s3`), with the state directory in the data directory either way.
 */
async function startEncrypted(backend: "filesystem" | "s3" = "filesystem") {
  const root = await Deno.makeTempDir({ prefix: "svc-encstate-" });
  const backing = backend === "s3" ? await startSvc({ backing: true }) : undefined;
  await Deno.writeTextFile(
    `${root}/svc.yaml`,
    backing
      ? "storage:\n  backend_encryption:\n    mode: aes256-gcm-proxy\n"
      : "storage:\n  backends:\n    - name: vault\n      type: filesystem\n      path: " +
        `${root}\n      encryption:\n        mode: aes256-gcm-proxy\n`,
  );
  const svc = await startSvc({
    dataDir: root,
    env: {
      SVC_CONFIG: `${root}/svc.yaml`,
      ...(backing
        ? {
          SVC_S3_ENDPOINT: backing.url,
          SVC_BE_AWS_ACCESS_KEY_ID: ACCESS_KEY,
          SVC_BE_AWS_SECRET_ACCESS_KEY: SECRET_KEY,
          SVC_ENCRYPTION_KEY: KEY,
        }
        : { SVC_BACKEND_VAULT_ENCRYPTION_KEY: KEY }),
    },
  });
  const stop = async () => {
    await svc.stop();
    await backing?.stop();
    await Deno.remove(root, { recursive: true }).catch(() => {});
  };
  return { svc, root, s3: svc.client(), [Symbol.asyncDispose]: stop };
}

for (const backend of ["filesystem", "s3"] as const) {
  Deno.test(`encrypted bucket (${backend}): multipart parts in flight hold no plaintext anywhere under the data dir`, async () => {
    await using env = await startEncrypted(backend);
    await sealedMultipart(env);
  });
}

/** Parts in flight sealed; the completed object reads back whole, by range and by part. */
async function sealedMultipart({ svc, root, s3 }: Awaited<ReturnType<typeof startEncrypted>>) {
  assert.equal((await fetch(`${svc.url}/${BUCKET}`, { method: "PUT" })).status, 200);
  const parts = [marked(5 * MiB + 7), marked(5 * MiB), marked(300_001)];
  const { UploadId } = await s3.send(
    new CreateMultipartUploadCommand({ Bucket: BUCKET, Key: "big.bin" }),
  );
  const etags: string[] = [];
  for (const [i, body] of parts.entries()) {
    const { ETag } = await s3.send(
      new UploadPartCommand({
        Bucket: BUCKET,
        Key: "big.bin",
        UploadId,
        PartNumber: i + 1,
        Body: body,
      }),
    );
    assert.equal(ETag, `"${md5Hex(body)}"`, "a part's ETag is its plaintext's md5");
    etags.push(ETag!);
  }
  const leaks = filesUnder(root).filter((path) =>
    Buffer.from(Deno.readFileSync(path)).includes(MARKER)
  );
  assert.deepEqual(leaks, [], "parts in flight are sealed at rest");

  const done = await s3.send(
    new CompleteMultipartUploadCommand({
      Bucket: BUCKET,
      Key: "big.bin",
      UploadId,
      MultipartUpload: { Parts: etags.map((ETag, i) => ({ ETag, PartNumber: i + 1 })) },
    }),
  );
  const whole = concat(...parts);
  assert.equal(done.ETag, multipartEtag(parts));
  const got = await s3.send(new GetObjectCommand({ Bucket: BUCKET, Key: "big.bin" }));
  assert.ok(Buffer.from(await bytesOf(got.Body)).equals(whole), "whole object byte-identical");
  assert.equal(got.ETag, done.ETag);
  // A range across the boundary of parts 1 and 2, a suffix, and part 2 by number.
  const cut = 5 * MiB + 7;
  for (
    const [range, from, to] of [
      [`bytes=${cut - 1000}-${cut + 1000}`, cut - 1000, cut + 1001],
      ["bytes=-100", whole.length - 100, whole.length],
    ] as const
  ) {
    const ranged = await s3.send(
      new GetObjectCommand({ Bucket: BUCKET, Key: "big.bin", Range: range }),
    );
    assert.ok(Buffer.from(await bytesOf(ranged.Body)).equals(whole.subarray(from, to)), range);
  }
  const second = await s3.send(
    new GetObjectCommand({ Bucket: BUCKET, Key: "big.bin", PartNumber: 2 }),
  );
  assert.equal(second.PartsCount, 3);
  assert.ok(Buffer.from(await bytesOf(second.Body)).equals(parts[1]), "partNumber=2");
  const leaked = filesUnder(root).filter((path) =>
    Buffer.from(Deno.readFileSync(path)).includes(MARKER)
  );
  assert.deepEqual(leaked, [], "nothing in plaintext after Complete either");
}

Deno.test("encrypted bucket: a truncated object answers 5xx to full, ranged and suffix GETs", async () => {
  await using env = await startEncrypted();
  const { svc, root, s3 } = env;
  assert.equal((await fetch(`${svc.url}/${BUCKET}`, { method: "PUT" })).status, 200);
  // Larger than the first verified batch (960 KiB), so a full GET is not verified whole first.
  const body = marked(3 * MiB);
  await s3.send(new PutObjectCommand({ Bucket: BUCKET, Key: "cut.bin", Body: body }));
  const path = `${root}/${BUCKET}/cut.bin`;
  const stored = await Deno.readFile(path);
  // 100 bytes off the end: what is left still looks like a whole (smaller) sealed object, and a
  // suffix range resolved against the recorded size fell outside it (416 before the fix).
  await Deno.writeFile(path, stored.subarray(0, stored.length - 100));
  for (
    const range of ["bytes=-100", undefined, "bytes=-1", `bytes=${3 * MiB - 50}-`, "bytes=0-99"]
  ) {
    const response = await fetch(`${svc.url}/${BUCKET}/cut.bin`, {
      headers: range ? { range } : {},
    });
    // Before the fix a full GET sent the verified frames, then broke off: count what came.
    const bytes = new Uint8Array(await response.arrayBuffer().catch(() => new ArrayBuffer(0)));
    assert.ok(response.status >= 500, `${range ?? "full GET"}: ${response.status}`);
    assert.ok(!Buffer.from(bytes).includes(MARKER), `${range ?? "full GET"}: no plaintext`);
  }
});
