/** The route rows of the service (`/`) and of buckets (`/bucket`); see route-table.ts. */
import { SvcError } from "../../lib/mod.ts";
import * as buckets from "../ops/bucket-ops.ts";
import { deleteObjects } from "../ops/delete-objects.ts";
import { listObjectsV1, listObjectsV2 } from "../ops/list-ops.ts";
import * as multipart from "../ops/multipart-ops.ts";
import { postObject } from "../ops/post-object.ts";
import type { Route } from "./route-types.ts";
import { authorizeAlso, gate, isFormData, visibleKeysOf } from "./route-steps.ts";
import { gateWrite } from "../write-gate.ts";

export const SERVICE_AND_BUCKET_ROUTES: Route[] = [
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
    handle: (s, r) => multipart.listMultipartUploads(s, r, visibleKeysOf(s, r)),
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
      const created = await buckets.createBucket(s.objects, r);
      s.usage.created(r.bucket); // new and empty: its usage counter is exact without a scan
      return created;
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
        const deleted = await buckets.deleteBucket(s.objects, s.multipart, r);
        s.usage.forget(r.bucket); // a bucket recreated later starts at zero
        return deleted;
      } catch (err) {
        // A bucket that is not empty keeps its counter (a persisted one: dropping it would cost
        // a rescan of the whole bucket); one that does not exist has nothing to count.
        if (err instanceof SvcError && err.code === "NoSuchBucket") s.usage.forget(r.bucket);
        throw err;
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
];
