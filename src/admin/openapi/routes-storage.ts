/** Rows of the storage routes: backends, buckets, and the browse panel's object helpers. */
import { namedBackendSchema } from "../../config/mod.ts";
import {
  browseBucketBody,
  completeMultipartBody,
  createBucketBody,
  deleteObjectsBody,
  storageKindsBody,
  testS3Body,
  transferBody,
} from "../storage/storage-bodies.ts";
import { bucketMigrateBody } from "./described-bodies.ts";
import { ref } from "./components.ts";
import { area, type RouteSpec } from "./route-spec.ts";

const storage = area("Storage");
const objects = area("Objects");
const browse = { access: "browse" as const };
const target = { bucket: "The bucket.", key: "The key." };
const upload = { ...target, upload_id: "The multipart upload's id." };
const required = ["bucket", "key"];

export const STORAGE_ROUTES: RouteSpec[] = [
  storage.get("/backends", "List backends and whether each answers", {
    returns: "`{backends, default_backend, named}` (secrets redacted).",
  }),
  storage.post("/backends", "Add a named backend (probed first when S3)", {
    body: namedBackendSchema,
    status: 201,
    returns: "`{backend}` and the apply outcome.",
  }),
  storage.delete("/backends/:name", "Remove a backend that holds no bucket", {
    params: { name: "The backend's name." },
    returns: "`{deleted}` and the apply outcome.",
  }),
  storage.post("/test-s3", "Probe an S3 endpoint with a key pair", {
    body: testS3Body,
    returns: "`{ok: true, buckets}`.",
  }),
  storage.get("/buckets", "List buckets with their backend and alias", {
    returns: "`{buckets, default_backend}`.",
  }),
  storage.post("/buckets", "Create a bucket on a backend", {
    body: createBucketBody,
    status: 201,
    returns: "`{bucket, backend, alias, routed}` and the apply outcome when a route was saved.",
  }),
  storage.post("/buckets/:bucket/migrate", "Start a job moving a bucket to another backend", {
    params: { bucket: "The bucket." },
    body: bucketMigrateBody,
    status: 202,
    returns: "The job started.",
  }),
  objects.get("/objects/list", "List buckets, or one page of a bucket's keys", {
    ...browse,
    query: {
      bucket: "The bucket (absent: list the buckets).",
      prefix: "Only keys under it.",
      delimiter: "Group keys into common prefixes.",
      continuation_token: "Where the previous page ended.",
      max_keys: "Page size.",
    },
  }),
  objects.post("/objects/copy", "Copy objects (as the session's user)", {
    ...browse,
    body: transferBody,
    response: ref("BatchAnswer"),
  }),
  objects.post("/objects/move", "Move objects: copy, then delete each copied source", {
    ...browse,
    body: transferBody,
    response: ref("BatchAnswer"),
  }),
  objects.post("/objects/delete", "Delete objects", {
    ...browse,
    body: deleteObjectsBody,
    response: ref("BatchAnswer"),
  }),
  objects.get("/objects/zip", "Download objects as a ZIP", {
    ...browse,
    query: { bucket: "The bucket.", key: "A key (repeatable).", prefix: "Or every key under it." },
    requiredQuery: ["bucket"],
    produces: "application/zip",
  }),
  objects.get("/objects/head", "An object's size, type, storage kind and metadata", {
    ...browse,
    query: target,
    requiredQuery: required,
  }),
  objects.post("/objects/storage-kinds", "The storage kind of each key", {
    ...browse,
    body: storageKindsBody,
    returns: "`{bucket, kinds: {key: kind | null}}`.",
  }),
  objects.get("/objects/download", "Download an object (as an attachment)", {
    ...browse,
    query: target,
    requiredQuery: required,
    produces: "application/octet-stream",
  }),
  objects.put("/objects/upload", "Upload an object (one PutObject)", {
    ...browse,
    query: target,
    requiredQuery: required,
    bodyType: "application/octet-stream",
    returns: "`{ok, etag}`.",
    description: "Needs a Content-Length header; the body streams through.",
  }),
  objects.post("/objects/multipart/create", "Start a multipart upload", {
    ...browse,
    query: { ...target, content_type: "The object's content type." },
    requiredQuery: required,
    returns: "`{upload_id}`.",
  }),
  objects.put("/objects/multipart/part", "Upload one part", {
    ...browse,
    query: { ...upload, part_number: "1 to 10000." },
    requiredQuery: [...required, "upload_id", "part_number"],
    bodyType: "application/octet-stream",
    returns: "`{etag}`.",
  }),
  objects.post("/objects/multipart/complete", "Complete a multipart upload", {
    ...browse,
    query: upload,
    requiredQuery: [...required, "upload_id"],
    body: completeMultipartBody,
    returns: "`{ok, etag}`.",
  }),
  objects.post("/objects/multipart/abort", "Abort a multipart upload", {
    ...browse,
    query: upload,
    requiredQuery: [...required, "upload_id"],
    response: ref("Ok"),
  }),
  objects.post("/objects/buckets", "Create a bucket as the session's user", {
    ...browse,
    body: browseBucketBody,
    status: 201,
    returns: "`{ok, bucket}`.",
  }),
  objects.delete("/objects/buckets/:bucket", "Delete an empty bucket as the session's user", {
    ...browse,
    params: { bucket: "The bucket." },
    returns: "`{ok, bucket}`.",
  }),
];
