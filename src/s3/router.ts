/**
 * S3 operation dispatch: method + bucket/key + subresource query → one handler. Families svc
 * does not implement answer NotImplemented; ACL puts and bucket tagging answer 501 with a message.
 */
import type { AdmissionChain } from "../admission/build.ts";
import type { CredentialStore } from "../auth/credentials.ts";
import { SvcError } from "../errors.ts";
import type { MultipartService } from "../objects/multipart-service.ts";
import type { ObjectService } from "../objects/object-service.ts";
import type { UsageCounter } from "../objects/usage.ts";
import type { EffectiveBucketPolicy } from "./bucket-policy.ts";
import * as buckets from "./bucket-ops.ts";
import { deleteObjects } from "./delete-objects.ts";
import { listObjectsV1, listObjectsV2 } from "./list-ops.ts";
import * as multipart from "./multipart-ops.ts";
import * as objectOps from "./object-ops.ts";
import { postObject } from "./post-object.ts";
import * as tagging from "./tagging-ops.ts";
import type { S3Request } from "./request.ts";
import { notImplemented } from "./response.ts";
import { declaredLength, gateWrite, type WriteIntent } from "./write-gate.ts";

export interface S3Services {
  objects: ObjectService;
  multipart: MultipartService;
  /** The current credential store (POST policy uploads verify against it). */
  credentials: () => CredentialStore;
  /** The admission chain of the current config snapshot (evaluated before authentication). */
  admission: () => AdmissionChain;
  /** A bucket's policy in the current config snapshot (public prefixes, quota, target-only). */
  bucketPolicy: (bucket: string) => EffectiveBucketPolicy;
  /** Per-bucket usage, for quotas. */
  usage: UsageCounter;
}

/** The bounded `operation` label of a request (metrics), decided by method and path shape. */
export type OperationLabel =
  | "list_buckets"
  | "head_root"
  | "list_objects"
  | "create_bucket"
  | "delete_bucket"
  | "head_bucket"
  | "post_bucket"
  | "get_object"
  | "put_object"
  | "delete_object"
  | "head_object"
  | "post_object";

export function operationLabel(request: S3Request): OperationLabel | undefined {
  const m = request.method;
  if (request.bucket === null) {
    return m === "GET" ? "list_buckets" : m === "HEAD" ? "head_root" : undefined;
  }
  if (request.key === null) {
    const labels: Record<string, OperationLabel> = {
      GET: "list_objects",
      PUT: "create_bucket",
      DELETE: "delete_bucket",
      HEAD: "head_bucket",
      POST: "post_bucket",
    };
    return labels[m];
  }
  const labels: Record<string, OperationLabel> = {
    GET: "get_object",
    PUT: "put_object",
    DELETE: "delete_object",
    HEAD: "head_object",
    POST: "post_object",
  };
  return labels[m];
}

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

function unsupportedSubresource(query: URLSearchParams, names: string[]): string | undefined {
  return names.find((name) => query.has(name));
}

function isFormData(request: S3Request): boolean {
  return (request.headers.get("content-type") ?? "").toLowerCase().startsWith(
    "multipart/form-data",
  );
}

function methodNotAllowed(request: S3Request): SvcError {
  return new SvcError(
    "MethodNotAllowed",
    `The specified method "${request.method}" is not allowed against this resource`,
    { Method: request.method, ResourceType: request.key === null ? "BUCKET" : "OBJECT" },
  );
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
async function uploadedBytes(services: S3Services, request: S3Request) {
  try {
    const uploadId = request.query.get("uploadId") ?? "";
    const { parts } = await services.multipart.listParts(request.bucket!, request.key!, uploadId);
    return parts.reduce((sum, part) => sum + part.size, 0);
  } catch {
    return undefined; // the completion itself reports a missing upload
  }
}

export async function dispatchS3(services: S3Services, request: S3Request): Promise<Response> {
  const { objects } = services;
  const q = request.query;
  const m = request.method;
  /** Runs the write gate for this request's bucket (and key, for object writes). */
  const gate = (kind: WriteIntent["kind"], declaredBytes?: WriteIntent["declaredBytes"]) =>
    gateWrite(services, {
      kind,
      bucket: request.bucket!,
      ...(request.key !== null ? { key: request.key } : {}),
      ...(declaredBytes ? { declaredBytes } : {}),
    });
  const declared = () => Promise.resolve(declaredLength(request.headers));

  if (request.bucket === null) {
    if (m === "GET") return await buckets.listBuckets(objects, request);
    if (m === "HEAD") return new Response(null, { status: 200 });
    throw methodNotAllowed(request);
  }

  if (request.key === null) {
    const family = unsupportedSubresource(q, UNSUPPORTED_BUCKET_SUBRESOURCES);
    if (family) throw notImplemented(`The bucket "${family}" API`);
    if (q.has("tagging")) throw notImplemented("Bucket tagging");
    switch (m) {
      case "GET":
        if (q.has("location")) return await buckets.getBucketLocation(objects, request);
        if (q.has("versioning")) return await buckets.getBucketVersioning(objects, request);
        if (q.has("acl")) return await buckets.getAcl(objects, request);
        if (q.has("uploads")) return await multipart.listMultipartUploads(services, request);
        if (q.get("list-type") === "2") return await listObjectsV2(objects, request);
        return await listObjectsV1(objects, request);
      case "HEAD":
        return await buckets.headBucket(objects, request);
      case "PUT":
        if (q.has("acl")) throw notImplemented("Setting bucket ACLs");
        if (q.has("versioning")) throw notImplemented("Object versioning");
        await gate("create-bucket");
        return await buckets.createBucket(objects, request);
      case "DELETE":
        await gate("delete-bucket");
        try {
          return await buckets.deleteBucket(objects, services.multipart, request);
        } finally {
          // Gone or not, the next usage question rescans (a recreated bucket starts at zero).
          services.usage.forget(request.bucket);
        }
      case "POST":
        if (q.has("delete")) {
          await gate("delete-objects");
          return await deleteObjects(objects, request);
        }
        if (request.auth?.formPost || isFormData(request)) {
          // Gated once the form's policy is verified and its key known: strangers learn nothing.
          return await postObject(
            objects,
            services.credentials(),
            request,
            (key) => gateWrite(services, { kind: "post", bucket: request.bucket!, key }),
          );
        }
        throw methodNotAllowed(request);
    }
    throw methodNotAllowed(request);
  }

  // Object versioning is not implemented: only the "null" version (the current object) exists.
  const versionId = q.get("versionId");
  if (versionId !== null && versionId !== "null") {
    throw new SvcError("InvalidArgument", `Invalid version id specified: "${versionId}"`, {
      ArgumentName: "versionId",
      ArgumentValue: versionId,
    });
  }
  const family = unsupportedSubresource(q, UNSUPPORTED_OBJECT_SUBRESOURCES);
  if (family) throw notImplemented(`The object "${family}" API`);
  if (q.has("tagging")) {
    switch (m) {
      case "GET":
        return await tagging.getObjectTagging(objects, request);
      case "PUT":
        await gate("tagging");
        return await tagging.putObjectTagging(objects, request);
      case "DELETE":
        await gate("tagging");
        return await tagging.deleteObjectTagging(objects, request);
    }
    throw methodNotAllowed(request);
  }
  switch (m) {
    case "GET":
      if (q.has("acl")) return await buckets.getAcl(objects, request);
      if (q.has("uploadId")) return await multipart.listParts(services, request);
      return await objectOps.getObject(objects, request, false);
    case "HEAD":
      return await objectOps.getObject(objects, request, true);
    case "PUT":
      if (q.has("acl")) throw notImplemented("Setting object ACLs");
      if (q.has("uploadId") || q.has("partNumber")) {
        if (request.headers.has("x-amz-copy-source")) {
          await gate("upload-part-copy");
          return await multipart.uploadPartCopy(services, request);
        }
        await gate("upload-part", declared);
        return await multipart.uploadPart(services, request);
      }
      if (request.headers.has("x-amz-copy-source")) {
        await gate("copy", () => copySourceSize(objects, request));
        return await objectOps.copyObject(objects, request);
      }
      await gate("put", declared);
      return await objectOps.putObject(objects, request);
    case "DELETE":
      // Aborting discards staged parts only: no gate, even on a frozen or target-only bucket.
      if (q.has("uploadId")) return await multipart.abortMultipartUpload(services, request);
      await gate("delete");
      return await objectOps.deleteObject(objects, request);
    case "POST":
      if (q.has("uploads")) {
        await gate("create-multipart");
        return await multipart.createMultipartUpload(services, request);
      }
      if (q.has("uploadId")) {
        await gate("complete-multipart", () => uploadedBytes(services, request));
        return await multipart.completeMultipartUpload(services, request);
      }
      throw methodNotAllowed(request);
  }
  throw methodNotAllowed(request);
}
