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
import { SERVICE_AND_BUCKET_ROUTES } from "./route-rows-bucket.ts";
import { OBJECT_ROUTES } from "./route-rows-object.ts";
import type { RouteTable } from "./route-types.ts";

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

export const S3_ROUTES: RouteTable = {
  routes: [...SERVICE_AND_BUCKET_ROUTES, ...OBJECT_ROUTES],
  unsupported: { bucket: UNSUPPORTED_BUCKET_SUBRESOURCES, object: UNSUPPORTED_OBJECT_SUBRESOURCES },
};
