/**
 * The request bodies of the storage routes (backends, buckets, the browse panel's object
 * helpers), as valibot schemas: the routes check bodies with them (valid-body.ts) and the OpenAPI
 * document shows them (src/admin/openapi/). A backend's body is the config's own
 * `namedBackendSchema`, so the API and the config file accept the same backend.
 */
import * as v from "valibot";
import { bucketNameProblem } from "../../lib/mod.ts";
import { flag, integer, listOf, nonEmptyText, text } from "../body-fields.ts";

/** Batches of the browse helpers hold at most this many items. */
export const MAX_ITEMS = 1000;
/** `POST /objects/storage-kinds` looks up at most this many keys. */
export const MAX_KINDS = 100;
/** S3's largest part number. */
export const MAX_PARTS = 10_000;

/** `POST /test-s3`: an S3 connection to probe (a backend's fields; name and type ignored). */
export const testS3Body = v.strictObject({
  name: v.optional(text("Ignored (a backend form may send it).")),
  type: v.optional(v.pipe(v.literal("s3", 'must be "s3"'), v.description("Always s3."))),
  endpoint: nonEmptyText("The S3 endpoint URL."),
  region: v.optional(text("The signing region.")),
  force_path_style: v.optional(flag("Address buckets in the path, not the host name.")),
  access_key_id: v.optional(text("The access key to probe with.")),
  secret_access_key: v.optional(text("Its secret (used for the probe, never stored).")),
});

const bucketName = v.pipe(
  v.string("must be a string naming the bucket"),
  v.check(
    (name) => bucketNameProblem(name) === null,
    (issue) =>
      `must be a valid bucket name (${bucketNameProblem(String(issue.input))}), got ${
        JSON.stringify(issue.input)
      }`,
  ),
  v.description("The bucket's name, by S3's rules (3-63 lowercase letters, digits, . and -)."),
);

/** `POST /buckets`. */
export const createBucketBody = v.strictObject({
  name: bucketName,
  backend: v.optional(
    nonEmptyText(
      "The backend to create it on (default: its storage.buckets route, else the " +
        "default backend).",
    ),
  ),
});

/** One copy or move of the browse panel. */
const transferItem = v.strictObject({
  source_bucket: nonEmptyText("The bucket of the object."),
  source_key: nonEmptyText("Its key."),
  destination_bucket: nonEmptyText("Where it goes."),
  destination_key: nonEmptyText("Under which key."),
});

/** `POST /objects/copy` and `POST /objects/move`. */
export const transferBody = v.strictObject({
  items: listOf(transferItem, 1, MAX_ITEMS, "objects", "The objects, done in order."),
});

/** `POST /objects/delete`. */
export const deleteObjectsBody = v.strictObject({
  bucket: nonEmptyText("The bucket."),
  keys: listOf(nonEmptyText("A key."), 1, MAX_ITEMS, "keys", "The keys to delete."),
});

/** `POST /objects/storage-kinds`. */
export const storageKindsBody = v.strictObject({
  bucket: nonEmptyText("The bucket."),
  keys: listOf(text("A key."), 0, MAX_KINDS, "keys", "The keys to look up (one HEAD each)."),
});

/** `POST /objects/multipart/complete`. */
export const completeMultipartBody = v.strictObject({
  parts: listOf(
    v.strictObject({
      part_number: integer(1, MAX_PARTS, "The part's number."),
      etag: text("The ETag its upload answered."),
    }),
    1,
    MAX_PARTS,
    "parts",
    "Every part of the upload, in order.",
  ),
});

/** `POST /objects/buckets` (a bucket created as the session's user). */
export const browseBucketBody = v.strictObject({
  bucket: nonEmptyText("The new bucket's name."),
});
