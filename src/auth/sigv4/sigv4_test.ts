/**
 * SigV4 verification against what real signers produce: AWS's published examples,
 * @aws-sdk/client-s3 (requests captured before they leave), @smithy/signature-v4 as the S3
 * client configures it, and aws4fetch, over awkward keys and queries. Refusals are in
 * sigv4-refusals_test.ts, the canonical forms in sigv4-canonical_test.ts.
 */
import assert from "node:assert/strict";
import {
  CreateMultipartUploadCommand,
  DeleteObjectsCommand,
  GetObjectCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  type S3Client,
  UploadPartCommand,
} from "@aws-sdk/client-s3";
import { BootstrapCredentials } from "../../iam/credentials.ts";
import { canonicalRequest } from "./sigv4-canonical.ts";
import { parseSignedRequest } from "./sigv4-parse.ts";
import { verifySignedRequest } from "./sigv4.ts";
import {
  AKID,
  aws4fetch,
  captureSdk,
  fromFetch,
  HOST,
  KEYS,
  NOW,
  refuses,
  sdkPath,
  smithyPresigned,
  smithySigned,
  STAMP,
  verify,
} from "../../testing/sigv4-test-signers.ts";

Deno.test("AWS's published header-auth examples verify", () => {
  const store = new BootstrapCredentials(
    "AKIAIOSFODNN7EXAMPLE",
    "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
  );
  const now = Date.UTC(2013, 4, 24);
  const empty = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
  const base = { host: "examplebucket.s3.amazonaws.com", "x-amz-date": "20130524T000000Z" };
  // deno-fmt-ignore
  const cases: [string, string, string, Record<string, string>, string, string][] = [
    ["GET", "/test.txt", "", { range: "bytes=0-9", "x-amz-content-sha256": empty }, "host;range;x-amz-content-sha256;x-amz-date", "f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41"],
    ["PUT", "/test%24file.text", "", { date: "Fri, 24 May 2013 00:00:00 GMT", "x-amz-storage-class": "REDUCED_REDUNDANCY", "x-amz-content-sha256": "44ce7dd67c959e0d3524ffac1771dfbba87d2b6b4b4e99e42034a8b803f8b072" }, "date;host;x-amz-content-sha256;x-amz-date;x-amz-storage-class", "98ad721746da40c64f1a55b78f14c238d841ea1380cd77a1b5971af0ece108bd"],
    ["GET", "/", "lifecycle", { "x-amz-content-sha256": empty }, "host;x-amz-content-sha256;x-amz-date", "fea454ca298b7da1c68078a5d1bdbfbbe0d65c699e0f91ac7a200a0136783543"],
    ["GET", "/", "max-keys=2&prefix=J", { "x-amz-content-sha256": empty }, "host;x-amz-content-sha256;x-amz-date", "34b48302e7b5fa45bde8084f4b7868a86f0a534bc59db6670ed5711ef69dc6f7"],
  ];
  for (const [method, rawPath, rawQuery, extra, signedHeaders, signature] of cases) {
    const headers = new Headers({ ...base, ...extra });
    headers.set(
      "authorization",
      `AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request,` +
        `SignedHeaders=${signedHeaders},Signature=${signature}`,
    );
    const input = { method, rawPath, rawQuery, headers };
    const signed = parseSignedRequest(input)!;
    const verified = verifySignedRequest(signed, input, store, now, { clockSkewSeconds: 900 });
    assert.equal(verified.signature, signature);
    assert.equal(verified.principal.name, "$bootstrap");
  }
  // The documented canonical request of the first example, byte for byte.
  const input = {
    method: "GET",
    rawPath: "/test.txt",
    rawQuery: "",
    headers: new Headers({ ...base, range: "bytes=0-9", "x-amz-content-sha256": empty }),
  };
  input.headers.set(
    "authorization",
    "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request, " +
      "SignedHeaders=host;range;x-amz-content-sha256;x-amz-date, Signature=" + "0".repeat(64),
  );
  assert.equal(
    canonicalRequest(parseSignedRequest(input)!, input),
    `GET\n/test.txt\n\nhost:examplebucket.s3.amazonaws.com\nrange:bytes=0-9\n` +
      `x-amz-content-sha256:${empty}\nx-amz-date:20130524T000000Z\n\n` +
      `host;range;x-amz-content-sha256;x-amz-date\n${empty}`,
  );
});

Deno.test("AWS's published presigned example verifies until it expires", () => {
  const store = new BootstrapCredentials(
    "AKIAIOSFODNN7EXAMPLE",
    "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
  );
  const input = {
    method: "GET",
    rawPath: "/test.txt",
    rawQuery: "X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIAIOSFODNN7EXAMPLE%2F20130524" +
      "%2Fus-east-1%2Fs3%2Faws4_request&X-Amz-Date=20130524T000000Z&X-Amz-Expires=86400&" +
      "X-Amz-SignedHeaders=host&X-Amz-Signature=" +
      "aeeed9bbccd4d02ee5c0109b86d86835f995330da4c265957d157751f604d404",
    headers: new Headers({ host: "examplebucket.s3.amazonaws.com" }),
  };
  const signed = parseSignedRequest(input)!;
  const at = (now: number) =>
    verifySignedRequest(signed, input, store, now, { clockSkewSeconds: 300 });
  assert.equal(at(Date.UTC(2013, 4, 24, 23, 59, 59)).presigned, true);
  assert.throws(() => at(Date.UTC(2013, 4, 25, 0, 0, 1)), { code: "AccessDenied" });
});

Deno.test("@smithy/signature-v4 header signatures verify over awkward keys and queries", async () => {
  const query = {
    prefix: "a b+c/é~'()*!",
    "list-type": "2",
    empty: "",
    multi: ["b", "a", "a b", "A"],
    "encoded name!": "x",
  };
  for (const key of KEYS) {
    for (const method of ["GET", "PUT", "DELETE", "HEAD"]) {
      const input = await smithySigned(method, sdkPath("bucket", key), query, {
        "x-amz-meta-note": "  spaced   value  ",
        "content-type": "text/plain",
      });
      const verified = verify(input);
      assert.equal(verified.accessKeyId, AKID);
      assert.equal(verified.scope, "20260101/eu-central-1/s3/aws4_request");
      assert.equal(verified.presigned, false);
    }
  }
});

Deno.test("@smithy/signature-v4 presigned URLs verify over awkward keys and queries", async () => {
  for (const key of KEYS) {
    const input = await smithyPresigned("GET", sdkPath("bucket", key), {
      "response-content-disposition": 'attachment; filename="é x+y.txt"',
      versionId: "",
    });
    assert.match(input.rawQuery, /x-amz-content-sha256=UNSIGNED-PAYLOAD/i);
    const verified = verify(input, NOW + 599_000);
    assert.equal(verified.presigned, true);
    assert.equal(verified.payloadHash, "UNSIGNED-PAYLOAD");
  }
});

Deno.test("@aws-sdk/client-s3 requests verify, and a changed byte does not", async () => {
  const calls = KEYS.flatMap((Key) => [
    (c: S3Client) =>
      c.send(new PutObjectCommand({ Bucket: "b", Key, Body: "hi", Metadata: { a: "b" } })),
    (c: S3Client) => c.send(new GetObjectCommand({ Bucket: "b", Key, Range: "bytes=0-1" })),
    (c: S3Client) => c.send(new CreateMultipartUploadCommand({ Bucket: "b", Key })),
    (c: S3Client) =>
      c.send(
        new UploadPartCommand({ Bucket: "b", Key, UploadId: "u+/=", PartNumber: 2, Body: "x" }),
      ),
    (c: S3Client) => c.send(new ListObjectsV2Command({ Bucket: "b", Prefix: Key, Delimiter: "/" })),
  ]);
  calls.push((c) =>
    c.send(new DeleteObjectsCommand({ Bucket: "b", Delete: { Objects: [{ Key: "x" }] } }))
  );
  const inputs = await captureSdk(calls);
  for (const input of inputs) {
    verify(input, Date.now());
    const path = { ...input, rawPath: input.rawPath + "Z" };
    assert.throws(() => verify(path, Date.now()), { code: "SignatureDoesNotMatch" });
    const query = { ...input, rawQuery: input.rawQuery + "&extra=1" };
    assert.throws(() => verify(query, Date.now()), { code: "SignatureDoesNotMatch" });
  }
});

Deno.test("aws4fetch header signatures and presigned URLs verify", async () => {
  for (const key of KEYS) {
    const encoded = key.split("/").map(encodeURIComponent).join("/");
    const url = `http://${HOST}/bucket/${encoded}?prefix=${encodeURIComponent("a b+é~'")}` +
      `&space=a+b&empty=&flag&list-type=2`;
    const headers = { "x-amz-meta-note": "v", "content-type": "text/plain" };
    const signed = await aws4fetch().sign(url, {
      method: "PUT",
      headers,
      aws: { datetime: STAMP },
    });
    assert.equal(verify(fromFetch(signed)).payloadHash, "UNSIGNED-PAYLOAD");
    const presigned = await aws4fetch().sign(url, {
      method: "GET",
      aws: { signQuery: true, datetime: STAMP },
    });
    assert.equal(verify(fromFetch(presigned), NOW + 86_000_000).presigned, true);
  }
});

Deno.test("aws4fetch cases svc refuses by decision (see sigv4-canonical.ts)", async () => {
  // A literal `+` in the path: aws4fetch signs a space, svc's router reads a plus.
  const plus = await aws4fetch().sign(`http://${HOST}/b/a+b`, { aws: { datetime: STAMP } });
  refuses(fromFetch(plus), "SignatureDoesNotMatch");
  // Repeated query names: aws4fetch signs only the first for s3; svc signs all of them.
  const repeated = await aws4fetch().sign(`http://${HOST}/b?x=1&x=2`, { aws: { datetime: STAMP } });
  refuses(fromFetch(repeated), "SignatureDoesNotMatch");
});
