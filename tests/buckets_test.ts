/**
 * Black-box bucket tests: create/head/delete/list, the stub and 501 families, and the few
 * non-S3 routes on the S3 port. One server for the whole file.
 */
import assert from "node:assert/strict";
import * as S3 from "@aws-sdk/client-s3";
import { randomBytes, signedFetch as fetch, startSvc } from "./helpers/svc.ts";
import { assertSdkError } from "./helpers/assertions.ts";

const NS = "http://s3.amazonaws.com/doc/2006-03-01/";

/** One raw request: status, headers, body text and the error `<Code>` if any. */
async function req(url: string, method = "GET", body?: string) {
  const res = await fetch(url, { method, body });
  const text = await res.text();
  return {
    status: res.status,
    headers: res.headers,
    text,
    code: /<Code>([^<]*)<\/Code>/.exec(text)?.[1],
  };
}

Deno.test("buckets: create, head, delete, list, stubs and 501s", async (t) => {
  await using svc = await startSvc();
  const s3 = svc.client();
  const u = (path: string) => `${svc.url}${path}`;

  await t.step("CreateBucket: Location, name rules, re-create, configuration body", async () => {
    const created = await req(u("/bkt-one"), "PUT");
    assert.equal(created.status, 200, created.text);
    assert.equal(created.headers.get("location"), "/bkt-one");
    assert.ok(created.headers.get("x-amz-request-id"));
    const sdk = await s3.send(new S3.CreateBucketCommand({ Bucket: "bkt-sdk" }));
    assert.equal(sdk.Location, "/bkt-sdk");
    const bad = [
      "Upper",
      "ab",
      "a".repeat(64),
      "192.168.1.1",
      "xn--x",
      "a..b",
      "a.-b",
      "a-.b",
      "ab.-c.d",
      "-abc",
      "abc-",
      "a_b",
    ];
    for (const name of bad) {
      const res = await req(u(`/${name}`), "PUT");
      assert.deepEqual([res.status, res.code], [400, "InvalidBucketName"], name);
      assert.equal((await req(u(`/${name}`), "HEAD")).status, 404, name);
    }
    assert.equal((await req(u(`/${"a".repeat(63)}`), "PUT")).status, 200);
    assert.equal((await req(u("/a.b-c.1"), "PUT")).status, 200);
    const again = await req(u("/bkt-one"), "PUT");
    assert.deepEqual([again.status, again.code], [409, "BucketAlreadyOwnedByYou"]);
    const config = (inner: string) =>
      `<CreateBucketConfiguration xmlns="${NS}">${inner}</CreateBucketConfiguration>`;
    // svc's region is us-east-1: naming it (or nothing) is accepted, another region is not.
    for (
      const [name, inner] of [
        ["bkt-config", "<LocationConstraint>us-east-1</LocationConstraint>"],
        ["bkt-config-empty", "<LocationConstraint></LocationConstraint>"],
        ["bkt-config-none", ""],
      ]
    ) {
      const res = await req(u(`/${name}`), "PUT", config(inner));
      assert.equal(res.status, 200, `${name}: ${res.text}`);
    }
    const foreign = await req(
      u("/bkt-foreign"),
      "PUT",
      config("<LocationConstraint>eu-west-1</LocationConstraint>"),
    );
    assert.deepEqual([foreign.status, foreign.code], [400, "IllegalLocationConstraintException"]);
    await assertSdkError(
      s3.send(
        new S3.CreateBucketCommand({
          Bucket: "bkt-config-sdk",
          CreateBucketConfiguration: { LocationConstraint: "us-west-2" },
        }),
      ),
      400,
      "IllegalLocationConstraintException",
    );
    for (
      const inner of [
        "<Unknown>x</Unknown>",
        "<LocationConstraint>us-east-1</LocationConstraint><Extra/>",
        "<LocationConstraint><Nested/></LocationConstraint>",
        "<LocationConstraint>us-east-1</LocationConstraint><LocationConstraint>us-east-1</LocationConstraint>",
      ]
    ) {
      const res = await req(u("/bkt-unknown"), "PUT", config(inner));
      assert.deepEqual([res.status, res.code], [400, "MalformedXML"], inner);
    }
    for (const name of ["bkt-foreign", "bkt-config-sdk", "bkt-unknown"]) {
      assert.equal((await req(u(`/${name}`), "HEAD")).status, 404, `${name} was not created`);
    }
    for (const body of ["<CreateBucketConfiguration>", "not xml", "<Other/>", "<a></b>"]) {
      const res = await req(u("/bkt-malformed"), "PUT", body);
      assert.deepEqual([res.status, res.code], [400, "MalformedXML"], body);
    }
    assert.equal((await req(u("/bkt-malformed"), "HEAD")).status, 404, "nothing was created");
  });

  await t.step("HeadBucket: 200 with region; missing is 404 without a body", async () => {
    const head = await req(u("/bkt-one"), "HEAD");
    assert.equal(head.status, 200);
    assert.equal(head.headers.get("x-amz-bucket-region"), "us-east-1");
    const missing = await req(u("/bkt-missing"), "HEAD");
    assert.deepEqual([missing.status, missing.text], [404, ""]);
    assert.ok(missing.headers.get("x-amz-request-id"));
    const err = await s3.send(new S3.HeadBucketCommand({ Bucket: "bkt-missing" })).catch((e) => e);
    assert.equal(err.$metadata.httpStatusCode, 404);
    // The same bucket by GET says NoSuchBucket in the body.
    const get = await req(u("/bkt-missing"));
    assert.deepEqual([get.status, get.code], [404, "NoSuchBucket"]);
  });

  await t.step("DeleteBucket: not empty, empty, missing, purges uploads", async () => {
    await req(u("/bkt-del"), "PUT");
    await req(u("/bkt-del/dir/obj"), "PUT", "x");
    const full = await req(u("/bkt-del"), "DELETE");
    assert.deepEqual([full.status, full.code], [409, "BucketNotEmpty"]);
    assert.equal((await req(u("/bkt-del/dir/obj"))).text, "x", "nothing was removed");
    await req(u("/bkt-del/dir/obj"), "DELETE");
    const upload = await s3.send(
      new S3.CreateMultipartUploadCommand({ Bucket: "bkt-del", Key: "mp" }),
    );
    const other = await s3.send(
      new S3.CreateMultipartUploadCommand({ Bucket: "bkt-one", Key: "mp" }),
    );
    const empty = await req(u("/bkt-del"), "DELETE");
    assert.deepEqual([empty.status, empty.text], [204, ""]);
    assert.equal((await req(u("/bkt-del"), "HEAD")).status, 404);
    const gone = await req(u("/bkt-del"), "DELETE");
    assert.deepEqual([gone.status, gone.code], [404, "NoSuchBucket"]);
    await req(u("/bkt-del"), "PUT");
    const uploads = await s3.send(new S3.ListMultipartUploadsCommand({ Bucket: "bkt-del" }));
    assert.equal(uploads.Uploads?.length ?? 0, 0);
    const part = await req(u(`/bkt-del/mp?uploadId=${upload.UploadId}&partNumber=1`), "PUT", "x");
    assert.deepEqual([part.status, part.code], [404, "NoSuchUpload"]);
    // Another bucket's upload is untouched.
    const kept = await s3.send(new S3.ListMultipartUploadsCommand({ Bucket: "bkt-one" }));
    assert.deepEqual(kept.Uploads?.map((x) => x.UploadId), [other.UploadId]);
    await req(u("/bkt-del"), "DELETE");
  });

  await t.step("DeleteBucket racing a Complete: one of them wins, consistently", async () => {
    const part = randomBytes(5 * 1024 * 1024);
    for (const delayMs of [0, 5, 20]) {
      await req(u("/bkt-race"), "PUT");
      const create = new S3.CreateMultipartUploadCommand({ Bucket: "bkt-race", Key: "k" });
      const id = (await s3.send(create)).UploadId!;
      const parts = [];
      for (const n of [1, 2, 3, 4]) {
        const input = { Bucket: "bkt-race", Key: "k", UploadId: id, PartNumber: n, Body: part };
        const { ETag } = await s3.send(new S3.UploadPartCommand(input));
        parts.push(`<Part><PartNumber>${n}</PartNumber><ETag>${ETag}</ETag></Part>`);
      }
      const body = `<CompleteMultipartUpload>${parts.join("")}</CompleteMultipartUpload>`;
      const completing = req(u(`/bkt-race/k?uploadId=${id}`), "POST", body);
      await new Promise((r) => setTimeout(r, delayMs));
      const deleted = await req(u("/bkt-race"), "DELETE");
      const completed = await completing;
      const object = (await req(u("/bkt-race/k"), "HEAD")).status;
      // Either the Complete commits first (the bucket is not empty), or the bucket goes first
      // and takes the upload with it. Never both: no object may outlive its bucket.
      const outcome = JSON.stringify([deleted.status, completed.status, completed.code, object]);
      const valid = [
        [409, 200, undefined, 200],
        [204, 404, "NoSuchBucket", 404],
        [204, 404, "NoSuchUpload", 404],
      ];
      assert.ok(valid.some((o) => JSON.stringify(o) === outcome), outcome);
      if (deleted.status === 409) assert.equal(deleted.code, "BucketNotEmpty");
      await req(u("/bkt-race/k"), "DELETE");
      await req(u("/bkt-race"), "DELETE");
    }
  });

  await t.step("ListBuckets: prefix, max-buckets, continuation tokens", async () => {
    for (const n of [1, 2, 3, 4, 5]) await req(u(`/page-${n}`), "PUT");
    const all = await s3.send(new S3.ListBucketsCommand({}));
    const names = all.Buckets!.map((b) => b.Name);
    assert.deepEqual(names, [...names].sort());
    assert.ok(names.includes("bkt-one") && names.includes("page-5"));
    assert.ok(all.Owner?.ID);
    const prefixed = await s3.send(new S3.ListBucketsCommand({ Prefix: "page-" }));
    assert.deepEqual(prefixed.Buckets?.map((b) => b.Name), [1, 2, 3, 4, 5].map((n) => `page-${n}`));
    assert.equal(prefixed.Prefix, "page-");
    const seen: string[] = [];
    let token: string | undefined;
    for (let i = 0; i < 5; i++) {
      const page = await s3.send(
        new S3.ListBucketsCommand({ Prefix: "page-", MaxBuckets: 2, ContinuationToken: token }),
      );
      assert.ok(page.Buckets!.length <= 2);
      seen.push(...page.Buckets!.map((b) => b.Name!));
      token = page.ContinuationToken;
      if (!token) break;
    }
    assert.deepEqual(seen, [1, 2, 3, 4, 5].map((n) => `page-${n}`));
    const none = await s3.send(new S3.ListBucketsCommand({ Prefix: "zzz" }));
    assert.equal(none.Buckets?.length ?? 0, 0);
    for (const q of ["max-buckets=0", "max-buckets=abc", "continuation-token=%25%25%25"]) {
      const res = await req(u(`/?${q}`));
      assert.deepEqual([res.status, res.code], [400, "InvalidArgument"], q);
    }
  });

  await t.step("GetBucketLocation, GetBucketVersioning, GetBucketAcl", async () => {
    const location = await req(u("/bkt-one?location"));
    assert.equal(location.status, 200);
    assert.match(location.text, /<LocationConstraint[^>]*(\/>|><\/LocationConstraint>)\s*$/);
    const sdkLocation = await s3.send(new S3.GetBucketLocationCommand({ Bucket: "bkt-one" }));
    assert.ok(!sdkLocation.LocationConstraint);
    const versioning = await req(u("/bkt-one?versioning"));
    assert.equal(versioning.status, 200);
    assert.match(
      versioning.text,
      /<VersioningConfiguration[^>]*(\/>|><\/VersioningConfiguration>)\s*$/,
    );
    const acl = await s3.send(new S3.GetBucketAclCommand({ Bucket: "bkt-one" }));
    assert.ok(acl.Owner?.ID);
    assert.deepEqual(acl.Grants?.map((g) => [g.Grantee?.ID, g.Permission]), [[
      acl.Owner.ID,
      "FULL_CONTROL",
    ]]);
    for (const sub of ["acl", "location", "versioning"]) {
      const res = await req(u(`/bkt-missing?${sub}`));
      assert.deepEqual([res.status, res.code], [404, "NoSuchBucket"], sub);
    }
  });

  await t.step("unsupported families answer 501 NotImplemented", async () => {
    const cases: [string, string, string?][] = [
      ["PUT", "/bkt-one?acl", "<AccessControlPolicy/>"],
      ["PUT", "/bkt-one?tagging", "<Tagging><TagSet/></Tagging>"],
      ["GET", "/bkt-one?tagging"],
      ["DELETE", "/bkt-one?tagging"],
      ["GET", "/bkt-one?policy"],
      ["PUT", "/bkt-one?policy", "{}"],
      ["DELETE", "/bkt-one?policy"],
      ["GET", "/bkt-one?lifecycle"],
      ["GET", "/bkt-one?cors"],
      ["GET", "/bkt-one?website"],
      ["PUT", "/bkt-one?versioning", "<VersioningConfiguration/>"],
    ];
    // Newer S3 families must not fall through to DeleteBucket, PutObject or DeleteObject.
    await req(u("/bkt-fam"), "PUT");
    await req(u("/bkt-fam/obj"), "PUT", "keep");
    await req(u("/bkt-empty"), "PUT");
    for (const sub of ["metadataTable", "metadataConfiguration", "abac"]) {
      cases.push(["DELETE", `/bkt-empty?${sub}`], ["PUT", `/bkt-empty?${sub}`, "<x/>"]);
    }
    for (const sub of ["annotation", "renameObject", "encryption"]) {
      cases.push(["PUT", `/bkt-fam/obj?${sub}`, "overwritten"], ["DELETE", `/bkt-fam/obj?${sub}`]);
    }
    for (const [method, path, body] of cases) {
      const res = await req(u(path), method, body);
      assert.deepEqual([res.status, res.code], [501, "NotImplemented"], `${method} ${path}`);
      assert.ok(/<Message>[^<]+<\/Message>/.test(res.text), "with a message");
    }
    // The refusals changed nothing.
    assert.equal((await req(u("/bkt-one"), "HEAD")).status, 200);
    assert.equal((await req(u("/bkt-empty"), "HEAD")).status, 200);
    assert.equal((await req(u("/bkt-fam/obj"))).text, "keep");
  });

  await t.step("HEAD /, /_/health and unknown /_/ routes", async () => {
    const root = await req(u("/"), "HEAD");
    assert.equal(root.status, 200);
    const health = await fetch(u("/_/health"));
    assert.equal(health.status, 200);
    assert.match(health.headers.get("content-type") ?? "", /application\/json/);
    const body = await health.json();
    assert.equal(body.status, "ok");
    assert.ok(!JSON.stringify(body).toLowerCase().includes("version"), JSON.stringify(body));
    const unknown = await fetch(u("/_/x"));
    assert.equal(unknown.status, 404);
    assert.match(unknown.headers.get("content-type") ?? "", /application\/json/);
    assert.equal(typeof (await unknown.json()), "object");
  });
  s3.destroy();
});
