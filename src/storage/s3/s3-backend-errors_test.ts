/**
 * How the S3 backend reads backend failures, against a scripted server: what is absence, what
 * is NoSuchBucket, what is an error, and that a failed multipart upload is aborted.
 */
import assert from "node:assert/strict";
import { SvcError } from "../../lib/errors.ts";
import { metaFor } from "../../testing/backend-conformance.ts";
import { S3Backend } from "./s3-backend.ts";
import { errorResponse, scriptedServer, testOptions } from "../../testing/s3-test-server.ts";

const opts = { sanitizeOps: false, sanitizeResources: false };

async function withBackend(
  answer: Parameters<typeof scriptedServer>[0],
  fn: (backend: S3Backend, seen: () => string[]) => Promise<void>,
) {
  const server = scriptedServer(answer);
  const spoolDir = await Deno.makeTempDir();
  try {
    const backend = await S3Backend.open(testOptions(server.endpoint, { spoolDir }));
    await fn(
      backend,
      () => server.requests.map((r) => `${r.method} ${r.url.pathname}${r.url.search}`),
    );
  } finally {
    await server.close();
    await Deno.remove(spoolDir, { recursive: true });
  }
}

async function codeOf(promise: Promise<unknown>): Promise<string> {
  const err = await promise.then(() => null, (e) => e);
  assert.ok(err instanceof SvcError, `expected an SvcError, got ${err}`);
  return err.code;
}

Deno.test("a bare 403 on HEAD bucket is settled by a zero-key listing", opts, async () => {
  await withBackend(
    (req) =>
      req.method === "HEAD"
        ? new Response(null, { status: 403 })
        : new URL(req.url).pathname === "/gone"
        ? errorResponse(404, "NoSuchBucket")
        : errorResponse(403, "AccessDenied", "Access Denied"),
    async (backend, seen) => {
      assert.equal(await backend.headBucket("gone"), null);
      assert.deepEqual(seen(), ["HEAD /gone", "GET /gone?list-type=2&max-keys=0"]);
      assert.equal(await codeOf(backend.headBucket("forbidden")), "InternalError");
    },
  );
});

Deno.test("a 403 that says NoSuchBucket is NoSuchBucket", opts, async () => {
  await withBackend(() => errorResponse(403, "NoSuchBucket"), async (backend) => {
    assert.equal(await codeOf(backend.getObject("b", "k")), "NoSuchBucket");
    assert.equal(
      await codeOf(backend.listObjects("b", { prefix: "", maxKeys: 1 })),
      "NoSuchBucket",
    );
  });
});

Deno.test("a failed HEAD is never absence", opts, async () => {
  await withBackend(
    (req) =>
      new URL(req.url).pathname === "/b/denied"
        ? new Response(null, { status: 403 })
        : new Response(null, { status: 500 }),
    async (backend) => {
      assert.equal(await codeOf(backend.headObject("b", "denied")), "InternalError");
      assert.equal(await codeOf(backend.headObject("b", "broken")), "InternalError");
      assert.equal(await codeOf(backend.deleteObject("b", "broken")), "InternalError");
    },
  );
});

Deno.test("a bare 404 is absence once the bucket is known to exist", opts, async () => {
  await withBackend(
    (req) => {
      const path = new URL(req.url).pathname;
      if (path === "/b") return new Response(null, { status: 200 });
      return new Response(null, { status: 404 });
    },
    async (backend) => {
      assert.equal(await backend.headObject("b", "k"), null);
      assert.equal(await backend.deleteObject("b", "k"), false);
      assert.equal(await codeOf(backend.headObject("other", "k")), "NoSuchBucket");
    },
  );
});

Deno.test("a failed part aborts the multipart upload", opts, async () => {
  await withBackend(
    (req) => {
      const url = new URL(req.url);
      if (req.method === "HEAD") return new Response(null);
      if (url.searchParams.has("uploads")) {
        return new Response(
          "<InitiateMultipartUploadResult><UploadId>U1</UploadId></InitiateMultipartUploadResult>",
        );
      }
      if (url.searchParams.has("partNumber")) return errorResponse(400, "InvalidPart", "nope");
      return new Response(null, { status: 204 });
    },
    async (backend, seen) => {
      const body = new Blob(["delta bytes"]).stream();
      const staged = await backend.stageObject("b", "k", body);
      const meta = { ...metaFor(new Uint8Array(11)), size: 500, storage: "delta" as const };
      assert.equal(await codeOf(staged.commit(meta)), "InternalError");
      assert.ok(seen().includes("DELETE /b/k?uploadId=U1"), seen().join("\n"));
    },
  );
});

Deno.test(
  "a CompleteMultipartUpload that reports an error in a 200 fails the commit",
  opts,
  async () => {
    await withBackend(
      (req) => {
        const url = new URL(req.url);
        if (req.method === "HEAD") return new Response(null);
        if (url.searchParams.has("uploads")) {
          return new Response(
            "<InitiateMultipartUploadResult><UploadId>U2</UploadId></InitiateMultipartUploadResult>",
          );
        }
        if (url.searchParams.has("partNumber")) {
          return new Response(null, {
            headers: { etag: '"p1"' },
          });
        }
        if (req.method === "POST") {
          return new Response("<Error><Code>InternalError</Code><Message>late</Message></Error>");
        }
        return new Response(null, { status: 204 });
      },
      async (backend, seen) => {
        const staged = await backend.stageObject("b", "k", new Blob(["x"]).stream());
        const meta = { ...metaFor(new Uint8Array(1)), etag: "abc-1", md5: "" };
        assert.equal(await codeOf(staged.commit(meta)), "InternalError");
        assert.ok(seen().includes("DELETE /b/k?uploadId=U2"), seen().join("\n"));
      },
    );
  },
);

Deno.test("keys no URL can carry are refused on write and absent on read", opts, async () => {
  await withBackend(() => new Response(null), async (backend) => {
    const body = () => new Blob([""]).stream();
    assert.equal(await codeOf(backend.stageObject("b", "a/../b", body())), "InvalidObjectName");
    assert.equal(
      await codeOf(backend.stageObject("b", "k".repeat(1025), body())),
      "KeyTooLongError",
    );
    assert.equal(await backend.headObject("b", "a/./b"), null);
  });
});
