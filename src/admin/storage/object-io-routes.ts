/**
 * The browse panel's object I/O, under `/_/api/admin` (open to browse-only sessions too): what the
 * UI needs beyond listing and bulk actions (object-routes.ts). Each call is one in-process S3
 * request acting as the session's user (s3-internal.ts), so IAM, quotas and the write gate decide
 * as they would for that user's SDK; the browser never holds an S3 secret.
 *   GET  /objects/head?bucket=&key=                  size, type, storage kind, user metadata
 *   POST /objects/storage-kinds {bucket, keys}       storage kind per key (≤ 100, for a listing)
 *   GET  /objects/download?bucket=&key=              the bytes, streamed, as an attachment
 *   PUT  /objects/upload?bucket=&key=                body streamed into one PutObject
 *   POST /objects/multipart/create?bucket=&key=      {upload_id}
 *   PUT  /objects/multipart/part?bucket=&key=&upload_id=&part_number=   body → {etag}
 *   POST /objects/multipart/complete?bucket=&key=&upload_id=  {parts: [{part_number, etag}]}
 *   POST /objects/multipart/abort?bucket=&key=&upload_id=
 *   POST /objects/buckets {bucket}  ·  DELETE /objects/buckets/:bucket   (as the session's user)
 * Bodies stream through unread (memory does not grow with object size). Downloads are served as
 * attachments under a sandboxing CSP with nosniff, so stored HTML never runs at the console's
 * origin. Uploads, bucket creation and deletion are audited.
 */
import { Hono } from "hono";
import type { Context } from "hono";
import type { IamIndex } from "../../iam/mod.ts";
import { childText, parseXml } from "../../s3/mod.ts";
import type { ConfigPort } from "../../config/mod.ts";
import type { AuditFn } from "../../observability/mod.ts";
import { actorFields, type AdminEnv } from "../admin-env.ts";
import { AdminError } from "../admin-error.ts";
import { validBody } from "../valid-body.ts";
import { principalOf } from "./object-routes.ts";
import { ActingClient, checkTarget, type InternalS3, s3Failure, s3Path } from "./s3-internal.ts";
import {
  browseBucketBody,
  completeMultipartBody,
  MAX_PARTS,
  storageKindsBody,
} from "./storage-bodies.ts";

export interface ObjectIoDeps {
  s3: InternalS3;
  index: () => IamIndex;
  config: Pick<ConfigPort, "current">;
  audit: AuditFn;
}

function required(c: Context<AdminEnv>, name: string): string {
  const value = c.req.query(name);
  if (value === undefined || value === "") {
    throw new AdminError("bad_request", `Query parameter "${name}" is required`);
  }
  return value;
}

/** `filename*` (RFC 6266) plus an ASCII fallback, from the key's last segment. */
function attachment(key: string): string {
  const name = key.split("/").pop() || "download";
  const ascii = name.replace(/[^\x20-\x7e]|["\\]/g, "_");
  return `attachment; filename="${ascii}"; filename*=UTF-8''${encodeURIComponent(name)}`;
}

export function objectIoRoutes(deps: ObjectIoDeps): Hono<AdminEnv> {
  const app = new Hono<AdminEnv>();
  const client = (c: Context<AdminEnv>) =>
    new ActingClient(deps.s3, principalOf(deps, c.var.principal), c.var.clientIp);
  // Checked here as well as in s3Path: a refused key answers 400 before any body is read.
  const target = (c: Context<AdminEnv>) => {
    const found = { bucket: required(c, "bucket"), key: required(c, "key") };
    checkTarget(found.bucket, found.key);
    return found;
  };

  app.get("/objects/head", async (c) => {
    const { bucket, key } = target(c);
    const response = await client(c).send("HEAD", s3Path(bucket, key));
    if (!response.ok) throw await s3Failure(response);
    const metadata: Record<string, string> = {};
    for (const [name, value] of response.headers) {
      if (name.startsWith("x-amz-meta-")) metadata[name.slice("x-amz-meta-".length)] = value;
    }
    return c.json({
      bucket,
      key,
      size: Number(response.headers.get("content-length") ?? 0),
      content_type: response.headers.get("content-type"),
      etag: response.headers.get("etag")?.replaceAll('"', "") ?? null,
      last_modified: response.headers.get("last-modified"),
      storage_kind: response.headers.get("x-amz-storage-type"),
      version_id: response.headers.get("x-amz-version-id"),
      metadata,
    });
  });

  // The listing's storage column: HEADs (eight at a time) for one screenful of keys.
  app.post("/objects/storage-kinds", async (c) => {
    const { bucket, keys } = await validBody(c, storageKindsBody);
    for (const key of keys) checkTarget(bucket, key);
    const s3 = client(c);
    const kinds: Record<string, string | null> = {};
    let next = 0;
    const worker = async () => {
      while (next < keys.length) {
        const key = keys[next++];
        const response = await s3.send("HEAD", s3Path(bucket, key));
        kinds[key] = response.ok ? response.headers.get("x-amz-storage-type") : null;
      }
    };
    await Promise.all(Array.from({ length: 8 }, worker));
    return c.json({ bucket, kinds });
  });

  app.get("/objects/download", async (c) => {
    const { bucket, key } = target(c);
    const response = await client(c).send("GET", s3Path(bucket, key));
    if (!response.ok) throw await s3Failure(response);
    const headers = new Headers({
      "content-type": response.headers.get("content-type") ?? "application/octet-stream",
      "content-disposition": attachment(key),
      "content-security-policy": "sandbox; default-src 'none'",
      "x-content-type-options": "nosniff",
      "cache-control": "no-store",
    });
    for (const name of ["content-length", "etag", "last-modified"]) {
      const value = response.headers.get(name);
      if (value !== null) headers.set(name, value);
    }
    return new Response(response.body, { status: 200, headers });
  });

  /** The request body as a stream for S3, with its declared length (S3 needs one). */
  const body = (c: Context<AdminEnv>) => {
    const length = c.req.header("content-length");
    if (length === undefined || !/^\d+$/.test(length)) {
      throw new AdminError("bad_request", "An upload needs a Content-Length header");
    }
    const headers: Record<string, string> = { "content-length": length };
    const type = c.req.header("content-type");
    if (type) headers["content-type"] = type;
    return { headers, body: c.req.raw.body ?? "" };
  };

  app.put("/objects/upload", async (c) => {
    const { bucket, key } = target(c);
    const { headers, body: stream } = body(c);
    const response = await client(c).send("PUT", s3Path(bucket, key), { headers, body: stream });
    if (!response.ok) throw await s3Failure(response);
    await response.body?.cancel();
    deps.audit("object_uploaded", {
      ...actorFields(c.var),
      bucket,
      key,
      bytes: Number(headers["content-length"]),
    });
    return c.json({ ok: true, etag: response.headers.get("etag")?.replaceAll('"', "") ?? null });
  });

  app.post("/objects/multipart/create", async (c) => {
    const { bucket, key } = target(c);
    const type = c.req.query("content_type");
    const response = await client(c).send("POST", s3Path(bucket, key), {
      query: "uploads",
      headers: type ? { "content-type": type } : {},
    });
    if (!response.ok) throw await s3Failure(response);
    const uploadId = childText(parseXml(await response.text()), "UploadId");
    if (!uploadId) throw new AdminError("internal", "CreateMultipartUpload gave no UploadId");
    return c.json({ upload_id: uploadId });
  });

  app.put("/objects/multipart/part", async (c) => {
    const { bucket, key } = target(c);
    const uploadId = required(c, "upload_id");
    const part = required(c, "part_number");
    if (!/^\d+$/.test(part) || Number(part) < 1 || Number(part) > MAX_PARTS) {
      throw new AdminError("bad_request", `part_number must be 1 to ${MAX_PARTS}, got "${part}"`);
    }
    const { headers, body: stream } = body(c);
    const query = new URLSearchParams({ partNumber: part, uploadId }).toString();
    const response = await client(c).send("PUT", s3Path(bucket, key), {
      query,
      headers,
      body: stream,
    });
    if (!response.ok) throw await s3Failure(response);
    await response.body?.cancel();
    return c.json({ etag: response.headers.get("etag") ?? "" });
  });

  app.post("/objects/multipart/complete", async (c) => {
    const { bucket, key } = target(c);
    const uploadId = required(c, "upload_id");
    const { parts } = await validBody(c, completeMultipartBody);
    const escape = (text: string) =>
      text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
    const xml = parts.map(({ part_number: number, etag }) =>
      `<Part><PartNumber>${number}</PartNumber><ETag>${escape(etag)}</ETag></Part>`
    ).join("");
    const document = `<CompleteMultipartUpload>${xml}</CompleteMultipartUpload>`;
    const response = await client(c).send("POST", s3Path(bucket, key), {
      query: new URLSearchParams({ uploadId }).toString(),
      headers: { "content-type": "application/xml" },
      body: document,
    });
    // CompleteMultipartUpload can fail with 200 and an error document.
    const text = await response.text();
    const doc = (() => {
      try {
        return parseXml(text);
      } catch {
        return null;
      }
    })();
    const code = doc ? childText(doc, "Code") : undefined;
    if (!response.ok || code) {
      throw await s3Failure(new Response(text, { status: response.ok ? 500 : response.status }));
    }
    deps.audit("object_uploaded", { ...actorFields(c.var), bucket, key, parts: parts.length });
    return c.json({ ok: true, etag: doc ? childText(doc, "ETag")?.replaceAll('"', "") : null });
  });

  app.post("/objects/multipart/abort", async (c) => {
    const { bucket, key } = target(c);
    const uploadId = required(c, "upload_id");
    const response = await client(c).send("DELETE", s3Path(bucket, key), {
      query: new URLSearchParams({ uploadId }).toString(),
    });
    if (!response.ok) throw await s3Failure(response);
    await response.body?.cancel();
    return c.json({ ok: true });
  });

  app.post("/objects/buckets", async (c) => {
    const { bucket } = await validBody(c, browseBucketBody);
    const response = await client(c).send("PUT", s3Path(bucket));
    if (!response.ok) throw await s3Failure(response);
    await response.body?.cancel();
    deps.audit("bucket_created", { ...actorFields(c.var), bucket, via: "browse" });
    return c.json({ ok: true, bucket }, 201);
  });

  app.delete("/objects/buckets/:bucket", async (c) => {
    const bucket = c.req.param("bucket");
    const response = await client(c).send("DELETE", s3Path(bucket));
    if (!response.ok) throw await s3Failure(response);
    await response.body?.cancel();
    deps.audit("bucket_deleted", { ...actorFields(c.var), bucket, via: "browse" });
    return c.json({ ok: true, bucket });
  });

  return app;
}
