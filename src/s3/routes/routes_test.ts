/**
 * The route table: each request shape the suite exercises resolves to its operation, IAM action
 * and metrics label; refusals answer as the old switch did; every served row's label is the one
 * its method and path shape had before the table.
 */
import assert from "node:assert/strict";
import { SvcError } from "../../lib/errors.ts";
import { parseS3Request } from "../request.ts";
import { S3_ROUTES } from "./route-table.ts";
import { labelOf } from "./routes.ts";
import type { Resolved } from "./route-types.ts";
import { resolveS3 } from "./router.ts";

function resolve(method: string, path: string, headers: Record<string, string> = {}): Resolved {
  const raw = new Request(`http://svc.test${path}`, { method, headers });
  return resolveS3(parseS3Request(raw, "REQ", raw.signal));
}

const FORM = { "content-type": "multipart/form-data; boundary=x" };
const COPY = { "x-amz-copy-source": "/src/a.txt" };

/** method, path, headers → operation, action, label, bucket, key. */
const CASES: [string, string, Record<string, string>, string, string, string][] = [
  ["GET", "/", {}, "ListBuckets", "list", "list_buckets"],
  ["HEAD", "/", {}, "HeadService", "list", "head_root"],
  ["GET", "/b", {}, "ListObjects", "list", "list_objects"],
  ["GET", "/b?list-type=2&prefix=a", {}, "ListObjectsV2", "list", "list_objects"],
  ["GET", "/b?list-type=1", {}, "ListObjects", "list", "list_objects"],
  ["GET", "/b?location", {}, "GetBucketLocation", "list", "list_objects"],
  ["GET", "/b?versioning", {}, "GetBucketVersioning", "list", "list_objects"],
  ["GET", "/b?acl", {}, "GetBucketAcl", "list", "list_objects"],
  ["GET", "/b?uploads", {}, "ListMultipartUploads", "list", "list_objects"],
  ["HEAD", "/b", {}, "HeadBucket", "list", "head_bucket"],
  ["PUT", "/b", {}, "CreateBucket", "admin", "create_bucket"],
  ["DELETE", "/b", {}, "DeleteBucket", "admin", "delete_bucket"],
  ["POST", "/b?delete", {}, "DeleteObjects", "delete", "post_bucket"],
  // A form posted to ?delete is DeleteObjects: the subresource decides.
  ["POST", "/b?delete", FORM, "DeleteObjects", "delete", "post_bucket"],
  ["POST", "/b", FORM, "PostObject", "write", "post_bucket"],
  ["GET", "/b/k", {}, "GetObject", "read", "get_object"],
  ["GET", "/b/k?versionId=null", {}, "GetObject", "read", "get_object"],
  ["GET", "/b/k?partNumber=2", {}, "GetObject", "read", "get_object"],
  ["HEAD", "/b/k", {}, "HeadObject", "read", "head_object"],
  ["HEAD", "/b/k?acl", {}, "HeadObject", "read", "head_object"],
  ["GET", "/b/k?tagging", {}, "GetObjectTagging", "read", "get_object"],
  ["PUT", "/b/k?tagging", {}, "PutObjectTagging", "write", "put_object"],
  ["DELETE", "/b/k?tagging", {}, "DeleteObjectTagging", "write", "delete_object"],
  // ?tagging wins over ?uploadId (the old switch checked it first).
  ["GET", "/b/k?tagging&uploadId=u", {}, "GetObjectTagging", "read", "get_object"],
  ["GET", "/b/k?acl", {}, "GetObjectAcl", "read", "get_object"],
  ["GET", "/b/k?uploadId=u", {}, "ListParts", "list", "get_object"],
  ["PUT", "/b/k", {}, "PutObject", "write", "put_object"],
  ["PUT", "/b/k", COPY, "CopyObject", "write", "put_object"],
  ["PUT", "/b/k?partNumber=1&uploadId=u", {}, "UploadPart", "write", "put_object"],
  ["PUT", "/b/k?partNumber=1", {}, "UploadPart", "write", "put_object"],
  ["PUT", "/b/k?uploadId=u", {}, "UploadPart", "write", "put_object"],
  ["PUT", "/b/k?partNumber=1&uploadId=u", COPY, "UploadPartCopy", "write", "put_object"],
  ["PUT", "/b/k?uploadId=u", COPY, "UploadPartCopy", "write", "put_object"],
  ["DELETE", "/b/k", {}, "DeleteObject", "delete", "delete_object"],
  ["DELETE", "/b/k?uploadId=u", {}, "AbortMultipartUpload", "write", "delete_object"],
  ["POST", "/b/k?uploads", {}, "CreateMultipartUpload", "write", "post_object"],
  ["POST", "/b/k?uploadId=u", {}, "CompleteMultipartUpload", "write", "post_object"],
  // ?uploads and ?uploadId together: ?uploads is the first row (as the old switch).
  ["POST", "/b/k?uploads&uploadId=u", {}, "CreateMultipartUpload", "write", "post_object"],
];

for (const [method, path, headers, operation, action, label] of CASES) {
  const shown = `${method} ${path}${
    Object.keys(headers).length ? " " + JSON.stringify(headers) : ""
  }`;
  Deno.test(`route table: ${shown} → ${operation} (${action}, ${label})`, () => {
    const resolved = resolve(method, path, headers);
    assert.equal(resolved.kind, "route", `refused: ${(resolved as { error?: Error }).error}`);
    if (resolved.kind !== "route") return;
    assert.equal(resolved.operation, operation);
    assert.equal(resolved.action, action);
    assert.equal(resolved.label, label);
  });
}

Deno.test("route table: the resolved bucket and key are the path's, decoded", () => {
  const resolved = resolve("GET", "/my-bucket/dir/a%20b.txt");
  assert.equal(resolved.kind, "route");
  if (resolved.kind !== "route") return;
  assert.equal(resolved.bucket, "my-bucket");
  assert.equal(resolved.key, "dir/a b.txt");
  const bucketLevel = resolve("GET", "/my-bucket?list-type=2");
  assert.ok(bucketLevel.kind === "route" && bucketLevel.key === null);
  const service = resolve("GET", "/");
  assert.ok(service.kind === "route" && service.bucket === null && service.key === null);
});

Deno.test("route table: every served row keeps the label its method and shape had", () => {
  let served = 0;
  for (const route of S3_ROUTES.routes) {
    if ("refuse" in route) continue;
    served++;
    assert.equal(route.label, labelOf(route.method, route.shape), route.operation);
  }
  assert.ok(served > 0);
});

Deno.test("route table: every served row is exercised by the cases above", () => {
  const covered = new Set(CASES.map((c) => c[3]));
  const served = S3_ROUTES.routes.filter((route) => !("refuse" in route));
  assert.deepEqual(served.map((r) => r.operation).filter((name) => !covered.has(name)), []);
});

Deno.test("route table: operation names are unique", () => {
  const names = S3_ROUTES.routes.map((route) => route.operation);
  assert.deepEqual(names.filter((name, i) => names.indexOf(name) !== i), []);
});

/** method, path, headers → error code, message pattern, label. */
const REFUSALS: [string, string, Record<string, string>, string, RegExp, string | undefined][] = [
  ["PUT", "/b?acl", {}, "NotImplemented", /Setting bucket ACLs/, "create_bucket"],
  ["PUT", "/b?versioning", {}, "NotImplemented", /Object versioning/, "create_bucket"],
  ["PUT", "/b/k?acl", {}, "NotImplemented", /Setting object ACLs/, "put_object"],
  ["GET", "/b?policy", {}, "NotImplemented", /"policy"/, "list_objects"],
  // Unsupported families hold whatever the method: DELETE ?metadataTable never deletes a bucket.
  ["DELETE", "/b?metadataTable", {}, "NotImplemented", /"metadataTable"/, "delete_bucket"],
  ["PUT", "/b?tagging", {}, "NotImplemented", /Bucket tagging/, "create_bucket"],
  ["PUT", "/b/k?renameObject", {}, "NotImplemented", /"renameObject"/, "put_object"],
  ["GET", "/b/k?versionId=3", {}, "InvalidArgument", /"3"/, "get_object"],
  ["HEAD", "/b/k?tagging", {}, "MethodNotAllowed", /"HEAD"/, "head_object"],
  ["POST", "/b/k?tagging", {}, "MethodNotAllowed", /"POST"/, "post_object"],
  ["POST", "/b/k", {}, "MethodNotAllowed", /"POST"/, "post_object"],
  ["POST", "/b", {}, "MethodNotAllowed", /"POST"/, "post_bucket"],
  ["PUT", "/", {}, "MethodNotAllowed", /"PUT"/, undefined],
  ["PATCH", "/b/k", {}, "MethodNotAllowed", /"PATCH"/, undefined],
];

for (const [method, path, headers, code, message, label] of REFUSALS) {
  Deno.test(`route table: ${method} ${path} is refused with ${code}`, () => {
    const resolved = resolve(method, path, headers);
    assert.equal(resolved.kind, "refused");
    if (resolved.kind !== "refused") return;
    assert.ok(resolved.error instanceof SvcError);
    assert.equal(resolved.error.code, code);
    assert.match(resolved.error.message, message);
    assert.equal(resolved.label, label);
  });
}
