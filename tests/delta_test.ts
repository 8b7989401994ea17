/**
 * Black-box tests of the delta store on the S3 surface: archive versions stored as a baseline
 * plus deltas read back byte-exact through every read path, and the data directory shows the
 * storage decision (`reference.bin`, `<key>.delta`, passthrough). Failure modes (corruption, a
 * dying or missing xdelta3, busy codec slots) and compression-off buckets are in
 * delta_faults_test.ts.
 */
import assert from "node:assert/strict";
import { gzipSync } from "node:zlib";
import {
  CompleteMultipartUploadCommand,
  CopyObjectCommand,
  CreateMultipartUploadCommand,
  DeleteObjectCommand,
  DeleteObjectsCommand,
  GetObjectCommand,
  HeadObjectCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  type S3Client,
  UploadPartCommand,
} from "@aws-sdk/client-s3";
import { createHash } from "node:crypto";
import { bytesOf, randomBytes, signedFetch as fetch, startSvc } from "./helpers/svc.ts";
import { assertError, codeOf, md5Hex } from "./helpers/assertions.ts";
import { ArtifactSeries, mutate, tar } from "./helpers/tar.ts";
import { layoutOf, parentDeltaspaceArgs, sha256Hex, storedFile } from "./helpers/delta.ts";

const BUCKET = "artifacts";
const MiB = 1024 * 1024;

async function put(s3: S3Client, key: string, body: Uint8Array, bucket = BUCKET) {
  return await s3.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: body }));
}

async function getSha(s3: S3Client, key: string, range?: string, bucket = BUCKET) {
  const got = await s3.send(new GetObjectCommand({ Bucket: bucket, Key: key, Range: range }));
  const bytes = await bytesOf(got.Body);
  return { got, bytes, sha: sha256Hex(bytes) };
}

/** Asserts `key` reads back as exactly `body` (sha256 and ETag). */
async function assertReadsBack(s3: S3Client, key: string, body: Uint8Array, bucket = BUCKET) {
  const { got, sha } = await getSha(s3, key, undefined, bucket);
  assert.equal(sha, sha256Hex(body), `${key}: body differs`);
  assert.equal(got.ContentLength, body.length);
  assert.equal(got.ETag, `"${md5Hex(body)}"`);
}

Deno.test("delta: artifact versions stored as baseline + deltas read back exactly", async (t) => {
  // PUTs wait for a codec slot rather than go passthrough, however loaded the machine is.
  // The layout checked here is the parent rule's (`<folder>reference.bin`).
  await using svc = await startSvc({
    env: { SVC_CODEC_SLOT_WAIT_SECS: "250" },
    args: parentDeltaspaceArgs(BUCKET),
  });
  const s3 = svc.client();
  const url = (path: string) => `${svc.url}/${BUCKET}/${path}`;
  assert.equal((await fetch(`${svc.url}/${BUCKET}`, { method: "PUT" })).status, 200);

  await t.step("GET, ranged GET, HEAD and LIST of four versions in a row", async () => {
    const series = new ArtifactSeries();
    const versions = [series.current(), series.next(), series.next(), series.next()];
    for (const [i, body] of versions.entries()) {
      const sent = await s3.send(
        new PutObjectCommand({
          Bucket: BUCKET,
          Key: `rt/app-1.${i}.tar`,
          Body: body,
          ContentType: "application/x-tar",
          Metadata: { build: `b${i}`, "git-sha": "abc123" },
        }),
      );
      assert.equal(sent.ETag, `"${md5Hex(body)}"`);
    }
    assert.deepEqual(layoutOf(svc.dataDir, BUCKET, "rt/"), [
      ...versions.map((_, i) => `rt/app-1.${i}.tar.delta:delta`),
      "rt/reference.bin:reference",
    ]);
    for (const [i, body] of versions.entries()) {
      const key = `rt/app-1.${i}.tar`;
      await assertReadsBack(s3, key, body);
      const size = body.length;
      const ranges: [string, number, number][] = [
        ["bytes=0-0", 0, 0],
        ["bytes=0-99", 0, 99],
        ["bytes=1000-70000", 1000, 70000],
        ["bytes=-777", size - 777, size - 1],
        [`bytes=${size - 5000}-`, size - 5000, size - 1],
        [`bytes=${size - 1}-${size + 100}`, size - 1, size - 1], // end past the object clamps
      ];
      for (const [header, start, end] of ranges) {
        const { got, sha } = await getSha(s3, key, header);
        assert.equal(sha, sha256Hex(body.subarray(start, end + 1)), `${key} ${header}`);
        assert.equal(got.ContentRange, `bytes ${start}-${end}/${size}`);
        assert.equal(got.ContentLength, end - start + 1);
      }
      const head = await s3.send(new HeadObjectCommand({ Bucket: BUCKET, Key: key }));
      assert.equal(head.ContentLength, size);
      assert.equal(head.ETag, `"${md5Hex(body)}"`);
      assert.equal(head.ContentType, "application/x-tar");
      assert.deepEqual(head.Metadata, { build: `b${i}`, "git-sha": "abc123" });
    }
    await assertError(
      fetch(url("rt/app-1.0.tar"), { headers: { range: `bytes=${versions[0].length}-` } }),
      416,
      "InvalidRange",
    );
    const listed = await s3.send(new ListObjectsV2Command({ Bucket: BUCKET, Prefix: "rt/" }));
    assert.deepEqual(
      listed.Contents?.map((o) => [o.Key, o.Size, o.ETag]),
      versions.map((body, i) => [`rt/app-1.${i}.tar`, body.length, `"${md5Hex(body)}"`]),
    );
    // A delimiter listing of the bucket root shows the deltaspace as one common prefix only.
    const root = await s3.send(new ListObjectsV2Command({ Bucket: BUCKET, Delimiter: "/" }));
    assert.ok(root.CommonPrefixes?.some((p) => p.Prefix === "rt/"));
    assert.ok(!(root.Contents ?? []).some((o) => /reference\.bin|\.delta$/.test(o.Key!)));
  });

  await t.step(
    "baseline on first PUT, small delta for a similar one, passthrough for noise",
    async () => {
      const series = new ArtifactSeries();
      const v1 = series.current();
      await put(s3, "dec/app-1.tar", v1);
      assert.deepEqual(layoutOf(svc.dataDir, BUCKET, "dec/"), [
        "dec/app-1.tar.delta:delta",
        "dec/reference.bin:reference",
      ]);
      const reference = storedFile(svc.dataDir, BUCKET, "dec/reference.bin")!;
      assert.equal(reference.size, v1.length);
      assert.equal(reference.meta?.sha256, sha256Hex(v1));
      // The first object's delta against itself is tiny.
      assert.ok(storedFile(svc.dataDir, BUCKET, "dec/app-1.tar.delta")!.size < 4096);

      const v2 = series.next();
      await put(s3, "dec/app-2.tar", v2);
      const delta = storedFile(svc.dataDir, BUCKET, "dec/app-2.tar.delta")!;
      assert.equal(delta.storage, "delta");
      assert.equal(delta.meta?.size, v2.length, "metadata keeps the logical size");
      assert.equal(delta.meta?.sha256, sha256Hex(v2));
      assert.equal(delta.meta?.referenceSha256, sha256Hex(v1));
      assert.ok(delta.size < v2.length * 0.05, `delta is ${delta.size} of ${v2.length} bytes`);

      const noise = randomBytes(v1.length);
      await put(s3, "dec/app-3.tar", noise);
      assert.deepEqual(layoutOf(svc.dataDir, BUCKET, "dec/"), [
        "dec/app-1.tar.delta:delta",
        "dec/app-2.tar.delta:delta",
        "dec/app-3.tar:passthrough",
        "dec/reference.bin:reference",
      ]);
      assert.equal(
        storedFile(svc.dataDir, BUCKET, "dec/reference.bin")!.meta?.sha256,
        sha256Hex(v1),
      );
      assert.equal(storedFile(svc.dataDir, BUCKET, "dec/app-3.tar")!.size, noise.length);
      // Overwriting the passthrough key with a similar version turns it into a delta, and back.
      const v3 = series.next();
      await put(s3, "dec/app-3.tar", v3);
      assert.ok(layoutOf(svc.dataDir, BUCKET, "dec/").includes("dec/app-3.tar.delta:delta"));
      assert.ok(!layoutOf(svc.dataDir, BUCKET, "dec/").includes("dec/app-3.tar:passthrough"));
      await assertReadsBack(s3, "dec/app-3.tar", v3);
      await put(s3, "dec/app-3.tar", noise);
      assert.ok(!layoutOf(svc.dataDir, BUCKET, "dec/").includes("dec/app-3.tar.delta:delta"));
      for (const [key, body] of [["app-1", v1], ["app-2", v2], ["app-3", noise]] as const) {
        await assertReadsBack(s3, `dec/${key}.tar`, body);
      }
      // A non-eligible name is passthrough even when it would delta well.
      await put(s3, "dec/app-2.bin", v2);
      assert.equal(storedFile(svc.dataDir, BUCKET, "dec/app-2.bin")?.storage, "passthrough");
    },
  );

  await t.step("conditionals on a delta object: 304 and 412", async () => {
    const body = new ArtifactSeries().current();
    await put(s3, "cond/a.tar", body);
    await put(s3, "cond/b.tar", mutate(body));
    assert.equal(storedFile(svc.dataDir, BUCKET, "cond/b.tar.delta")?.storage, "delta");
    const etag = `"${md5Hex(body)}"`;
    const notModified = await fetch(url("cond/a.tar"), { headers: { "if-none-match": etag } });
    assert.equal(notModified.status, 304);
    assert.equal(notModified.headers.get("etag"), etag);
    assert.equal((await notModified.arrayBuffer()).byteLength, 0);
    await assertError(
      fetch(url("cond/a.tar"), { headers: { "if-match": '"0123456789abcdef0123456789abcdef"' } }),
      412,
      "PreconditionFailed",
    );
    const matched = await fetch(url("cond/a.tar"), { headers: { "if-match": etag } });
    assert.equal(matched.status, 200);
    assert.equal(sha256Hex(new Uint8Array(await matched.arrayBuffer())), sha256Hex(body));
    const ranged = await fetch(url("cond/a.tar"), {
      headers: { "if-match": etag, range: "bytes=10-19" },
    });
    assert.equal(ranged.status, 206);
    assert.deepEqual(new Uint8Array(await ranged.arrayBuffer()), body.subarray(10, 20));
  });

  await t.step("CopyObject of a delta object and multipart uploads of eligible keys", async () => {
    const series = new ArtifactSeries(12, MiB); // > 10 MiB: three parts of 5, 5 and the rest
    const v1 = series.current();
    const v2 = series.next();
    await put(s3, "cp/app-1.tar", v1);
    await put(s3, "cp/app-2.tar", v2);
    assert.equal(storedFile(svc.dataDir, BUCKET, "cp/app-2.tar.delta")?.storage, "delta");
    for (const target of ["cp/copy.tar", "cp2/copy.tar", "cp2/copy.bin"]) {
      const copied = await s3.send(
        new CopyObjectCommand({
          Bucket: BUCKET,
          Key: target,
          CopySource: `${BUCKET}/cp/app-2.tar`,
        }),
      );
      assert.equal(copied.CopyObjectResult?.ETag, `"${md5Hex(v2)}"`);
      await assertReadsBack(s3, target, v2);
    }
    assert.equal(storedFile(svc.dataDir, BUCKET, "cp/copy.tar.delta")?.storage, "delta");
    assert.equal(storedFile(svc.dataDir, BUCKET, "cp2/copy.bin")?.storage, "passthrough");

    const multipart = async (key: string, body: Uint8Array) => {
      const { UploadId } = await s3.send(
        new CreateMultipartUploadCommand({ Bucket: BUCKET, Key: key }),
      );
      const cuts = [0, 5 * MiB, 10 * MiB, body.length];
      const parts = [];
      for (let n = 1; n < cuts.length; n++) {
        const Body = body.subarray(cuts[n - 1], cuts[n]);
        const { ETag } = await s3.send(
          new UploadPartCommand({ Bucket: BUCKET, Key: key, UploadId, PartNumber: n, Body }),
        );
        parts.push({ ETag, PartNumber: n, md5: createHash("md5").update(Body).digest() });
      }
      const done = await s3.send(
        new CompleteMultipartUploadCommand({
          Bucket: BUCKET,
          Key: key,
          UploadId,
          MultipartUpload: { Parts: parts.map(({ ETag, PartNumber }) => ({ ETag, PartNumber })) },
        }),
      );
      const expected = `"${md5Hex(Buffer.concat(parts.map((p) => p.md5)))}-3"`;
      assert.equal(done.ETag, expected);
      return expected;
    };
    const v3 = series.next();
    const etag1 = await multipart("mp/app-1.tar", v1);
    const etag3 = await multipart("mp/app-3.tar", v3);
    assert.deepEqual(layoutOf(svc.dataDir, BUCKET, "mp/"), [
      "mp/app-1.tar.delta:delta",
      "mp/app-3.tar.delta:delta",
      "mp/reference.bin:reference",
    ]);
    for (const [key, body, etag] of [["mp/app-1.tar", v1, etag1], ["mp/app-3.tar", v3, etag3]]) {
      const { got, sha } = await getSha(s3, key as string);
      assert.equal(sha, sha256Hex(body as Uint8Array));
      assert.equal(got.ETag, etag);
      const head = await s3.send(new HeadObjectCommand({ Bucket: BUCKET, Key: key as string }));
      assert.equal(head.ETag, etag);
    }
    const listed = await s3.send(new ListObjectsV2Command({ Bucket: BUCKET, Prefix: "mp/" }));
    assert.deepEqual(listed.Contents?.map((o) => o.ETag), [etag1, etag3]);
  });

  await t.step("gzip bytes inside and as a .tar come back identical (xdelta3 -D)", async () => {
    const text = (seed: string) =>
      new TextEncoder().encode(
        Array.from({ length: 20000 }, (_, i) => `${seed}-${i} ${crypto.randomUUID()}\n`).join(""),
      );
    const payload = text("line");
    const changed = payload.slice();
    changed.set(new TextEncoder().encode("CHANGED!"), Math.floor(payload.length / 3));
    const members = (data: Uint8Array) => [
      { name: "pkg/data.json.gz", data: gzipSync(data) },
      { name: "pkg/blob.bin", data: payload.subarray(0, 100_000) },
    ];
    const versions = [tar(members(payload)), tar(members(changed))];
    // An eligible name whose bytes are a gzip stream: xdelta3 without -D would recompress it.
    const raw = [gzipSync(payload), gzipSync(changed)];
    for (const [i, body] of versions.entries()) await put(s3, `gz/app-${i}.tar`, body);
    for (const [i, body] of raw.entries()) await put(s3, `gzraw/app-${i}.tar`, body);
    assert.equal(storedFile(svc.dataDir, BUCKET, "gz/app-1.tar.delta")?.storage, "delta");
    // The first gzip stream went through encode and will go through decode as a baseline delta.
    assert.equal(storedFile(svc.dataDir, BUCKET, "gzraw/app-0.tar.delta")?.storage, "delta");
    for (const [i, body] of versions.entries()) await assertReadsBack(s3, `gz/app-${i}.tar`, body);
    for (const [i, body] of raw.entries()) await assertReadsBack(s3, `gzraw/app-${i}.tar`, body);
  });

  await t.step("20 parallel PUTs into a fresh deltaspace: one baseline, all exact", async () => {
    const series = new ArtifactSeries();
    const versions = Array.from({ length: 20 }, () => series.next());
    // 20 live encodes against 16 codec slots: a PUT waits for a slot (no SlowDown since issue
    // 12); the retry loop stays as a guard. Anything else is a failure.
    let slowDowns = 0;
    const statuses = await Promise.all(versions.map(async (body, i) => {
      for (let attempt = 1;; attempt++) {
        const res = await fetch(url(`par/v-${i}.tar`), { method: "PUT", body });
        const text = await res.text();
        if (res.status !== 503 || codeOf(text) !== "SlowDown" || attempt === 10) {
          return res.status === 200 ? 200 : `${res.status} ${text}`;
        }
        slowDowns++;
        await new Promise((resolve) => setTimeout(resolve, 50 * attempt));
      }
    }));
    assert.deepEqual(statuses, versions.map(() => 200), `after ${slowDowns} SlowDown retries`);
    assert.deepEqual(layoutOf(svc.dataDir, BUCKET, "par/"), [
      "par/reference.bin:reference",
      ...versions.map((_, i) => `par/v-${i}.tar.delta:delta`).sort(),
    ]);
    for (const [i, body] of versions.entries()) await assertReadsBack(s3, `par/v-${i}.tar`, body);
  });
});

Deno.test("delta: deleting every object of a deltaspace removes its baseline", async () => {
  const bucket = "deletes";
  await using svc = await startSvc({ args: parentDeltaspaceArgs(bucket) });
  const s3 = svc.client();
  assert.equal((await fetch(`${svc.url}/${bucket}`, { method: "PUT" })).status, 200);
  const series = new ArtifactSeries(3, 64 * 1024);
  const bodies = new Map<string, Uint8Array>();
  for (const space of ["one", "two", "three"]) {
    for (const name of ["a", "b", "c"]) {
      bodies.set(`${space}/${name}.tar`, series.next());
      await put(s3, `${space}/${name}.tar`, bodies.get(`${space}/${name}.tar`)!, bucket);
    }
    await put(s3, `${space}/noise.tar`, randomBytes(200_000), bucket); // passthrough
    assert.deepEqual(layoutOf(svc.dataDir, bucket, `${space}/`), [
      `${space}/a.tar.delta:delta`,
      `${space}/b.tar.delta:delta`,
      `${space}/c.tar.delta:delta`,
      `${space}/noise.tar:passthrough`,
      `${space}/reference.bin:reference`,
    ]);
  }
  // One by one: the baseline stays until its last delta goes.
  for (const name of ["a", "noise", "b"]) {
    await s3.send(new DeleteObjectCommand({ Bucket: bucket, Key: `one/${name}.tar` }));
    assert.ok(storedFile(svc.dataDir, bucket, "one/reference.bin"), `after ${name}`);
  }
  await assertReadsBack(s3, "one/c.tar", bodies.get("one/c.tar")!, bucket);
  await s3.send(new DeleteObjectCommand({ Bucket: bucket, Key: "one/c.tar" }));
  assert.deepEqual(layoutOf(svc.dataDir, bucket, "one/"), []);

  const batch = await s3.send(
    new DeleteObjectsCommand({
      Bucket: bucket,
      Delete: { Objects: ["a", "b", "c", "noise"].map((n) => ({ Key: `two/${n}.tar` })) },
    }),
  );
  assert.equal(batch.Deleted?.length, 4);
  assert.deepEqual(batch.Errors ?? [], []);
  assert.deepEqual(layoutOf(svc.dataDir, bucket, "two/"), []);

  const recursive = await fetch(`${svc.url}/${bucket}/three/`, { method: "DELETE" });
  assert.equal(recursive.status, 204, await recursive.text());
  assert.deepEqual(layoutOf(svc.dataDir, bucket, "three/"), []);

  const listed = await s3.send(new ListObjectsV2Command({ Bucket: bucket }));
  assert.deepEqual(listed.Contents ?? [], []);
  const removed = await fetch(`${svc.url}/${bucket}`, { method: "DELETE" });
  assert.equal(removed.status, 204, await removed.text());
  await assert.rejects(Deno.stat(`${svc.dataDir}/${bucket}`), Deno.errors.NotFound);
});
