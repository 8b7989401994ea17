/**
 * Conformance steps for `updateObjectMeta` (backend-conformance.ts runs them on every backend):
 * the record is replaced, the bytes stay, a missing key is null and a missing bucket
 * NoSuchBucket. Both shapes an S3 backend treats differently are covered: a plain object (one
 * self-copy) and one whose ETag is not its md5 (a multipart self-copy, so listings keep it).
 */
import assert from "node:assert/strict";
import type { Backend, ObjectMeta } from "../storage/backend.ts";
import { comparable, put, read, rejectsWith } from "./backend-conformance-helpers.ts";

type Step = (backend: Backend, bucket: () => Promise<string>) => Promise<void>;

async function checkUpdate(
  backend: Backend,
  bucket: string,
  key: string,
  written: ObjectMeta,
  body: string,
): Promise<void> {
  const tags = { team: "ops", "ünï": "cödé value" };
  const updated = await backend.updateObjectMeta(bucket, key, (meta) => ({ ...meta, tags }));
  assert.deepEqual(updated && comparable(updated.meta), comparable({ ...written, tags }));
  const head = await backend.headObject(bucket, key);
  assert.deepEqual(head && comparable(head.meta), comparable({ ...written, tags }));
  assert.equal(await read(backend, bucket, key), body);
  const listed = await backend.listObjects(bucket, { prefix: key, maxKeys: 1 });
  assert.equal(listed.objects[0]?.meta.etag, written.etag);
  assert.equal(listed.objects[0]?.meta.size, written.size);
  // Removing the tags leaves no trace of them.
  await backend.updateObjectMeta(bucket, key, ({ tags: _gone, ...meta }) => meta);
  const cleared = await backend.headObject(bucket, key);
  assert.deepEqual(cleared && comparable(cleared.meta), comparable(written));
}

export const META_UPDATE_STEPS: Record<string, Step> = {
  "metadata update in place: a plain object keeps its bytes": async (backend, newBucket) => {
    const bucket = await newBucket();
    const meta = await put(backend, bucket, "plain", "plain body", { userMeta: { a: "1" } });
    await checkUpdate(backend, bucket, "plain", meta, "plain body");
    assert.equal(await backend.updateObjectMeta(bucket, "missing", (m) => m), null);
    await rejectsWith(
      backend.updateObjectMeta(`${bucket}-gone`, "plain", (m) => m),
      "NoSuchBucket",
    );
  },

  "metadata update in place: an object with a multipart ETag keeps it": async (
    backend,
    newBucket,
  ) => {
    const bucket = await newBucket();
    const meta = await put(backend, bucket, "parts", "two parts", {
      etag: "0123456789abcdef0123456789abcdef-2",
      md5: "",
      partsCount: 2,
    });
    await checkUpdate(backend, bucket, "parts", meta, "two parts");
  },
};
