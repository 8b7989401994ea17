/**
 * Keys that are a path and a directory at once (issue 11 item 4): `foo/bar` beside
 * `foo/bar/xyzzy` in either order, and a key ending in `/` with a body. Legal S3, so svc stores
 * them on every backend; the filesystem backend keeps such an object inside its directory under a
 * reserved name (see src/storage/fs-nesting.ts). Also run with SVC_TEST_BACKEND=svc.
 */
import assert from "node:assert/strict";
import {
  CopyObjectCommand,
  CreateBucketCommand,
  DeleteObjectCommand,
  DeleteObjectsCommand,
  GetObjectCommand,
  HeadObjectCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  type S3Client,
} from "@aws-sdk/client-s3";
import { bytesOf, objectsOnLocalDisk, startSvc } from "./helpers/svc.ts";
import { assertSdkError } from "./helpers/assertions.ts";

const BUCKET = "paths";
const decoder = new TextDecoder();

async function body(s3: S3Client, key: string, bucket = BUCKET): Promise<string> {
  const got = await s3.send(new GetObjectCommand({ Bucket: bucket, Key: key }));
  return decoder.decode(await bytesOf(got.Body));
}

async function putText(s3: S3Client, key: string, text: string, bucket = BUCKET) {
  await s3.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: text }));
}

/** Every key of a listing, page by page (max-keys 1 crosses each boundary). */
async function listAll(s3: S3Client, prefix: string, delimiter?: string, bucket = BUCKET) {
  const keys: string[] = [];
  const prefixes: string[] = [];
  let token: string | undefined;
  do {
    const page = await s3.send(
      new ListObjectsV2Command({
        Bucket: bucket,
        Prefix: prefix,
        Delimiter: delimiter,
        MaxKeys: 1,
        ContinuationToken: token,
      }),
    );
    keys.push(...(page.Contents ?? []).map((c) => c.Key!));
    prefixes.push(...(page.CommonPrefixes ?? []).map((p) => p.Prefix!));
    token = page.NextContinuationToken;
  } while (token);
  return { keys, prefixes };
}

Deno.test("a key and keys below it coexist; a key ending in / keeps its body", async (t) => {
  await using svc = await startSvc();
  const s3 = svc.client();
  await s3.send(new CreateBucketCommand({ Bucket: BUCKET }));

  await t.step("foo/bar then foo/bar/xyzzy, and q/r/s then q/r", async () => {
    await putText(s3, "foo/bar", "bar");
    await putText(s3, "foo/bar/xyzzy", "xyzzy");
    await putText(s3, "q/r/s", "s");
    await putText(s3, "q/r", "r");
    await putText(s3, "foo/bar0", "bar0");
    await putText(s3, "foo/bar-x", "bar-x");
    for (const [key, text] of [["foo/bar", "bar"], ["foo/bar/xyzzy", "xyzzy"], ["q/r", "r"]]) {
      assert.equal(await body(s3, key), text, key);
      const head = await s3.send(new HeadObjectCommand({ Bucket: BUCKET, Key: key }));
      assert.equal(head.ContentLength, text.length, key);
    }
    assert.equal(await body(s3, "q/r/s"), "s");
  });

  await t.step("listings in UTF-8 byte order, with and without delimiter, every page", async () => {
    const flat = await listAll(s3, "foo/");
    assert.deepEqual(flat.keys, ["foo/bar", "foo/bar-x", "foo/bar/xyzzy", "foo/bar0"]);
    const rolled = await listAll(s3, "foo/", "/");
    assert.deepEqual(rolled.keys, ["foo/bar", "foo/bar-x", "foo/bar0"]);
    assert.deepEqual(rolled.prefixes, ["foo/bar/"]);
    const inside = await listAll(s3, "foo/bar/", "/");
    assert.deepEqual(inside.keys, ["foo/bar/xyzzy"]);
    assert.deepEqual((await listAll(s3, "q")).keys, ["q/r", "q/r/s"]);
    const one = await s3.send(new ListObjectsV2Command({ Bucket: BUCKET, Prefix: "foo/bar" }));
    assert.deepEqual(one.Contents?.map((c) => [c.Key, c.Size]), [
      ["foo/bar", 3],
      ["foo/bar-x", 5],
      ["foo/bar/xyzzy", 5],
      ["foo/bar0", 4],
    ]);
  });

  await t.step("copy onto and from such keys; overwrite", async () => {
    await s3.send(
      new CopyObjectCommand({
        Bucket: BUCKET,
        Key: "foo/bar/copy",
        CopySource: `${BUCKET}/foo/bar`,
      }),
    );
    assert.equal(await body(s3, "foo/bar/copy"), "bar");
    await s3.send(
      new CopyObjectCommand({
        Bucket: BUCKET,
        Key: "foo/bar",
        CopySource: `${BUCKET}/foo/bar/xyzzy`,
      }),
    );
    assert.equal(await body(s3, "foo/bar"), "xyzzy");
    await putText(s3, "foo/bar", "bar again");
    assert.equal(await body(s3, "foo/bar"), "bar again");
    assert.equal(await body(s3, "foo/bar/xyzzy"), "xyzzy");
  });

  await t.step("deleting one leaves the other", async () => {
    await s3.send(new DeleteObjectCommand({ Bucket: BUCKET, Key: "foo/bar" }));
    await assertSdkError(
      s3.send(new GetObjectCommand({ Bucket: BUCKET, Key: "foo/bar" })),
      404,
      "NoSuchKey",
    );
    assert.equal(await body(s3, "foo/bar/xyzzy"), "xyzzy");
    await s3.send(new DeleteObjectCommand({ Bucket: BUCKET, Key: "q/r/s" }));
    assert.equal(await body(s3, "q/r"), "r");
    assert.deepEqual((await listAll(s3, "q")).keys, ["q/r"]);
    assert.deepEqual((await listAll(s3, "foo/")).keys, [
      "foo/bar-x",
      "foo/bar/copy",
      "foo/bar/xyzzy",
      "foo/bar0",
    ]);
  });

  await t.step("a key ending in / with a body: put, get, list, overwrite, delete", async () => {
    await putText(s3, "dir/", "marker body");
    await putText(s3, "dir/child", "child");
    assert.equal(await body(s3, "dir/"), "marker body");
    const head = await s3.send(new HeadObjectCommand({ Bucket: BUCKET, Key: "dir/" }));
    assert.equal(head.ContentLength, 11);
    const listed = await s3.send(new ListObjectsV2Command({ Bucket: BUCKET, Prefix: "dir/" }));
    assert.deepEqual(listed.Contents?.map((c) => [c.Key, c.Size]), [["dir/", 11], [
      "dir/child",
      5,
    ]]);
    await s3.send(new PutObjectCommand({ Bucket: BUCKET, Key: "dir/", Body: new Uint8Array() }));
    assert.equal(await body(s3, "dir/"), "");
    await putText(s3, "dir/", "body again");
    assert.equal(await body(s3, "dir/"), "body again");
    // A marker with a body where an object of the same name without the slash exists.
    await putText(s3, "file", "file");
    await putText(s3, "file/", "file marker");
    assert.equal(await body(s3, "file"), "file");
    assert.equal(await body(s3, "file/"), "file marker");
    // DeleteObjects removes exactly the key named; DeleteObject of "x/" is recursive in svc.
    await s3.send(
      new DeleteObjectsCommand({ Bucket: BUCKET, Delete: { Objects: [{ Key: "dir/" }] } }),
    );
    await assertSdkError(
      s3.send(new GetObjectCommand({ Bucket: BUCKET, Key: "dir/" })),
      404,
      "NoSuchKey",
    );
    assert.equal(await body(s3, "dir/child"), "child");
    await s3.send(new DeleteObjectCommand({ Bucket: BUCKET, Key: "file/" }));
    assert.equal(await body(s3, "file"), "file");
  });

  await t.step("recursive delete of a prefix removes nested objects too", async () => {
    await putText(s3, "tree/a", "a");
    await putText(s3, "tree/a/b", "b");
    await putText(s3, "tree/a/", "marker");
    await s3.send(new DeleteObjectCommand({ Bucket: BUCKET, Key: "tree/" }));
    assert.deepEqual((await listAll(s3, "tree")).keys, []);
  });

  await t.step({
    name: "delta-compressed keys: an artifact and keys below its name",
    // A backing svc would refuse the outer svc's reference.bin in its compressed buckets.
    ignore: !objectsOnLocalDisk,
    fn: async () => {
      const zip = (n: number) => `PK\u0003\u0004 build ${n} `.repeat(200);
      await putText(s3, "rel/app.zip", zip(1));
      await putText(s3, "rel/app.zip/notes.txt", "notes");
      await putText(s3, "rel/app.zip/inner.zip", zip(2));
      await putText(s3, "rel/app.zip", zip(3));
      assert.equal(await body(s3, "rel/app.zip"), zip(3));
      assert.equal(await body(s3, "rel/app.zip/inner.zip"), zip(2));
      assert.deepEqual((await listAll(s3, "rel/")).keys, [
        "rel/app.zip",
        "rel/app.zip/inner.zip",
        "rel/app.zip/notes.txt",
      ]);
      await s3.send(new DeleteObjectCommand({ Bucket: BUCKET, Key: "rel/app.zip" }));
      assert.equal(await body(s3, "rel/app.zip/inner.zip"), zip(2));
      assert.deepEqual((await listAll(s3, "rel/")).keys, [
        "rel/app.zip/inner.zip",
        "rel/app.zip/notes.txt",
      ]);
    },
  });

  await t.step({
    name: "the reserved entry names are refused as key segments",
    ignore: !objectsOnLocalDisk,
    fn: async () => {
      await assertSdkError(putText(s3, "x/.svc-object", "x"), 400, "InvalidObjectName");
      await assertSdkError(putText(s3, ".svc-marker/y", "y"), 400, "InvalidObjectName");
    },
  });
});
