/**
 * Conditional deletes (DeleteCondition `ifMatch`) on the filesystem backend, through the
 * encryption, compression and observed layers, and on the S3 backend over a second svc (whose
 * DeleteObject honours `If-Match`): only the version named goes, a failed condition is
 * PreconditionFailed and leaves the object as it is, a missing object is false.
 */
import assert from "node:assert/strict";
import { SvcError } from "../lib/errors.ts";
import type { Backend } from "./backend.ts";
import { FilesystemBackend } from "./fs/filesystem-backend.ts";
import { layeredBackend } from "../testing/layered-backend-fixture.ts";
import { metaFor } from "../testing/object-fixtures.ts";
import { startSvcServer } from "../../tests/helpers/s3-servers.ts";
import { S3Backend } from "./s3/s3-backend.ts";

const utf8 = new TextEncoder();
const BUCKET = "conditional-delete";

async function put(backend: Backend, key: string, text: string): Promise<string> {
  const bytes = utf8.encode(text);
  const staged = await backend.stageObject(BUCKET, key, new Blob([bytes]).stream());
  await staged.commit(metaFor(bytes));
  const head = await backend.headObject(BUCKET, key);
  assert.ok(head?.version, `${key} reports a version`);
  return head.version;
}

async function text(backend: Backend, key: string): Promise<string | null> {
  const found = await backend.getObject(BUCKET, key);
  return found ? await new Response(found.body).text() : null;
}

const refused = (err: unknown) => err instanceof SvcError && err.code === "PreconditionFailed";

async function conditionalDeleteCases(backend: Backend) {
  const first = await put(backend, "k", "one");
  await assert.rejects(backend.deleteObject(BUCKET, "k", { ifMatch: "nope" }), refused);
  assert.equal(await text(backend, "k"), "one");

  // Overwritten since its version was seen: the newer write stays.
  const second = await put(backend, "k", "two");
  assert.notEqual(second, first);
  await assert.rejects(backend.deleteObject(BUCKET, "k", { ifMatch: first }), refused);
  assert.equal(await text(backend, "k"), "two");

  assert.equal(await backend.deleteObject(BUCKET, "k", { ifMatch: second }), true);
  assert.equal(await backend.headObject(BUCKET, "k"), null);
  assert.equal(await backend.deleteObject(BUCKET, "k", { ifMatch: second }), false);

  // The same bytes written again are another version on svc's own stores (file and time).
  const a = await put(backend, "same", "bytes");
  const b = await put(backend, "same", "bytes");
  if (a !== b) {
    await assert.rejects(backend.deleteObject(BUCKET, "same", { ifMatch: a }), refused);
    assert.equal(await text(backend, "same"), "bytes");
  }
  assert.equal(await backend.deleteObject(BUCKET, "same"), true, "unconditional still deletes");
}

Deno.test("conditional delete: filesystem backend", async () => {
  const dir = await Deno.makeTempDir({ prefix: "svc-conditional-delete-" });
  try {
    const backend = await FilesystemBackend.open(dir);
    await backend.createBucket(BUCKET);
    await conditionalDeleteCases(backend);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("conditional delete: encryption, compression and observed layers pass it on", async () => {
  const dir = await Deno.makeTempDir({ prefix: "svc-conditional-delete-layers-" });
  try {
    const backend = await layeredBackend(dir);
    await backend.createBucket(BUCKET);
    await conditionalDeleteCases(backend);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test({
  name: "conditional delete: S3 backend over svc (DeleteObject with If-Match)",
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    const server = await startSvcServer();
    const spoolDir = await Deno.makeTempDir({ prefix: "svc-conditional-delete-spool-" });
    try {
      const backend = await S3Backend.open({
        endpoint: server.endpoint,
        region: "us-east-1",
        forcePathStyle: true,
        accessKeyId: server.accessKeyId,
        secretAccessKey: server.secretAccessKey,
        connectTimeoutMs: 5000,
        readTimeoutMs: 20_000,
        attemptTimeoutMs: 60_000,
        stallGraceMs: 5000,
        streamCopyThreshold: 8 * 1024 * 1024,
        partSize: 5 * 1024 * 1024,
        uploadConcurrency: 4,
        spoolDir,
      });
      await backend.createBucket(BUCKET);
      await conditionalDeleteCases(backend);
    } finally {
      await Deno.remove(spoolDir, { recursive: true });
      await server.stop();
    }
  },
});
