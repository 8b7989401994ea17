/**
 * Multipart uploads in a fleet: several svc instances over one S3 backend (a backing svc), as
 * behind a load balancer. An upload created on one instance takes parts, ListParts,
 * ListMultipartUploads, Complete and Abort on any other, survives the instance that created it
 * (SIGKILL), keeps its parts sealed on an encrypted backend, and is swept once when idle. The
 * fronts are black boxes reached with the SDK; the backing store is looked at through its own S3
 * API and, for plaintext, its data directory.
 */
import {
  AbortMultipartUploadCommand,
  CompleteMultipartUploadCommand,
  CreateBucketCommand,
  CreateMultipartUploadCommand,
  DeleteBucketCommand,
  DeleteObjectCommand,
  GetObjectCommand,
  ListMultipartUploadsCommand,
  ListObjectsV2Command,
  ListPartsCommand,
  PutObjectCommand,
  S3Client,
  UploadPartCommand,
} from "@aws-sdk/client-s3";
import assert from "node:assert/strict";
import { clientFor, md5, sha256, startBackingSvc, startFront } from "./helpers/s3-front.ts";
import { randomBytes, type SvcProcess } from "./helpers/svc.ts";
import { multipartEtag } from "./helpers/multipart.ts";

const MiB = 1024 * 1024;
const BUCKET = "fleet";

/**
 * The backing store with the coordination bucket: a fleet is instances with config sync on
 * (`advanced.config_sync_bucket`), which is what puts S3 buckets' uploads in the backend.
 */
async function backingStore() {
  const backing = await startBackingSvc([BUCKET]);
  const s3 = clientFor(backing);
  await s3.send(new CreateBucketCommand({ Bucket: "coord" }));
  s3.destroy();
  return backing;
}

const FLEET_ENV = { SVC_CONFIG_SYNC_BUCKET: "coord" };

async function fleet(size: number, env: Record<string, string> = {}) {
  const backing = await backingStore();
  const fronts: SvcProcess[] = [];
  for (let i = 0; i < size; i++) fronts.push(await startFront(backing, { ...FLEET_ENV, ...env }));
  const clients = fronts.map((front) => front.client({ checksums: false }));
  return {
    backing,
    fronts,
    clients,
    async [Symbol.asyncDispose]() {
      for (const client of clients) client.destroy();
      for (const front of fronts) await front.stop();
      await backing.stop();
      await Deno.remove(backing.svc.dataDir, { recursive: true }).catch(() => {});
    },
  };
}

async function create(s3: S3Client, Key: string): Promise<string> {
  return (await s3.send(new CreateMultipartUploadCommand({ Bucket: BUCKET, Key }))).UploadId!;
}

async function part(s3: S3Client, Key: string, UploadId: string, n: number, body: Uint8Array) {
  const out = await s3.send(
    new UploadPartCommand({ Bucket: BUCKET, Key, UploadId, PartNumber: n, Body: body }),
  );
  assert.equal(out.ETag, `"${md5(body)}"`);
  return { PartNumber: n, ETag: out.ETag! };
}

function complete(
  s3: S3Client,
  Key: string,
  UploadId: string,
  Parts: { PartNumber: number; ETag: string }[],
) {
  return s3.send(
    new CompleteMultipartUploadCommand({
      Bucket: BUCKET,
      Key,
      UploadId,
      MultipartUpload: { Parts },
    }),
  );
}

async function read(s3: S3Client, Key: string): Promise<Uint8Array> {
  const out = await s3.send(new GetObjectCommand({ Bucket: BUCKET, Key }));
  return new Uint8Array(await out.Body!.transformToByteArray());
}

async function rejectsWith(work: () => Promise<unknown>, name: string) {
  await assert.rejects(work, (err: Error) => {
    assert.equal(err.name, name, err.message);
    return true;
  });
}

Deno.test("fleet multipart: an upload is served by every instance over one S3 backend", async (t) => {
  await using env = await fleet(3, { SVC_DEBUG_HEADERS: "true" });
  const [a, b, c] = env.clients;
  await a.send(new CreateBucketCommand({ Bucket: BUCKET }));
  const bodies = [randomBytes(5 * MiB), randomBytes(5 * MiB), randomBytes(MiB + 17)];
  const whole = new Uint8Array(bodies.reduce((n, p) => n + p.length, 0));
  bodies.reduce((at, p) => (whole.set(p, at), at + p.length), 0);

  await t.step("parts over A/B/C, lists on C, Complete on B, same bytes on A and C", async () => {
    const id = await create(a, "big.bin");
    const parts = [];
    for (const [i, body] of bodies.entries()) {
      parts.push(await part([a, b, c][i], "big.bin", id, i + 1, body));
    }
    const listed = await c.send(
      new ListPartsCommand({ Bucket: BUCKET, Key: "big.bin", UploadId: id }),
    );
    assert.deepEqual(
      listed.Parts?.map((p) => [p.PartNumber, p.ETag, p.Size]),
      bodies.map((body, i) => [i + 1, `"${md5(body)}"`, body.length]),
    );
    const uploads = await c.send(new ListMultipartUploadsCommand({ Bucket: BUCKET }));
    assert.deepEqual(uploads.Uploads?.map((u) => [u.Key, u.UploadId]), [["big.bin", id]]);
    // The state in the backend is out of every client's reach.
    const objects = await a.send(new ListObjectsV2Command({ Bucket: BUCKET }));
    assert.equal(objects.KeyCount, 0, JSON.stringify(objects.Contents));
    const root = await a.send(new ListObjectsV2Command({ Bucket: BUCKET, Delimiter: "/" }));
    assert.equal(root.CommonPrefixes, undefined);
    await rejectsWith(
      () =>
        a.send(new GetObjectCommand({ Bucket: BUCKET, Key: `.svc/multipart/${id}/upload.json` })),
      "NoSuchKey",
    );
    await rejectsWith(
      () =>
        b.send(new PutObjectCommand({ Bucket: BUCKET, Key: `.svc/multipart/${id}/x`, Body: "x" })),
      "InvalidObjectName",
    );

    const done = await complete(b, "big.bin", id, parts);
    assert.equal(done.ETag, multipartEtag(bodies));
    assert.equal(sha256(await read(a, "big.bin")), sha256(whole));
    assert.equal(sha256(await read(c, "big.bin")), sha256(whole));
    // A retried Complete on a third instance answers as the first did.
    const again = await complete(c, "big.bin", id, parts);
    assert.equal(again.ETag, done.ETag);
    const left = await a.send(new ListMultipartUploadsCommand({ Bucket: BUCKET }));
    assert.equal(left.Uploads?.length ?? 0, 0);
  });

  await t.step("Abort on another instance ends the upload everywhere", async () => {
    const id = await create(b, "aborted.bin");
    await part(a, "aborted.bin", id, 1, bodies[2]);
    await c.send(
      new AbortMultipartUploadCommand({ Bucket: BUCKET, Key: "aborted.bin", UploadId: id }),
    );
    await rejectsWith(
      () => a.send(new ListPartsCommand({ Bucket: BUCKET, Key: "aborted.bin", UploadId: id })),
      "NoSuchUpload",
    );
    await rejectsWith(() => part(b, "aborted.bin", id, 2, bodies[2]), "NoSuchUpload");
  });

  await t.step("two Completes at once on two instances write one object", async () => {
    const id = await create(a, "raced.bin");
    const parts = [
      await part(a, "raced.bin", id, 1, bodies[0]),
      await part(b, "raced.bin", id, 2, bodies[2]),
    ];
    const answers = await Promise.all([
      complete(b, "raced.bin", id, parts),
      complete(c, "raced.bin", id, parts),
    ]);
    assert.equal(answers[0].ETag, multipartEtag([bodies[0], bodies[2]]));
    assert.equal(answers[1].ETag, answers[0].ETag);
    const expected = new Uint8Array(bodies[0].length + bodies[2].length);
    expected.set(bodies[0]);
    expected.set(bodies[2], bodies[0].length);
    assert.equal(sha256(await read(a, "raced.bin")), sha256(expected));
  });

  await t.step("a delta-eligible multipart object still gets its delta storage", async () => {
    const v1 = randomBytes(5 * MiB + 4096);
    const v2 = v1.slice();
    v2.set(randomBytes(64), 1000);
    for (const [i, body] of [v1, v2].entries()) {
      const key = `releases/app-${i + 1}.tar`;
      const id = await create([a, b][i], key);
      const parts = [
        await part(b, key, id, 1, body.subarray(0, 5 * MiB)),
        await part(c, key, id, 2, body.subarray(5 * MiB)),
      ];
      await complete([c, a][i], key, id, parts);
      assert.equal(sha256(await read(a, key)), sha256(body));
    }
    // The backing store holds the front's delta layout: a baseline and a delta.
    const storage = await storageOf(env.backing, "releases/");
    assert.ok(storage.some((key) => key.endsWith(".delta")), `no delta stored: ${storage}`);
  });

  await t.step("an instance killed mid-upload leaves the upload to the others", async () => {
    const id = await create(c, "survivor.bin");
    const first = await part(c, "survivor.bin", id, 1, bodies[0]);
    env.fronts[2].kill("SIGKILL");
    const second = await part(a, "survivor.bin", id, 2, bodies[2]);
    await complete(b, "survivor.bin", id, [first, second]);
    const expected = new Uint8Array(bodies[0].length + bodies[2].length);
    expected.set(bodies[0]);
    expected.set(bodies[2], bodies[0].length);
    assert.equal(sha256(await read(a, "survivor.bin")), sha256(expected));
  });

  await t.step("DeleteBucket takes svc's multipart records in the backend with it", async () => {
    const leftover = await create(b, "never-completed.bin");
    await part(a, "never-completed.bin", leftover, 1, bodies[2]);
    const listed = await a.send(new ListObjectsV2Command({ Bucket: BUCKET }));
    for (const entry of listed.Contents ?? []) {
      await b.send(new DeleteObjectCommand({ Bucket: BUCKET, Key: entry.Key! }));
    }
    await a.send(new DeleteBucketCommand({ Bucket: BUCKET }));
    // Gone on the backend too: nothing of the uploads kept it from being removed.
    await rejectsWith(() => storageOf(env.backing, ""), "NoSuchBucket");
  });
});

/** The keys under `prefix` in the backing store, as the fronts stored them. */
async function storageOf(
  backing: { endpoint: string } & Parameters<typeof clientFor>[0],
  prefix: string,
) {
  const s3 = clientFor(backing);
  try {
    const out = await s3.send(new ListObjectsV2Command({ Bucket: BUCKET, Prefix: prefix }));
    return (out.Contents ?? []).map((entry) => entry.Key!);
  } finally {
    s3.destroy();
  }
}

Deno.test("fleet multipart: parts in the backend of an encrypted bucket are sealed", async () => {
  const dir = await Deno.makeTempDir({ prefix: "svc-fleet-" });
  await Deno.writeTextFile(
    `${dir}/svc.yaml`,
    "storage:\n  backend_encryption:\n    mode: aes256-gcm-proxy\n",
  );
  await using env = await fleet(2, {
    SVC_CONFIG: `${dir}/svc.yaml`,
    SVC_ENCRYPTION_KEY: "5e".repeat(32),
  });
  const [a, b] = env.clients;
  await a.send(new CreateBucketCommand({ Bucket: BUCKET }));
  // Text that compresses, so a sealed copy could not hide it by chance.
  const line = new TextEncoder().encode("plaintext-marker-0123456789abcdef ");
  const body = new Uint8Array(5 * MiB + 1000);
  for (let at = 0; at < body.length; at += line.length) {
    body.set(line.subarray(0, body.length - at), at);
  }
  const id = await create(a, "secret.txt");
  const first = await part(b, "secret.txt", id, 1, body.subarray(0, 5 * MiB));
  const second = await part(a, "secret.txt", id, 2, body.subarray(5 * MiB));
  // In flight: nothing under the backing data directory holds the plaintext.
  const found = await grep(env.backing.svc.dataDir, line);
  assert.deepEqual(found, []);
  const listed = await storageOf(env.backing, `.svc/multipart/${id}/`);
  assert.ok(listed.some((key) => /\/p00001\./.test(key)), `parts not in the backend: ${listed}`);
  await complete(b, "secret.txt", id, [first, second]);
  assert.equal(sha256(await read(a, "secret.txt")), sha256(body));
  assert.deepEqual(await grep(env.backing.svc.dataDir, line), []);
  await Deno.remove(dir, { recursive: true });
});

/** Files under `dir` whose bytes contain `needle`. */
async function grep(dir: string, needle: Uint8Array): Promise<string[]> {
  const hits: string[] = [];
  const text = new TextDecoder("latin1").decode(needle);
  for await (const entry of Deno.readDir(dir)) {
    const path = `${dir}/${entry.name}`;
    if (entry.isDirectory) hits.push(...await grep(path, needle));
    else if (entry.isFile) {
      const bytes = await Deno.readFile(path);
      if (new TextDecoder("latin1").decode(bytes).includes(text)) hits.push(path);
    }
  }
  return hits;
}

Deno.test("fleet multipart: an idle upload is swept once, by one of two sweeping instances", async () => {
  const backing = await backingStore();
  try {
    const id = await (async () => {
      await using a = await startFront(backing, FLEET_ENV);
      const s3 = a.client({ checksums: false });
      await s3.send(new CreateBucketCommand({ Bucket: BUCKET }));
      const id = await create(s3, "idle.bin");
      await part(s3, "idle.bin", id, 1, randomBytes(1000));
      s3.destroy();
      return id;
    })();
    await new Promise((resolve) => setTimeout(resolve, 2000));
    // Both sweep at startup, at once: the upload is removed once and neither fails.
    const ttl = { ...FLEET_ENV, SVC_MULTIPART_IDLE_TTL_HOURS: "0.0002" };
    const [d, e] = await Promise.all([startFront(backing, ttl), startFront(backing, ttl)]);
    try {
      const s3 = e.client({ checksums: false });
      await rejectsWith(
        () => s3.send(new ListPartsCommand({ Bucket: BUCKET, Key: "idle.bin", UploadId: id })),
        "NoSuchUpload",
      );
      assert.equal(
        (await s3.send(new ListMultipartUploadsCommand({ Bucket: BUCKET }))).Uploads,
        undefined,
      );
      assert.deepEqual(await storageOf(backing, `.svc/multipart/${id}/`), []);
      s3.destroy();
      const logs = [...d.logs, ...e.logs];
      assert.deepEqual(logs.filter((line) => line.includes("multipart sweep failed")), []);
      const swept = logs.filter((line) => line.includes("swept idle multipart uploads"));
      assert.equal(swept.length, 1, swept.join("\n"));
    } finally {
      await d.stop();
      await e.stop();
    }
  } finally {
    await backing.stop();
    await Deno.remove(backing.svc.dataDir, { recursive: true }).catch(() => {});
  }
});
