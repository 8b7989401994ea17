/**
 * The S3 operations svc serves: one row each, matched in order (the first match wins, so a row
 * with a distinguishing subresource or header comes before the plain row of its method). Each
 * row names the AWS operation, the metrics label (unchanged from before the table), the IAM
 * action checked on the request's own resource, and the handler with its write-gate step.
 *
 * Action choices (docs/ARCHITECTURE.md "S3 operations" has the table): reads of an object or of
 * its tags/ACL are `read`; anything that enumerates or describes a bucket is `list`; anything
 * that stores bytes or metadata is `write`, including AbortMultipartUpload (it discards staged
 * parts only, and SDK upload managers abort on failure: a write-only uploader must be able to
 * clean up); removing stored objects is `delete`; creating and deleting buckets is `admin`.
 */
import type { ObjectService } from "../objects/object-service.ts";
import type { AccessTarget } from "./access.ts";
import * as buckets from "./bucket-ops.ts";
import { deleteObjects } from "./delete-objects.ts";
import { listObjectsV1, listObjectsV2 } from "./list-ops.ts";
import * as multipart from "./multipart-ops.ts";
import * as objectOps from "./object-ops.ts";
import { postObject } from "./post-object.ts";
import type { S3Request } from "./request.ts";
import type { BucketRequest, ObjectRequest, Route, RouteTable } from "./routes.ts";
import type { S3Services } from "./router.ts";
import * as tagging from "./tagging-ops.ts";
import { declaredLength, gateWrite, type WriteIntent } from "./write-gate.ts";

/** Subresources of families svc leaves to its own config/admin API (or does not offer). */
const UNSUPPORTED_BUCKET_SUBRESOURCES = [
  "policy",
  "policyStatus",
  "lifecycle",
  "replication",
  "notification",
  "object-lock",
  "cors",
  "website",
  "logging",
  "accelerate",
  "requestPayment",
  "inventory",
  "metrics",
  "analytics",
  "intelligent-tiering",
  "encryption",
  "ownershipControls",
  "publicAccessBlock",
  "versions",
  // Newer families: without these entries they would fall through to the plain bucket calls,
  // and `DELETE ?metadataTable` would delete the bucket itself.
  "metadataTable",
  "metadataConfiguration",
  "metadataAnnotationTable",
  "metadataInventoryTable",
  "metadataJournalTable",
  "abac",
  "session",
];
const UNSUPPORTED_OBJECT_SUBRESOURCES = [
  "retention",
  "legal-hold",
  "restore",
  "select",
  "torrent",
  "attributes",
  // Would otherwise be PutObject / DeleteObject on the key: overwrite or delete the object.
  "annotation",
  "renameObject",
  "encryption",
];

const hasCopySource = (request: S3Request) => request.headers.has("x-amz-copy-source");
const isPart = (request: S3Request) =>
  request.query.has("uploadId") || request.query.has("partNumber");
const isFormData = (request: S3Request) =>
  (request.headers.get("content-type") ?? "").toLowerCase().startsWith("multipart/form-data");

/** Runs the write gate for this request's bucket (and key, for object writes). */
function gate(
  services: S3Services,
  request: BucketRequest,
  kind: WriteIntent["kind"],
  declaredBytes?: WriteIntent["declaredBytes"],
): Promise<void> {
  return gateWrite(services, {
    kind,
    bucket: request.bucket,
    ...(request.key !== null ? { key: request.key } : {}),
    ...(declaredBytes ? { declaredBytes } : {}),
  });
}

const declared = (request: S3Request) => () => Promise.resolve(declaredLength(request.headers));

/** Asks the access hooks about one more resource of the request (see access.ts AccessCheck). */
function authorizeAlso(
  services: S3Services,
  request: S3Request,
  target: Omit<AccessTarget, "principal">,
  principal = request.auth?.principal ?? null,
): void {
  // An anonymous request was admitted by a public prefix (admission), not by IAM.
  if (request.anonymous) return;
  services.access?.authorize(request, { ...target, principal });
}

/** The size of the copy source, for the quota check of a copy; undefined when unknown. */
async function copySourceSize(objects: ObjectService, request: S3Request) {
  try {
    const source = objectOps.parseCopySource(request.headers.get("x-amz-copy-source")!);
    return (await objects.head(source.bucket, source.key)).meta.size;
  } catch {
    return undefined; // the copy itself reports a bad or missing source
  }
}

/** The total of an upload's stored parts, for the quota check of its completion. */
async function uploadedBytes(services: S3Services, request: ObjectRequest) {
  try {
    const uploadId = request.query.get("uploadId") ?? "";
    const { parts } = await services.multipart.listParts(request.bucket, request.key, uploadId);
    return parts.reduce((sum, part) => sum + part.size, 0);
  } catch {
    return undefined; // the completion itself reports a missing upload
  }
}

const copySourceCheck =
  (services: S3Services, request: S3Request, operation: string) =>
  (source: { bucket: string; key: string }) =>
    authorizeAlso(services, request, {
      operation,
      action: "read",
      bucket: source.bucket,
      key: source.key,
      check: "copy-source",
    });

const ROUTES: Route[] = [
  // Service: GET / and HEAD /.
  {
    operation: "ListBuckets",
    shape: "service",
    method: "GET",
    label: "list_buckets",
    action: "list",
    handle: (s, r) => buckets.listBuckets(s.objects, r, s.access?.visibleBuckets(r)),
  },
  {
    operation: "HeadService",
    shape: "service",
    method: "HEAD",
    label: "head_root",
    action: "list",
    handle: () => Promise.resolve(new Response(null, { status: 200 })),
  },

  // Bucket.
  {
    operation: "GetBucketLocation",
    shape: "bucket",
    method: "GET",
    query: ["location"],
    label: "list_objects",
    action: "list",
    handle: (s, r) => buckets.getBucketLocation(s.objects, r),
  },
  {
    operation: "GetBucketVersioning",
    shape: "bucket",
    method: "GET",
    query: ["versioning"],
    label: "list_objects",
    action: "list",
    handle: (s, r) => buckets.getBucketVersioning(s.objects, r),
  },
  {
    operation: "GetBucketAcl",
    shape: "bucket",
    method: "GET",
    query: ["acl"],
    label: "list_objects",
    action: "list",
    handle: (s, r) => buckets.getAcl(s.objects, r),
  },
  {
    operation: "ListMultipartUploads",
    shape: "bucket",
    method: "GET",
    query: ["uploads"],
    label: "list_objects",
    action: "list",
    handle: (s, r) => multipart.listMultipartUploads(s, r),
  },
  {
    operation: "ListObjectsV2",
    shape: "bucket",
    method: "GET",
    when: (r) => r.query.get("list-type") === "2",
    label: "list_objects",
    action: "list",
    handle: (s, r) => listObjectsV2(s.objects, r, visibleKeysOf(s, r)),
  },
  {
    operation: "ListObjects",
    shape: "bucket",
    method: "GET",
    label: "list_objects",
    action: "list",
    handle: (s, r) => listObjectsV1(s.objects, r, visibleKeysOf(s, r)),
  },
  {
    operation: "HeadBucket",
    shape: "bucket",
    method: "HEAD",
    label: "head_bucket",
    action: "list",
    handle: (s, r) => buckets.headBucket(s.objects, r),
  },
  {
    operation: "PutBucketAcl",
    shape: "bucket",
    method: "PUT",
    query: ["acl"],
    refuse: { notImplemented: "Setting bucket ACLs" },
  },
  {
    operation: "PutBucketVersioning",
    shape: "bucket",
    method: "PUT",
    query: ["versioning"],
    refuse: { notImplemented: "Object versioning" },
  },
  {
    operation: "CreateBucket",
    shape: "bucket",
    method: "PUT",
    label: "create_bucket",
    action: "admin",
    handle: async (s, r) => {
      await gate(s, r, "create-bucket");
      return await buckets.createBucket(s.objects, r);
    },
  },
  {
    operation: "DeleteBucket",
    shape: "bucket",
    method: "DELETE",
    label: "delete_bucket",
    action: "admin",
    handle: async (s, r) => {
      await gate(s, r, "delete-bucket");
      try {
        return await buckets.deleteBucket(s.objects, s.multipart, r);
      } finally {
        // Gone or not, the next usage question rescans (a recreated bucket starts at zero).
        s.usage.forget(r.bucket);
      }
    },
  },
  {
    operation: "DeleteObjects",
    shape: "bucket",
    method: "POST",
    query: ["delete"],
    label: "post_bucket",
    action: "delete",
    handle: async (s, r) => {
      await gate(s, r, "delete-objects");
      return await deleteObjects(s.objects, r, (key) =>
        authorizeAlso(s, r, {
          operation: "DeleteObjects",
          action: "delete",
          bucket: r.bucket,
          key,
          check: "batch-key",
        }));
    },
  },
  {
    // The form's signer is known once its policy is verified: authorized then, with its key.
    operation: "PostObject",
    shape: "bucket",
    method: "POST",
    when: isFormData,
    label: "post_bucket",
    action: "write",
    handle: (s, r) =>
      postObject(s.objects, s.credentials(), r, async (key, principal) => {
        authorizeAlso(s, r, {
          operation: "PostObject",
          action: "write",
          bucket: r.bucket,
          key,
          check: "form-key",
        }, principal);
        await gateWrite(s, { kind: "post", bucket: r.bucket, key });
      }),
  },

  // Object: tagging first (the subresource decides whatever else the request carries).
  {
    operation: "GetObjectTagging",
    shape: "object",
    method: "GET",
    query: ["tagging"],
    label: "get_object",
    action: "read",
    handle: (s, r) => tagging.getObjectTagging(s.objects, r),
  },
  {
    operation: "PutObjectTagging",
    shape: "object",
    method: "PUT",
    query: ["tagging"],
    label: "put_object",
    action: "write",
    handle: async (s, r) => {
      await gate(s, r, "tagging");
      return await tagging.putObjectTagging(s.objects, r);
    },
  },
  {
    operation: "DeleteObjectTagging",
    shape: "object",
    method: "DELETE",
    query: ["tagging"],
    label: "delete_object",
    action: "write",
    handle: async (s, r) => {
      await gate(s, r, "tagging");
      return await tagging.deleteObjectTagging(s.objects, r);
    },
  },
  {
    operation: "ObjectTagging",
    shape: "object",
    method: "*",
    query: ["tagging"],
    refuse: "MethodNotAllowed",
  },
  {
    operation: "GetObjectAcl",
    shape: "object",
    method: "GET",
    query: ["acl"],
    label: "get_object",
    action: "read",
    handle: (s, r) => buckets.getAcl(s.objects, r),
  },
  {
    operation: "ListParts",
    shape: "object",
    method: "GET",
    query: ["uploadId"],
    label: "get_object",
    action: "list",
    handle: (s, r) => multipart.listParts(s, r),
  },
  {
    operation: "GetObject",
    shape: "object",
    method: "GET",
    label: "get_object",
    action: "read",
    handle: (s, r) => objectOps.getObject(s.objects, r, false),
  },
  {
    operation: "HeadObject",
    shape: "object",
    method: "HEAD",
    label: "head_object",
    action: "read",
    handle: (s, r) => objectOps.getObject(s.objects, r, true),
  },
  {
    operation: "PutObjectAcl",
    shape: "object",
    method: "PUT",
    query: ["acl"],
    refuse: { notImplemented: "Setting object ACLs" },
  },
  {
    operation: "UploadPartCopy",
    shape: "object",
    method: "PUT",
    when: (r) => isPart(r) && hasCopySource(r),
    label: "put_object",
    action: "write",
    handle: async (s, r) => {
      await gate(s, r, "upload-part-copy");
      return await multipart.uploadPartCopy(s, r, copySourceCheck(s, r, "UploadPartCopy"));
    },
  },
  {
    operation: "UploadPart",
    shape: "object",
    method: "PUT",
    when: isPart,
    label: "put_object",
    action: "write",
    handle: async (s, r) => {
      await gate(s, r, "upload-part", declared(r));
      return await multipart.uploadPart(s, r);
    },
  },
  {
    operation: "CopyObject",
    shape: "object",
    method: "PUT",
    when: hasCopySource,
    label: "put_object",
    action: "write",
    handle: async (s, r) => {
      await gate(s, r, "copy", () => copySourceSize(s.objects, r));
      return await objectOps.copyObject(s.objects, r, copySourceCheck(s, r, "CopyObject"));
    },
  },
  {
    operation: "PutObject",
    shape: "object",
    method: "PUT",
    label: "put_object",
    action: "write",
    handle: async (s, r) => {
      await gate(s, r, "put", declared(r));
      return await objectOps.putObject(s.objects, r);
    },
  },
  {
    // Aborting discards staged parts only: no gate, even on a frozen or target-only bucket.
    operation: "AbortMultipartUpload",
    shape: "object",
    method: "DELETE",
    query: ["uploadId"],
    label: "delete_object",
    action: "write",
    handle: (s, r) => multipart.abortMultipartUpload(s, r),
  },
  {
    operation: "DeleteObject",
    shape: "object",
    method: "DELETE",
    label: "delete_object",
    action: "delete",
    handle: async (s, r) => {
      await gate(s, r, "delete");
      return await objectOps.deleteObject(s.objects, r);
    },
  },
  {
    operation: "CreateMultipartUpload",
    shape: "object",
    method: "POST",
    query: ["uploads"],
    label: "post_object",
    action: "write",
    handle: async (s, r) => {
      await gate(s, r, "create-multipart");
      return await multipart.createMultipartUpload(s, r);
    },
  },
  {
    operation: "CompleteMultipartUpload",
    shape: "object",
    method: "POST",
    query: ["uploadId"],
    label: "post_object",
    action: "write",
    handle: async (s, r) => {
      await gate(s, r, "complete-multipart", () => uploadedBytes(s, r));
      return await multipart.completeMultipartUpload(s, r);
    },
  },
];

/** A listing's filter: none for anonymous readers (their public prefixes narrow it instead). */
function visibleKeysOf(services: S3Services, request: BucketRequest) {
  if (request.anonymous) return undefined;
  return services.access?.visibleKeys(request, request.bucket);
}

export const S3_ROUTES: RouteTable = {
  routes: ROUTES,
  unsupported: { bucket: UNSUPPORTED_BUCKET_SUBRESOURCES, object: UNSUPPORTED_OBJECT_SUBRESOURCES },
};
