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
import { createHash } from "node:crypto";
import { s3rverUnavailable, type S3Server, startS3rver } from "./helpers/s3-servers.ts";
import { ACCESS_KEY, randomBytes, SECRET_KEY, startSvc, type SvcProcess } from "./helpers/svc.ts";

const MiB = 1024 * 1024;

function sha256(bytes: Uint8Array): string {
  return createHash("sha256").update(bytes).digest("hex");
}

function md5(bytes: Uint8Array): string {
  return createHash("md5").update(bytes).digest("hex");
}

async function bytesOf(client: S3Client, Bucket: string, Key: string, Range?: string) {
  const out = await client.send(new GetObjectCommand({ Bucket, Key, Range }));
  return new Uint8Array(await out.Body!.transformToByteArray());
}

function clientFor(server: S3Server): S3Client {
  return new S3Client({
    endpoint: server.endpoint,
    region: "us-east-1",
    forcePathStyle: true,
    credentials: { accessKeyId: server.accessKeyId, secretAccessKey: server.secretAccessKey },
    requestChecksumCalculation: "WHEN_REQUIRED",
    responseChecksumValidation: "WHEN_REQUIRED",
  });
}

/** A backing svc whose named buckets keep every key verbatim. */
async function startBackingSvc(
  buckets: string[],
  options: { dataDir?: string; port?: number } = {},
): Promise<S3Server & { svc: SvcProcess }> {
  const dir = options.dataDir ?? await Deno.makeTempDir({ prefix: "svc-backing-" });
  const yaml = "storage:\n  buckets:\n" +
    buckets.map((name) => `    ${name}:\n      compression: false\n`).join("");
  await Deno.writeTextFile(`${dir}/backing.yaml`, yaml);
  const svc = await startSvc({
    dataDir: dir,
    args: [
      "--config",
      `${dir}/backing.yaml`,
      ...(options.port ? ["--listen", `127.0.0.1:${options.port}`] : []),
    ],
  });
  return {
    name: "svc",
    endpoint: svc.url,
    accessKeyId: ACCESS_KEY,
    secretAccessKey: SECRET_KEY,
    svc,
    stop: () => svc.stop(),
  };
}

/** The front svc with one S3 backend. */
function startFront(backing: S3Server, env: Record<string, string> = {}): Promise<SvcProcess> {
  return startSvc({
    env: {
      SVC_S3_ENDPOINT: backing.endpoint,
      SVC_BE_AWS_ACCESS_KEY_ID: backing.accessKeyId,
      SVC_BE_AWS_SECRET_ACCESS_KEY: backing.secretAccessKey,
      SVC_BACKEND_LIST_FRESH_SECS: "0",
      ...env,
    },
  });
}

/** The data-plane scenario every backing store must pass. */
async function dataPlane(front: SvcProcess, backing: S3Client, bucket: string) {
  const s3 = front.client({ checksums: false });
  await s3.send(new CreateBucketCommand({ Bucket: bucket }));

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
  assert.deepEqual(storedNames, ["rel/reference.bin", "rel/v1.tar.delta", "rel/v2.tar.delta"]);
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

/** A front with a local filesystem backend (default) and the backing svc as `remote`. */
async function startRoutedFront(backing: S3Server, extraYaml = ""): Promise<SvcProcess> {
  const dir = await Deno.makeTempDir({ prefix: "svc-front-" });
  const yaml = `storage:
  filesystem: ${dir}
  default_backend: local
  backends:
    - name: local
      type: filesystem
      path: ${dir}/local
    - name: remote
      type: s3
      endpoint: ${backing.endpoint}
      access_key_id: ${backing.accessKeyId}
      secret_access_key: ${backing.secretAccessKey}
  buckets:
    mirror:
      backend: remote
      alias: real-mirror
${extraYaml}`;
  await Deno.mkdir(`${dir}/local`);
  await Deno.writeTextFile(`${dir}/front.yaml`, yaml);
  return await startSvc({
    dataDir: dir,
    args: ["--config", `${dir}/front.yaml`],
    env: {
      SVC_BACKEND_LIST_FRESH_SECS: "0",
      SVC_BACKEND_LIST_TIMEOUT_SECS: "2",
      SVC_BACKEND_LIST_COOLDOWN_SECS: "1",
      SVC_S3_CONNECT_TIMEOUT_SECS: "1",
    },
  });
}

async function bucketNames(s3: S3Client): Promise<string[]> {
  const { ListBucketsCommand } = await import("@aws-sdk/client-s3");
  const out = await s3.send(new ListBucketsCommand({}));
  return (out.Buckets ?? []).map((b) => b.Name!);
}

function statusOf(err: unknown): number | undefined {
  return (err as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode;
}

Deno.test("s3 backend: routing across two backends with an alias; one backend down and back", async () => {
  const backingDir = await Deno.makeTempDir({ prefix: "svc-backing-" });
  let backing = await startBackingSvc(["real-mirror", "remote-only"], { dataDir: backingDir });
  const port = backing.svc.port;
  const remote = clientFor(backing);
  await remote.send(new CreateBucketCommand({ Bucket: "real-mirror" }));
  await remote.send(new CreateBucketCommand({ Bucket: "remote-only" }));
  const front = await startRoutedFront(backing);
  try {
    const s3 = front.client({ checksums: false });
    await s3.send(new CreateBucketCommand({ Bucket: "local-bucket" }));
    await s3.send(new PutObjectCommand({ Bucket: "mirror", Key: "a.txt", Body: "via alias" }));
    await s3.send(new PutObjectCommand({ Bucket: "local-bucket", Key: "b.txt", Body: "local" }));
    await s3.send(new PutObjectCommand({ Bucket: "remote-only", Key: "c.txt", Body: "found" }));
    // The alias wrote to the real bucket on the remote backend; nothing leaked locally.
    assert.equal(
      new TextDecoder().decode(await bytesOf(remote, "real-mirror", "a.txt")),
      "via alias",
    );
    assert.equal(new TextDecoder().decode(await bytesOf(remote, "remote-only", "c.txt")), "found");
    await assert.rejects(() => Deno.stat(`${front.dataDir}/local/mirror`));
    assert.deepEqual(await bucketNames(s3), ["local-bucket", "mirror", "remote-only"]);

    // The remote backend goes down: listings keep the local buckets and a placeholder for the
    // routed one, fast; its buckets answer 503; local buckets are untouched.
    await backing.stop();
    const started = performance.now();
    assert.deepEqual(await bucketNames(s3), ["local-bucket", "mirror", "remote-only"]);
    assert.ok(performance.now() - started < 10_000);
    await assert.rejects(
      () => s3.send(new GetObjectCommand({ Bucket: "mirror", Key: "a.txt" })),
      (err) => statusOf(err) === 503,
    );
    assert.equal(new TextDecoder().decode(await bytesOf(s3, "local-bucket", "b.txt")), "local");

    // It comes back on the same port: no restart of the front, nothing lost.
    backing = await startBackingSvc(["real-mirror", "remote-only"], { dataDir: backingDir, port });
    await new Promise((resolve) => setTimeout(resolve, 1100)); // past the listing cooldown
    assert.equal(new TextDecoder().decode(await bytesOf(s3, "mirror", "a.txt")), "via alias");
    assert.deepEqual(await bucketNames(s3), ["local-bucket", "mirror", "remote-only"]);
  } finally {
    await front.stop();
    await Deno.remove(front.dataDir, { recursive: true }).catch(() => {});
    await backing.stop();
    await Deno.remove(backingDir, { recursive: true }).catch(() => {});
  }
});

Deno.test("s3 backend: an outage answers 503 SlowDown, then recovers without a restart", async () => {
  const backingDir = await Deno.makeTempDir({ prefix: "svc-backing-" });
  let backing = await startBackingSvc(["outage"], { dataDir: backingDir });
  const port = backing.svc.port;
  const front = await startFront(backing, {
    SVC_S3_CONNECT_TIMEOUT_SECS: "1",
    SVC_S3_READ_TIMEOUT_SECS: "2",
  });
  try {
    const s3 = front.client({ checksums: false });
    await s3.send(new CreateBucketCommand({ Bucket: "outage" }));
    const body = randomBytes(100_000);
    await s3.send(new PutObjectCommand({ Bucket: "outage", Key: "keep.bin", Body: body }));
    await backing.stop();
    for (
      const call of [
        () => s3.send(new GetObjectCommand({ Bucket: "outage", Key: "keep.bin" })),
        () => s3.send(new PutObjectCommand({ Bucket: "outage", Key: "new.bin", Body: "x" })),
        () => s3.send(new ListObjectsV2Command({ Bucket: "outage" })),
      ]
    ) {
      await assert.rejects(call, (err: { name?: string }) => {
        assert.equal(statusOf(err), 503, String(err));
        assert.equal(err.name, "SlowDown");
        return true;
      });
    }
    backing = await startBackingSvc(["outage"], { dataDir: backingDir, port });
    assert.equal(sha256(await bytesOf(s3, "outage", "keep.bin")), sha256(body));
    await s3.send(new PutObjectCommand({ Bucket: "outage", Key: "new.bin", Body: "x" }));
  } finally {
    await front.stop();
    await backing.stop();
    await Deno.remove(backingDir, { recursive: true }).catch(() => {});
  }
});

Deno.test("s3 backend: the boot probe refuses to start when every backend fails (enforce), warns otherwise", async () => {
  const down: S3Server = {
    name: "down",
    endpoint: "http://127.0.0.1:9", // discard port: connection refused
    accessKeyId: "AKIAUNUSED",
    secretAccessKey: "unused",
    stop: () => Promise.resolve(),
  };
  await assert.rejects(
    () => startFront(down, { SVC_S3_CONNECT_TIMEOUT_SECS: "1" }),
    /every backend failed the boot probe/,
  );
  const warned = await startFront(down, {
    SVC_S3_CONNECT_TIMEOUT_SECS: "1",
    SVC_BOOT_BACKEND_PROBE: "warn",
  });
  try {
    const s3 = warned.client({ checksums: false });
    await assert.rejects(
      () => s3.send(new HeadObjectCommand({ Bucket: "any", Key: "k" })),
      (err) => statusOf(err) === 503,
    );
    assert.ok(warned.logs.some((line) => line.includes("failed its probe")));
  } finally {
    await warned.stop();
  }
});
