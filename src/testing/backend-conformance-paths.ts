/**
 * Conformance steps for keys that are a path and a directory at once (issue 11 item 4): S3 lets
 * `foo/bar` and `foo/bar/xyzzy` coexist and a key ending in `/` carry a body, so every backend
 * must store, read, list (in UTF-8 byte order) and delete them like any other key.
 */
import assert from "node:assert/strict";
import type { Backend } from "../storage/backend.ts";
import { checkPaging, put, read } from "./backend-conformance-helpers.ts";

type Step = (backend: Backend, bucket: () => Promise<string>) => Promise<void>;

const NESTED_KEYS = [
  "foo/bar",
  "foo/bar/xyzzy",
  "q/r/s",
  "q/r",
  "foo/bar0",
  "foo/bar-x",
  "foo/bar/",
  "foo/bar/deeper/still",
  "foo/bar/deeper",
];

export const PATH_STEPS: Record<string, Step> = {
  "a key and keys below it coexist, written in either order": async (backend, newBucket) => {
    const bucket = await newBucket();
    // Written in this order: each later key needs the earlier one's path as a directory, or
    // the other way round.
    for (const key of NESTED_KEYS) await put(backend, bucket, key, `body:${key}`);
    for (const key of NESTED_KEYS) {
      assert.equal(await read(backend, bucket, key), `body:${key}`, key);
      assert.equal((await backend.headObject(bucket, key))?.meta.size, 5 + key.length, key);
    }
    const listed = await backend.listObjects(bucket, { prefix: "", maxKeys: 1000 });
    assert.deepEqual(listed.objects.map((o) => o.key).sort(), [...NESTED_KEYS].sort());
    // Deleting one never touches the others.
    const left = new Set(NESTED_KEYS);
    for (const key of ["foo/bar", "q/r/s", "foo/bar/deeper", "foo/bar/", "q/r"]) {
      assert.equal(await backend.deleteObject(bucket, key), true, key);
      left.delete(key);
      assert.equal(await backend.headObject(bucket, key), null, key);
      for (const other of left) {
        assert.equal(await read(backend, bucket, other), `body:${other}`, `${other} after ${key}`);
      }
      const now = await backend.listObjects(bucket, { prefix: "", maxKeys: 1000 });
      assert.deepEqual(now.objects.map((o) => o.key).sort(), [...left].sort());
    }
  },

  "listing: a key and keys below it in UTF-8 byte order, every page": async (
    backend,
    newBucket,
  ) => {
    const bucket = await newBucket();
    for (const key of NESTED_KEYS) await put(backend, bucket, key, `body:${key}`);
    for (const prefix of ["", "foo/", "foo/bar", "foo/bar/", "q", "q/r/"]) {
      for (const delimiter of [undefined, "/"]) {
        for (const maxKeys of [1, 2, 1000]) {
          await checkPaging(backend, bucket, NESTED_KEYS, { prefix, delimiter, maxKeys });
        }
      }
    }
  },

  "a key ending in / keeps a non-empty body": async (backend, newBucket) => {
    const bucket = await newBucket();
    await put(backend, bucket, "d/", "marker body");
    await put(backend, bucket, "d/x", "x");
    assert.equal(await read(backend, bucket, "d/"), "marker body");
    assert.equal(await read(backend, bucket, "d/", [7, 10]), "body");
    assert.equal((await backend.headObject(bucket, "d/"))?.meta.size, 11);
    await put(backend, bucket, "d/", "");
    assert.equal(await read(backend, bucket, "d/"), "");
    assert.equal((await backend.headObject(bucket, "d/"))?.meta.size, 0);
    await put(backend, bucket, "d/", "again");
    assert.equal(await read(backend, bucket, "d/"), "again");
    const listed = await backend.listObjects(bucket, { prefix: "d", maxKeys: 10 });
    assert.deepEqual(listed.objects.map((o) => [o.key, o.meta.size]), [["d/", 5], ["d/x", 1]]);
    await put(backend, bucket, "e", "e");
    await put(backend, bucket, "e/", "e marker");
    assert.equal(await read(backend, bucket, "e"), "e");
    assert.equal(await read(backend, bucket, "e/"), "e marker");
    assert.equal(await backend.deleteObject(bucket, "d/"), true);
    assert.equal(await backend.headObject(bucket, "d/"), null);
    assert.equal(await read(backend, bucket, "d/x"), "x");
    assert.equal(await backend.deleteObject(bucket, "e/"), true);
    assert.equal(await read(backend, bucket, "e"), "e");
  },
};
