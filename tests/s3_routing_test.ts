/**
 * Routing across a filesystem backend and an S3 backend (a second svc), backend outages and the
 * boot probe, against the real server.
 */
import {
  CreateBucketCommand,
  GetObjectCommand,
  HeadObjectCommand,
  ListObjectsV2Command,
  PutObjectCommand,
} from "@aws-sdk/client-s3";
import assert from "node:assert/strict";
import {
  bucketNames,
  bytesOf,
  clientFor,
  sha256,
  startBackingSvc,
  startFront,
  startRoutedFront,
  statusOf,
} from "./helpers/s3-front.ts";
import type { S3Server } from "./helpers/s3-servers.ts";
import { randomBytes } from "./helpers/svc.ts";

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
