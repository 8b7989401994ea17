/**
 * Black-box tests of the single-object surface: PutObject/GetObject/HeadObject bodies, metadata
 * and keys, DeleteObject, filesystem key rules and path safety, and the ACL/tagging stubs.
 * Integrity headers and size limits are in conditionals_test.ts.
 */
import assert from "node:assert/strict";
import {
  DeleteObjectCommand,
  GetObjectAclCommand,
  GetObjectCommand,
  HeadObjectCommand,
  ListObjectsV2Command,
  PutBucketTaggingCommand,
  PutObjectAclCommand,
  PutObjectCommand,
  type S3Client,
} from "@aws-sdk/client-s3";
import {
  bytesOf,
  objectsOnLocalDisk,
  randomBytes,
  signedFetch as fetch,
  startSvc,
} from "./helpers/svc.ts";
import { assertError, assertSdkError, codeOf, md5Hex } from "./helpers/assertions.ts";

const BUCKET = "objects";
const utf8 = new TextEncoder();

/** One HTTP/1.1 request over a bare socket, so the path reaches svc exactly as written. */
async function rawHttp(
  port: number,
  method: string,
  path: string,
  body = "",
): Promise<{ status: number; text: string }> {
  const conn = await Deno.connect({ hostname: "127.0.0.1", port });
  const head = `${method} ${path} HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\n` +
    `Content-Length: ${utf8.encode(body).length}\r\nConnection: close\r\n\r\n`;
  await conn.write(utf8.encode(head + body));
  const text = await new Response(conn.readable).text();
  return { status: Number(/^HTTP\/1\.1 (\d{3})/.exec(text)?.[1]), text };
}

async function getBytes(s3: S3Client, key: string, bucket = BUCKET) {
  const got = await s3.send(new GetObjectCommand({ Bucket: bucket, Key: key }));
  return { got, bytes: await bytesOf(got.Body) };
}

function treeOf(dir: string, prefix = ""): string[] {
  const out: string[] = [];
  for (const entry of Deno.readDirSync(dir)) {
    const name = prefix + entry.name;
    out.push(entry.isDirectory ? `${name}/` : name);
    if (entry.isDirectory) out.push(...treeOf(`${dir}/${entry.name}`, `${name}/`));
  }
  return out.sort();
}

Deno.test("objects: single-object surface against one server", async (t) => {
  // Raw TCP requests below cannot carry a signature: this server runs open
  // (authentication: none); signed access is covered by tests/auth_test.ts and the SDK suites.
  await using svc = await startSvc({ env: { SVC_AUTHENTICATION: "none" } });
  const s3 = svc.client();
  const url = (path: string) => svc.url + path;
  // deno-lint-ignore no-explicit-any
  const fails = (command: any, status: number, name: string) =>
    assertSdkError(s3.send(command), status, name);
  const req = (method: string, key: string, body?: BodyInit) =>
    fetch(url(`/${BUCKET}/${key}`), { method, body });
  assert.equal((await fetch(url(`/${BUCKET}`), { method: "PUT" })).status, 200);
  assert.equal((await fetch(url("/other-bucket"), { method: "PUT" })).status, 200);

  await t.step("empty, 1-byte and ~5 MB bodies round-trip byte-exact with md5 ETags", async () => {
    for (const body of [new Uint8Array(0), Uint8Array.of(0xff), randomBytes(5 * 1024 * 1024 + 7)]) {
      const key = `size-${body.length}`;
      const put = await s3.send(new PutObjectCommand({ Bucket: BUCKET, Key: key, Body: body }));
      assert.equal(put.ETag, `"${md5Hex(body)}"`);
      const { got, bytes } = await getBytes(s3, key);
      assert.equal(got.ContentLength, body.length);
      assert.equal(got.ETag, `"${md5Hex(body)}"`);
      assert.deepEqual(bytes, body);
      const head = await s3.send(new HeadObjectCommand({ Bucket: BUCKET, Key: key }));
      assert.equal(head.ContentLength, body.length);
      assert.equal(head.ContentType, "application/octet-stream");
      assert.equal(head.AcceptRanges, "bytes");
    }
    const raw = await fetch(url(`/${BUCKET}/size-0`));
    assert.equal(raw.status, 200);
    assert.equal(raw.headers.get("content-length"), "0");
    assert.equal((await raw.arrayBuffer()).byteLength, 0);
  });

  await t.step("user metadata is case-folded; stored headers round-trip", async () => {
    const gzipped = await bytesOf(
      new Blob([utf8.encode("hello hello hello")]).stream().pipeThrough(
        new CompressionStream("gzip"),
      ),
    );
    const expires = new Date(Date.UTC(2031, 0, 2, 3, 4, 5));
    await s3.send(
      new PutObjectCommand({
        Bucket: BUCKET,
        Key: "meta",
        Body: gzipped,
        Metadata: { "Mixed-Case": "Value Kept", plain: "1" },
        ContentType: "text/x-custom; charset=utf-8",
        CacheControl: "max-age=60, private",
        ContentDisposition: 'attachment; filename="x y.txt"',
        ContentEncoding: "gzip",
        ContentLanguage: "de-CH",
        Expires: expires,
      }),
    );
    const { got, bytes } = await getBytes(s3, "meta");
    assert.deepEqual(bytes, gzipped); // stored as sent: svc never decodes Content-Encoding
    assert.deepEqual(got.Metadata, { "mixed-case": "Value Kept", plain: "1" });
    assert.equal(got.ContentType, "text/x-custom; charset=utf-8");
    assert.equal(got.CacheControl, "max-age=60, private");
    assert.equal(got.ContentDisposition, 'attachment; filename="x y.txt"');
    assert.equal(got.ContentEncoding, "gzip");
    assert.equal(got.ContentLanguage, "de-CH");
    assert.equal(got.ExpiresString, expires.toUTCString());
    const head = await fetch(url(`/${BUCKET}/meta`), { method: "HEAD" });
    assert.equal(head.headers.get("x-amz-meta-mixed-case"), "Value Kept");
    assert.equal(head.headers.get("content-encoding"), "gzip");
    assert.equal(head.headers.get("expires"), expires.toUTCString());

    // Raw headers in any case fold to lowercase; no Content-Type → application/octet-stream.
    const put = await fetch(url(`/${BUCKET}/meta-raw`), {
      method: "PUT",
      body: Uint8Array.of(1, 2, 3),
      headers: { "X-AMZ-META-Shouting": "Loud", "x-amz-meta-quiet": "soft" },
    });
    assert.equal(put.status, 200);
    await put.body?.cancel();
    const raw = await s3.send(new HeadObjectCommand({ Bucket: BUCKET, Key: "meta-raw" }));
    assert.deepEqual(raw.Metadata, { shouting: "Loud", quiet: "soft" });
    assert.equal(raw.ContentType, "application/octet-stream");
    assert.equal(raw.CacheControl, undefined);
    // User metadata is limited to 2 KB (names plus values).
    const putMeta = (size: number) =>
      fetch(url(`/${BUCKET}/meta-big`), {
        method: "PUT",
        body: new Uint8Array(size),
        headers: { "x-amz-meta-big": "v".repeat(2044 + size) },
      });
    // An S3 backend's own 2 KB limit also counts svc's x-amz-meta-svc-* fields (see README).
    if (objectsOnLocalDisk) assert.equal((await putMeta(1)).status, 200);
    await assertError(putMeta(2), 400, "MetadataTooLarge");
    if (objectsOnLocalDisk) {
      assert.equal(Number((await req("HEAD", "meta-big")).headers.get("content-length")), 1);
    }
  });

  await t.step("keys with unicode, spaces and reserved characters round-trip", async () => {
    const keys = [
      "ünï cødé/日本語/😀.txt",
      "with space/and  two",
      "plus+sign",
      "per%cent%20literal",
      "tilde~x",
      "hash#frag",
      "question?mark=1&x",
      "amp&lt;xml>'\"",
      "dots/.../x",
      ".svc/not-internal",
      " lead and trail ",
    ];
    for (const [i, key] of keys.entries()) {
      await s3.send(new PutObjectCommand({ Bucket: BUCKET, Key: `k/${key}`, Body: `v${i}` }));
    }
    for (const [i, key] of keys.entries()) {
      const { bytes } = await getBytes(s3, `k/${key}`);
      assert.equal(new TextDecoder().decode(bytes), `v${i}`, key);
    }
    const list = await s3.send(new ListObjectsV2Command({ Bucket: BUCKET, Prefix: "k/" }));
    const sorted = keys.map((k) => `k/${k}`).sort((a, b) =>
      Buffer.compare(Buffer.from(a), Buffer.from(b))
    );
    assert.deepEqual(list.Contents?.map((c) => c.Key), sorted);
    // `+` in a path is a literal plus, never a space.
    const plus = await fetch(url(`/${BUCKET}/k/plus+sign`));
    assert.equal(await plus.text(), "v2");
  });

  await t.step("1024-byte key is stored, 1025 bytes is KeyTooLongError", async () => {
    const segment = "s".repeat(200);
    const base = [segment, segment, segment, segment, segment].join("/"); // 1004 bytes
    const key1024 = `${base}/${"é".repeat(9)}x`; // + "/" + 18 + 1 = 1024 bytes
    assert.equal(utf8.encode(key1024).length, 1024);
    await s3.send(new PutObjectCommand({ Bucket: BUCKET, Key: key1024, Body: "long" }));
    assert.equal(new TextDecoder().decode((await getBytes(s3, key1024)).bytes), "long");
    const key1025 = `${key1024}y`;
    await fails(
      new PutObjectCommand({ Bucket: BUCKET, Key: key1025, Body: "x" }),
      400,
      "KeyTooLongError",
    );
    await fails(new HeadObjectCommand({ Bucket: BUCKET, Key: key1025 }), 404, "NotFound");
  });

  await t.step("overwrite replaces bytes and every piece of metadata", async () => {
    await s3.send(
      new PutObjectCommand({
        Bucket: BUCKET,
        Key: "over",
        Body: "first version",
        Metadata: { a: "1" },
        ContentType: "text/plain",
        CacheControl: "no-cache",
      }),
    );
    await s3.send(
      new PutObjectCommand({ Bucket: BUCKET, Key: "over", Body: "2nd", Metadata: { b: "2" } }),
    );
    const { got, bytes } = await getBytes(s3, "over");
    assert.equal(new TextDecoder().decode(bytes), "2nd");
    assert.deepEqual(got.Metadata, { b: "2" });
    assert.equal(got.ContentType, "application/octet-stream");
    assert.equal(got.CacheControl, undefined);
    assert.equal(got.ETag, `"${md5Hex("2nd")}"`);
  });

  await t.step("ACL and bucket tagging stubs; missing bucket and key", async () => {
    await s3.send(new PutObjectCommand({ Bucket: BUCKET, Key: "acl", Body: "a" }));
    const acl = await s3.send(new GetObjectAclCommand({ Bucket: BUCKET, Key: "acl" }));
    assert.equal(acl.Grants?.length, 1);
    assert.equal(acl.Grants?.[0].Permission, "FULL_CONTROL");
    await fails(new GetObjectAclCommand({ Bucket: BUCKET, Key: "no-such-key" }), 404, "NoSuchKey");
    await fails(
      new PutObjectAclCommand({ Bucket: BUCKET, Key: "acl", ACL: "public-read" }),
      501,
      "NotImplemented",
    );
    // Object tagging is implemented (tagging_test.ts); bucket tagging is not.
    await fails(
      new PutBucketTaggingCommand({
        Bucket: BUCKET,
        Tagging: { TagSet: [{ Key: "a", Value: "b" }] },
      }),
      501,
      "NotImplemented",
    );
    await fails(new GetObjectCommand({ Bucket: "no-such-bucket", Key: "x" }), 404, "NoSuchBucket");
    await fails(new GetObjectCommand({ Bucket: BUCKET, Key: "no-such-key" }), 404, "NoSuchKey");
    await assertError(
      fetch(url("/no-such-bucket/x"), { method: "PUT", body: "x" }),
      404,
      "NoSuchBucket",
    );
    const head = await fetch(url("/no-such-bucket/x"), { method: "HEAD" });
    assert.equal(head.status, 404);
  });

  // A key beside keys below it, and a key ending in "/" with a body: tests/key_paths_test.ts.

  await t.step("traversal and NUL are refused; nothing lands outside", async () => {
    const files = () =>
      objectsOnLocalDisk ? treeOf(svc.dataDir).filter((p) => !p.startsWith(".svc/")) : [];
    const before = files();
    const evil =
      "../x ../other-bucket/x a/%2e%2e/b a/%2E%2E/%2e%2e/%2e%2e/x ..%2f..%2fx a%00b ./x a//b";
    for (const path of evil.split(" ").map((key) => `/${BUCKET}/${key}`)) {
      const res = await rawHttp(svc.port, "PUT", path, "evil");
      assert.equal(res.status, 400, `${path}: ${res.text}`);
      assert.equal(codeOf(res.text), "InvalidObjectName", path);
    }
    const after = files();
    // Reads of such keys never reach outside the bucket either: they name no object.
    await s3.send(new PutObjectCommand({ Bucket: "other-bucket", Key: "secret", Body: "s" }));
    for (
      const path of [`/${BUCKET}/../other-bucket/secret`, `/${BUCKET}/%2e%2e/other-bucket/secret`]
    ) {
      const res = await rawHttp(svc.port, "GET", path);
      assert.equal(res.status, 404, `${path}: ${res.text}`);
      assert.equal(codeOf(res.text), "NoSuchKey", path);
      assert.ok(!res.text.endsWith("\r\n\r\ns"), path);
      const del = await rawHttp(svc.port, "DELETE", path);
      assert.equal(del.status, 204, `${path}: ${del.text}`);
      const prefixDel = await rawHttp(svc.port, "DELETE", `/${BUCKET}/../other-bucket/`);
      assert.equal(prefixDel.status, 204);
    }
    assert.equal(await (await fetch(url("/other-bucket/secret"))).text(), "s");
    // Bucket names cannot reach the internal state directory or leave the data directory.
    const internal: [string, string, number, string][] = [
      ["PUT", "/.svc/tmp/x", 404, "NoSuchBucket"],
      ["GET", "/.svc?list-type=2", 404, "NoSuchBucket"],
      ["PUT", "/.svc", 400, "InvalidBucketName"],
      ["PUT", `/${BUCKET}%2F..%2Fother-bucket/x`, 404, "NoSuchBucket"],
      ["PUT", "/%2e%2e/x", 404, "NoSuchBucket"],
      // A dot bucket never reads another bucket's objects (`./other-bucket/secret`).
      ["GET", "/%2e/other-bucket/secret", 404, "NoSuchBucket"],
      ["HEAD", "/%2e/other-bucket/secret", 404, ""],
      ["GET", "/%2e%2e/other-bucket/secret", 404, "NoSuchBucket"],
      ["GET", "/%2e?list-type=2", 404, "NoSuchBucket"],
      ["DELETE", "/%2e/other-bucket/secret", 404, "NoSuchBucket"],
      ["PUT", `/${BUCKET}/bad%ZZescape`, 400, "InvalidArgument"],
      ["PUT", `/${BUCKET}/bad%C3%28utf8`, 400, "InvalidArgument"],
    ];
    for (const [method, path, status, code] of internal) {
      const res = await rawHttp(svc.port, method, path, method === "PUT" ? "evil" : "");
      assert.equal(res.status, status, `${method} ${path}: ${res.text}`);
      if (method !== "HEAD") assert.equal(codeOf(res.text), code, `${method} ${path}`);
    }
    assert.equal(await (await fetch(url("/other-bucket/secret"))).text(), "s");
    await s3.send(new DeleteObjectCommand({ Bucket: "other-bucket", Key: "secret" }));
    assert.deepEqual(after, before);
    const other = await s3.send(new ListObjectsV2Command({ Bucket: "other-bucket" }));
    assert.equal(other.KeyCount, 0);
    // The server is still serving.
    await s3.send(new PutObjectCommand({ Bucket: BUCKET, Key: "after-traversal", Body: "ok" }));
    assert.equal(await (await fetch(url(`/${BUCKET}/after-traversal`))).text(), "ok");
  });

  await t.step("DeleteObject: missing key is 204, key/ deletes the subtree", async () => {
    const del = await req("DELETE", "never-existed");
    assert.equal(del.status, 204);
    await del.body?.cancel();
    await s3.send(new DeleteObjectCommand({ Bucket: BUCKET, Key: "never/existed/either" }));
    const keys = [
      "tree/",
      "tree/a",
      "tree/sub/b",
      "tree/sub/deeper/",
      "tree/sub/deeper/c",
      "tree/sub/deeper/still/d",
      "tree-other/x",
      "treex",
    ];
    for (const key of keys) {
      await s3.send(new PutObjectCommand({ Bucket: BUCKET, Key: key, Body: new Uint8Array(0) }));
    }
    // Without the trailing slash a directory is not an object: nothing is deleted.
    for (const key of ["tree", "tree/sub"]) assert.equal((await req("DELETE", key)).status, 204);
    const all = await s3.send(new ListObjectsV2Command({ Bucket: BUCKET, Prefix: "tree" }));
    assert.equal(all.KeyCount, keys.length);
    const res = await req("DELETE", "tree/");
    assert.equal(res.status, 204);
    await res.body?.cancel();
    const left = await s3.send(new ListObjectsV2Command({ Bucket: BUCKET, Prefix: "tree" }));
    assert.deepEqual(left.Contents?.map((c) => c.Key), ["tree-other/x", "treex"]);
    if (objectsOnLocalDisk) {
      assert.equal(treeOf(`${svc.dataDir}/${BUCKET}`).some((p) => p.startsWith("tree/")), false);
    }
    await assertError(fetch(url("/no-such-bucket/x"), { method: "DELETE" }), 404, "NoSuchBucket");
  });

  s3.destroy();
});
