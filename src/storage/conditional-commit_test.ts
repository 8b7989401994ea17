/**
 * Conditional commits (WriteCondition) on the filesystem backend and on the S3 backend over a
 * second svc, for a single PUT and for a backend multipart upload (an object whose metadata a
 * listing cannot reproduce): `ifNoneMatch` creates only, `ifMatch` replaces only the version
 * named, a failed condition is PreconditionFailed and leaves the object as it was, and of
 * concurrent creates exactly one wins.
 */
import assert from "node:assert/strict";
import { SvcError } from "../lib/errors.ts";
import type { Backend, ObjectMeta, WriteCondition } from "./backend.ts";
import { FilesystemBackend } from "./fs/filesystem-backend.ts";
import { layeredBackend } from "../testing/layered-backend-fixture.ts";
import { metaFor } from "../testing/object-fixtures.ts";
import { startSvcServer } from "../../tests/helpers/s3-servers.ts";
import { openBackend } from "../testing/s3-backend-fixture.ts";

const utf8 = new TextEncoder();
const BUCKET = "conditional";

async function commit(
  backend: Backend,
  key: string,
  text: string,
  condition?: WriteCondition,
  multipart = false,
) {
  const bytes = utf8.encode(text);
  // A multipart-style ETag is not the md5: the S3 backend sends such an object as multipart.
  const meta: ObjectMeta = metaFor(bytes, multipart ? { etag: "0123abcd-1" } : {});
  const staged = await backend.stageObject(BUCKET, key, new Blob([bytes]).stream());
  try {
    return await staged.commit(meta, condition);
  } catch (err) {
    await staged.abort();
    throw err;
  }
}

async function text(backend: Backend, key: string): Promise<string> {
  const found = await backend.getObject(BUCKET, key);
  assert.ok(found, `${key} exists`);
  return await new Response(found.body).text();
}

const refused = (err: unknown) => err instanceof SvcError && err.code === "PreconditionFailed";

async function conditionalCases(backend: Backend, multipart: boolean) {
  const key = multipart ? "mp/k" : "k";
  const created = await commit(backend, key, "one", { ifNoneMatch: true }, multipart);
  assert.ok(created.version, "a conditional commit reports its version");
  await assert.rejects(commit(backend, key, "two", { ifNoneMatch: true }, multipart), refused);
  assert.equal(await text(backend, key), "one");

  const head = await backend.headObject(BUCKET, key);
  assert.equal(head?.version, created.version, "HEAD reports the committed version");
  await assert.rejects(commit(backend, key, "three", { ifMatch: "nope" }, multipart), refused);
  assert.equal(await text(backend, key), "one");
  const replaced = await commit(backend, key, "three", { ifMatch: head!.version! }, multipart);
  assert.notEqual(replaced.version, head!.version);
  assert.equal(await text(backend, key), "three");
  // The version it named is gone now.
  await assert.rejects(
    commit(backend, key, "four", { ifMatch: head!.version! }, multipart),
    refused,
  );
  await assert.rejects(
    commit(backend, `${key}-absent`, "x", { ifMatch: head!.version! }, multipart),
    refused,
  );
  assert.equal(await backend.headObject(BUCKET, `${key}-absent`), null);

  // A commit refused on its condition leaves the staged bytes: another commit stores them.
  const againBytes = utf8.encode("staged once");
  const again = await backend.stageObject(BUCKET, `${key}-again`, new Blob([againBytes]).stream());
  const againMeta = metaFor(againBytes, multipart ? { etag: "0123abcd-1" } : {});
  await assert.rejects(again.commit(againMeta, { ifMatch: head!.version! }), refused);
  await assert.rejects(again.commit(againMeta, { ifMatch: "nope" }), refused);
  assert.equal(await backend.headObject(BUCKET, `${key}-again`), null);
  const placed = await again.commit({ ...againMeta, contentType: "text/x-again" }, {
    ifNoneMatch: true,
  });
  assert.ok(placed.version);
  assert.equal(await text(backend, `${key}-again`), "staged once");
  const placedHead = await backend.headObject(BUCKET, `${key}-again`);
  assert.equal(placedHead?.meta.contentType, "text/x-again", "the last commit's metadata");
  await assert.rejects(again.commit(againMeta), "a committed object is used");
  await again.abort();

  // Concurrent creates of one key: exactly one wins, and its body is the one stored.
  const racers = Array.from({ length: 5 }, (_, i) => `racer ${i}`);
  const outcomes = await Promise.allSettled(
    racers.map((body) => commit(backend, `${key}-race`, body, { ifNoneMatch: true }, multipart)),
  );
  const won = outcomes.flatMap((o, i) => o.status === "fulfilled" ? [racers[i]] : []);
  assert.equal(won.length, 1, JSON.stringify(outcomes.map((o) => o.status)));
  for (const o of outcomes) if (o.status === "rejected") assert.ok(refused(o.reason), o.reason);
  assert.equal(await text(backend, `${key}-race`), won[0]);
}

Deno.test("conditional commit: filesystem backend", async () => {
  const dir = await Deno.makeTempDir({ prefix: "svc-conditional-" });
  try {
    const backend = await FilesystemBackend.open(dir);
    await backend.createBucket(BUCKET);
    await conditionalCases(backend, false);
    await conditionalCases(backend, true);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("conditional commit: encryption, compression and observed layers pass it on", async () => {
  const dir = await Deno.makeTempDir({ prefix: "svc-conditional-layers-" });
  try {
    const backend = await layeredBackend(dir);
    await backend.createBucket(BUCKET);
    await conditionalCases(backend, false);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test({
  name: "conditional commit: S3 backend over svc (PUT and CompleteMultipartUpload)",
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    const server = await startSvcServer();
    const opened = await openBackend(server);
    try {
      const backend = opened.backend;
      await backend.createBucket(BUCKET);
      await conditionalCases(backend, false);
      await conditionalCases(backend, true);
    } finally {
      await opened.close();
      await server.stop();
    }
  },
});
