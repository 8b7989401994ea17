/** The route rows of objects (`/bucket/key`); see route-table.ts. */
import * as buckets from "../ops/bucket-ops.ts";
import * as multipart from "../ops/multipart-ops.ts";
import * as objectOps from "../ops/object-ops.ts";
import type { Route } from "./route-types.ts";
import {
  authorizeAlso,
  copySourceCheck,
  copySourceSize,
  declared,
  gate,
  hasCopySource,
  isPart,
  uploadedBytes,
} from "./route-steps.ts";
import * as tagging from "../ops/tagging-ops.ts";

export const OBJECT_ROUTES: Route[] = [
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
    handle: (s, r) => {
      // The parts of an object the user may not read are not its to list (AccessDenied).
      authorizeAlso(s, r, {
        operation: "ListParts",
        action: "read",
        bucket: r.bucket,
        key: r.key,
        check: "listed-key",
      });
      return multipart.listParts(s, r);
    },
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
