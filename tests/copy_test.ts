/**
 * Black-box tests of CopyObject: sources and their encoding, metadata directives, copying onto
 * itself, copy-source conditionals, destination conditionals, missing sources and multipart ETags.
 */
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import {
  CompleteMultipartUploadCommand,
  CopyObjectCommand,
  CreateMultipartUploadCommand,
  GetObjectCommand,
  HeadObjectCommand,
  PutObjectCommand,
  UploadPartCommand,
} from "@aws-sdk/client-s3";
import { bytesOf, randomBytes, signedFetch as fetch, startSvc } from "./helpers/svc.ts";
import { assertError, assertSdkError, codeOf, md5Hex } from "./helpers/assertions.ts";

const SRC = "copy-src";
const DST = "copy-dst";

const source = (bucket: string, key: string) =>
  `${bucket}/${key.split("/").map(encodeURIComponent).join("/")}`;

Deno.test("copy: CopyObject against one server", async (t) => {
  await using svc = await startSvc();
  const s3 = svc.client();
  for (const bucket of [SRC, DST]) {
    assert.equal((await fetch(`${svc.url}/${bucket}`, { method: "PUT" })).status, 200);
  }
  const srcKey = "dir/a b ü+%.txt";
  const body = "copy me, exactly";
  await s3.send(
    new PutObjectCommand({
      Bucket: SRC,
      Key: srcKey,
      Body: body,
      ContentType: "text/plain",
      CacheControl: "max-age=5",
      ContentDisposition: "inline",
      Metadata: { origin: "source", keep: "yes" },
    }),
  );
  const srcHead = await s3.send(new HeadObjectCommand({ Bucket: SRC, Key: srcKey }));
  const copy = (
    dstKey: string,
    init: Partial<ConstructorParameters<typeof CopyObjectCommand>[0]> = {},
  ) =>
    s3.send(
      new CopyObjectCommand({ Bucket: DST, Key: dstKey, CopySource: source(SRC, srcKey), ...init }),
    );
  const rawCopy = (dst: string, headers: Record<string, string>) =>
    fetch(`${svc.url}/${dst}`, {
      method: "PUT",
      headers: { "x-amz-copy-source": source(SRC, srcKey), ...headers },
    });

  await t.step("COPY directive keeps bytes, ETag, content-type and metadata", async () => {
    const result = await copy("same/ünï code");
    assert.equal(result.CopyObjectResult?.ETag, `"${md5Hex(body)}"`);
    assert.ok(result.CopyObjectResult?.LastModified instanceof Date);
    const got = await s3.send(new GetObjectCommand({ Bucket: DST, Key: "same/ünï code" }));
    assert.equal(new TextDecoder().decode(await bytesOf(got.Body)), body);
    assert.equal(got.ETag, srcHead.ETag);
    assert.equal(got.ContentType, "text/plain");
    assert.equal(got.CacheControl, "max-age=5");
    assert.equal(got.ContentDisposition, "inline");
    assert.deepEqual(got.Metadata, { origin: "source", keep: "yes" });
    // Same bucket, with a leading slash and the source given unencoded where it is safe.
    const sameBucket = await fetch(`${svc.url}/${SRC}/copied`, {
      method: "PUT",
      headers: { "x-amz-copy-source": `/${source(SRC, srcKey)}` },
    });
    const text = await sameBucket.text();
    assert.equal(sameBucket.status, 200, text);
    assert.match(text, /<CopyObjectResult[^>]*><LastModified>[^<]+<\/LastModified><ETag>/);
    const head = await s3.send(new HeadObjectCommand({ Bucket: SRC, Key: "copied" }));
    assert.equal(head.ContentLength, body.length);
    assert.deepEqual(head.Metadata, { origin: "source", keep: "yes" });
    // With COPY, metadata headers sent on the request are ignored.
    const ignored = await rawCopy(`${DST}/ignored`, {
      "content-type": "text/html",
      "x-amz-meta-extra": "no",
    });
    assert.equal(ignored.status, 200, await ignored.text());
    const kept = await s3.send(new HeadObjectCommand({ Bucket: DST, Key: "ignored" }));
    assert.equal(kept.ContentType, "text/plain");
    assert.deepEqual(kept.Metadata, { origin: "source", keep: "yes" });
    // The source is untouched.
    const again = await s3.send(new HeadObjectCommand({ Bucket: SRC, Key: srcKey }));
    assert.equal(again.ETag, srcHead.ETag);
  });

  await t.step("REPLACE directive replaces metadata and content-type", async () => {
    await copy("replaced", {
      MetadataDirective: "REPLACE",
      Metadata: { fresh: "1" },
      ContentType: "application/json",
    });
    const head = await s3.send(new HeadObjectCommand({ Bucket: DST, Key: "replaced" }));
    assert.deepEqual(head.Metadata, { fresh: "1" });
    assert.equal(head.ContentType, "application/json");
    assert.equal(head.CacheControl, undefined);
    assert.equal(head.ContentDisposition, undefined);
    assert.equal(head.ETag, srcHead.ETag);
    await copy("replaced-bare", { MetadataDirective: "REPLACE" });
    const bare = await s3.send(new HeadObjectCommand({ Bucket: DST, Key: "replaced-bare" }));
    assert.deepEqual(bare.Metadata, {});
    assert.equal(bare.ContentType, "application/octet-stream");
    await assertError(
      await rawCopy(`${DST}/bad-directive`, { "x-amz-metadata-directive": "MERGE" }),
      400,
      "InvalidArgument",
    );
  });

  await t.step("copy onto itself needs REPLACE", async () => {
    await s3.send(
      new PutObjectCommand({ Bucket: SRC, Key: "self", Body: "self body", Metadata: { v: "1" } }),
    );
    await assertSdkError(
      s3.send(new CopyObjectCommand({ Bucket: SRC, Key: "self", CopySource: `${SRC}/self` })),
      400,
      "InvalidRequest",
    );
    await s3.send(
      new CopyObjectCommand({
        Bucket: SRC,
        Key: "self",
        CopySource: `${SRC}/self`,
        MetadataDirective: "REPLACE",
        Metadata: { v: "2" },
        ContentType: "text/x-self",
      }),
    );
    const got = await s3.send(new GetObjectCommand({ Bucket: SRC, Key: "self" }));
    assert.equal(new TextDecoder().decode(await bytesOf(got.Body)), "self body");
    assert.deepEqual(got.Metadata, { v: "2" });
    assert.equal(got.ContentType, "text/x-self");
  });

  await t.step("x-amz-copy-source-if-* conditions", async () => {
    const etag = srcHead.ETag!;
    const lastModified = srcHead.LastModified!.toUTCString();
    const before = new Date(srcHead.LastModified!.getTime() - 3600_000).toUTCString();
    const other = '"ffffffffffffffffffffffffffffffff"';
    const cases: [Record<string, string>, number][] = [
      [{ "x-amz-copy-source-if-match": etag }, 200],
      [{ "x-amz-copy-source-if-match": other }, 412],
      [{ "x-amz-copy-source-if-none-match": other }, 200],
      [{ "x-amz-copy-source-if-none-match": etag }, 412],
      [{ "x-amz-copy-source-if-modified-since": before }, 200],
      [{ "x-amz-copy-source-if-modified-since": lastModified }, 412],
      [{ "x-amz-copy-source-if-unmodified-since": lastModified }, 200],
      [{ "x-amz-copy-source-if-unmodified-since": before }, 412],
      [
        { "x-amz-copy-source-if-match": etag, "x-amz-copy-source-if-unmodified-since": before },
        200,
      ],
      [{
        "x-amz-copy-source-if-none-match": etag,
        "x-amz-copy-source-if-modified-since": before,
      }, 412],
    ];
    for (const [i, [headers, status]] of cases.entries()) {
      const res = await rawCopy(`${DST}/cond-${i}`, headers);
      const text = await res.text();
      assert.equal(res.status, status, `${JSON.stringify(headers)}: ${text}`);
      if (status === 412) {
        assert.equal(codeOf(text), "PreconditionFailed");
        assert.equal((await fetch(`${svc.url}/${DST}/cond-${i}`, { method: "HEAD" })).status, 404);
      }
    }
    await assertSdkError(copy("cond-sdk", { CopySourceIfMatch: other }), 412, "PreconditionFailed");
  });

  await t.step("destination conditions and missing sources", async () => {
    await copy("dest-guard");
    await assertError(
      await rawCopy(`${DST}/dest-guard`, { "if-none-match": "*" }),
      412,
      "PreconditionFailed",
    );
    const fresh = await rawCopy(`${DST}/dest-fresh`, { "if-none-match": "*" });
    assert.equal(fresh.status, 200, await fresh.text());
    await assertSdkError(
      s3.send(new CopyObjectCommand({ Bucket: DST, Key: "x", CopySource: `${SRC}/missing` })),
      404,
      "NoSuchKey",
    );
    await assertSdkError(
      s3.send(new CopyObjectCommand({ Bucket: DST, Key: "x", CopySource: "no-such-bucket/k" })),
      404,
      "NoSuchBucket",
    );
    await assertSdkError(copy("x", { Bucket: "no-such-bucket" }), 404, "NoSuchBucket");
    await assertError(
      await rawCopy(`${DST}/x`, { "x-amz-copy-source": "just-a-bucket" }),
      400,
      "InvalidArgument",
    );
    await assertError(
      await rawCopy(`${DST}/x`, { "x-amz-copy-source": `${source(SRC, srcKey)}?versionId=abc` }),
      400,
      "InvalidArgument",
    );
    const nullVersion = await rawCopy(`${DST}/null-version`, {
      "x-amz-copy-source": `${source(SRC, srcKey)}?versionId=null`,
    });
    assert.equal(nullVersion.status, 200, await nullVersion.text());
    // A key ending in "/" takes a body like any key, on every backend.
    const marker = await rawCopy(`${DST}/dir/`, {});
    assert.equal(marker.status, 200, await marker.text());
    const copied = await fetch(`${svc.url}/${DST}/dir/`);
    assert.equal(copied.headers.get("content-length"), String(body.length));
    await copied.body?.cancel();
  });

  await t.step("copying a source that is being overwritten never fails", async () => {
    const put = async (key: string, init: RequestInit) => {
      const res = await fetch(`${svc.url}/${SRC}/${key}`, { method: "PUT", ...init });
      return { status: res.status, text: await res.text(), etag: res.headers.get("etag") };
    };
    await put("hot", { body: "hot-initial" });
    let writing = true;
    const writer = async (w: number) => {
      for (let i = 0; writing; i++) {
        assert.equal((await put("hot", { body: `hot-${w}-${i}` })).status, 200);
      }
    };
    const failures: string[] = [];
    const copier = async (c: number) => {
      for (let i = 0; i < 25; i++) {
        const res = await put(`hot-copy-${c}`, { headers: { "x-amz-copy-source": `${SRC}/hot` } });
        if (res.status !== 200) failures.push(`${res.status} ${codeOf(res.text)}`);
      }
    };
    const writers = [0, 1, 2, 3].map(writer);
    await Promise.all([0, 1, 2, 3].map(copier));
    writing = false;
    await Promise.all(writers);
    assert.deepEqual(failures, []);
    for (const c of [0, 1, 2, 3]) {
      const got = await fetch(`${svc.url}/${SRC}/hot-copy-${c}`);
      const text = await got.text();
      assert.match(text, /^hot-(initial|\d-\d+)$/);
      assert.equal(got.headers.get("etag"), `"${md5Hex(text)}"`);
    }
  });

  await t.step("a copy of a multipart object keeps the -N ETag", async () => {
    const parts = [randomBytes(5 * 1024 * 1024), randomBytes(1234)];
    const { UploadId } = await s3.send(
      new CreateMultipartUploadCommand({ Bucket: SRC, Key: "mp", Metadata: { mp: "yes" } }),
    );
    const etags: string[] = [];
    for (const [i, part] of parts.entries()) {
      const res = await s3.send(
        new UploadPartCommand({ Bucket: SRC, Key: "mp", UploadId, PartNumber: i + 1, Body: part }),
      );
      etags.push(res.ETag!);
    }
    const done = await s3.send(
      new CompleteMultipartUploadCommand({
        Bucket: SRC,
        Key: "mp",
        UploadId,
        MultipartUpload: { Parts: etags.map((ETag, i) => ({ ETag, PartNumber: i + 1 })) },
      }),
    );
    const binary = etags.map((e) => Buffer.from(e.replaceAll('"', ""), "hex"));
    const expected = `"${createHash("md5").update(Buffer.concat(binary)).digest("hex")}-2"`;
    assert.equal(done.ETag, expected);
    const result = await s3.send(
      new CopyObjectCommand({ Bucket: DST, Key: "mp-copy", CopySource: `${SRC}/mp` }),
    );
    assert.equal(result.CopyObjectResult?.ETag, expected);
    const got = await s3.send(new GetObjectCommand({ Bucket: DST, Key: "mp-copy" }));
    assert.equal(got.ETag, expected);
    assert.deepEqual(got.Metadata, { mp: "yes" });
    const bytes = await bytesOf(got.Body);
    assert.equal(bytes.length, parts[0].length + parts[1].length);
    assert.deepEqual(bytes.subarray(parts[0].length), parts[1]);
    assert.equal(md5Hex(bytes), md5Hex(Buffer.concat(parts)));
    const head = await fetch(`${svc.url}/${DST}/mp-copy`, { method: "HEAD" });
    assert.equal(head.headers.get("x-amz-mp-parts-count"), "2");
  });

  s3.destroy();
});
