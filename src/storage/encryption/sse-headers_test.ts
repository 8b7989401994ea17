/**
 * sse-s3 / sse-kms: which headers each mode sends, and that the S3 backend sends them on every
 * request that creates an object (PUT, CreateMultipartUpload, the metadata-rewriting copy) and on
 * no other, against a scripted S3 server that records every request's headers.
 */
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { metaFor, streamOf } from "../../testing/backend-conformance-helpers.ts";
import { S3Backend } from "../s3/s3-backend.ts";
import { scriptedServer, testOptions } from "../../testing/s3-test-server.ts";
import { sseWriteHeaders } from "./sse-headers.ts";

const opts = { sanitizeOps: false, sanitizeResources: false };
const SSE = "x-amz-server-side-encryption";

Deno.test("sse headers: each mode's headers", () => {
  assert.deepEqual(sseWriteHeaders(undefined), {});
  assert.deepEqual(sseWriteHeaders({ mode: "none" }), {});
  assert.deepEqual(sseWriteHeaders({ mode: "aes256-gcm-proxy", key: "a".repeat(64) }), {});
  assert.deepEqual(sseWriteHeaders({ mode: "sse-s3" }), { [SSE]: "AES256" });
  assert.deepEqual(sseWriteHeaders({ mode: "sse-kms" }), { [SSE]: "aws:kms" });
  assert.deepEqual(
    sseWriteHeaders({ mode: "sse-kms", kms_key_id: "alias/svc", bucket_key_enabled: true }),
    {
      [SSE]: "aws:kms",
      [`${SSE}-aws-kms-key-id`]: "alias/svc",
      [`${SSE}-bucket-key-enabled`]: "true",
    },
  );
});

/** A minimal S3: every object is the 5-byte "hello"; answers what the writes below need. */
async function fakeS3(request: Request): Promise<Response> {
  const url = new URL(request.url);
  const body = new Uint8Array(await request.arrayBuffer());
  const md5 = createHash("md5").update(body).digest("hex");
  const hello = createHash("md5").update("hello").digest("hex");
  if (request.method === "HEAD" && url.pathname.split("/").length > 2) {
    return new Response(null, {
      headers: {
        "content-length": "5",
        etag: `"${hello}"`,
        "last-modified": new Date(0).toUTCString(),
        "x-amz-meta-svc-size": "5",
        "x-amz-meta-svc-etag": hello,
        "x-amz-meta-svc-md5": hello,
        "x-amz-meta-svc-storage": "passthrough",
      },
    });
  }
  if (request.method === "HEAD") return new Response(null);
  if (request.method === "POST" && url.searchParams.has("uploads")) {
    return new Response(
      "<InitiateMultipartUploadResult><UploadId>u1</UploadId></InitiateMultipartUploadResult>",
    );
  }
  if (request.method === "POST") {
    return new Response(
      '<CompleteMultipartUploadResult><ETag>"abc-1"</ETag></CompleteMultipartUploadResult>',
    );
  }
  if (request.headers.has("x-amz-copy-source")) {
    return new Response(`<CopyObjectResult><ETag>"${hello}"</ETag></CopyObjectResult>`);
  }
  return new Response(null, { headers: { etag: `"${md5}"` } });
}

Deno.test(
  "sse headers: sent on PUT, CreateMultipartUpload and copy, not on parts",
  opts,
  async () => {
    const server = scriptedServer(fakeS3);
    const spoolDir = await Deno.makeTempDir();
    try {
      const writeHeaders = sseWriteHeaders({
        mode: "sse-kms",
        kms_key_id: "arn:aws:kms:eu-west-1:1:key/k",
        bucket_key_enabled: false,
      });
      const backend = await S3Backend.open(
        testOptions(server.endpoint, { spoolDir, writeHeaders, streamCopyThreshold: 1024 }),
      );
      const small = new TextEncoder().encode("hello");
      await (await backend.stageObject("b", "small", streamOf(small))).commit(metaFor(small));
      const large = new Uint8Array(4096).fill(7); // over the threshold: a backend multipart upload
      await (await backend.stageObject("b", "large", streamOf(large))).commit(metaFor(large));
      await backend.updateObjectMeta("b", "small", (meta) => ({ ...meta, tags: { t: "1" } }));

      const writes = server.requests.filter((r) =>
        r.method === "PUT" || (r.method === "POST" && r.url.searchParams.has("uploads"))
      );
      const described = writes.map((r) => {
        const kind = r.url.searchParams.has("partNumber")
          ? "part"
          : r.headers.has("x-amz-copy-source")
          ? "copy"
          : r.method === "POST"
          ? "create-multipart"
          : "put";
        return `${kind} ${r.url.pathname} ${r.headers.get(SSE) ?? "-"} ` +
          `${r.headers.get(`${SSE}-aws-kms-key-id`) ?? "-"} ` +
          `${r.headers.get(`${SSE}-bucket-key-enabled`) ?? "-"}`;
      });
      assert.deepEqual(described, [
        "put /b/small aws:kms arn:aws:kms:eu-west-1:1:key/k false",
        "create-multipart /b/large aws:kms arn:aws:kms:eu-west-1:1:key/k false",
        "part /b/large - - -",
        "copy /b/small aws:kms arn:aws:kms:eu-west-1:1:key/k false",
      ]);
    } finally {
      await server.close();
      await Deno.remove(spoolDir, { recursive: true });
    }
  },
);
