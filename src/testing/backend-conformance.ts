/**
 * The behaviour every Backend must share, as a reusable test suite. `backendConformance`
 * registers one Deno.test whose steps run against a backend from the given factory; each step
 * works in buckets of its own, so steps do not see each other's objects.
 *
 * Where the S3 backend legitimately differs from the filesystem one, the suite checks the
 * weaker common promise and says so: `lastModified` is the backend's clock (whole seconds on
 * S3), so HEAD and LIST must agree with each other and lie near the commit time, not equal the
 * committed value; listing entries must carry the logical size and ETag, other fields may be
 * defaults.
 */
import assert from "node:assert/strict";
import type { Backend } from "../storage/backend.ts";
import {
  checkPaging,
  comparable,
  encoder,
  entriesOf,
  hex,
  metaFor,
  put,
  read,
  rejectsWith,
  streamOf,
} from "./backend-conformance-helpers.ts";
import { META_UPDATE_STEPS } from "./backend-conformance-meta.ts";
import { PATH_STEPS } from "./backend-conformance-paths.ts";
import { compareUtf8 } from "../lib/key-order.ts";

export { expectedPage, metaFor } from "./backend-conformance-helpers.ts";

export interface ConformanceFixture {
  backend: Backend;
  close(): Promise<void>;
}

export interface ConformanceOptions {
  /** A reason to skip the whole suite (e.g. its server cannot run here). */
  ignore?: string;
  /** Steps a backend cannot pass for a documented reason outside svc, by title. */
  skipSteps?: Record<string, string>;
}

type Step = (backend: Backend, bucket: () => Promise<string>) => Promise<void>;

export function backendConformance(
  name: string,
  open: () => Promise<ConformanceFixture>,
  options: ConformanceOptions = {},
): void {
  Deno.test({
    name: `${name}: backend conformance${options.ignore ? ` (skipped: ${options.ignore})` : ""}`,
    ignore: options.ignore !== undefined,
    sanitizeOps: false,
    sanitizeResources: false,
    fn: async (t) => {
      const fixture = await open();
      let counter = 0;
      const run = `${Date.now().toString(36)}${Math.floor(Math.random() * 1e6).toString(36)}`;
      try {
        for (const [title, step] of Object.entries(STEPS)) {
          const skip = options.skipSteps?.[title];
          if (skip !== undefined) {
            await t.step({ name: `${title} (skipped: ${skip})`, ignore: true, fn: () => {} });
            continue;
          }
          await t.step(title, () =>
            step(fixture.backend, async () => {
              const bucket = `conf-${run}-${++counter}`;
              await fixture.backend.createBucket(bucket);
              return bucket;
            }));
        }
      } finally {
        await fixture.close();
      }
    },
  });
}

// ---- the steps ---------------------------------------------------------------------------------

const LISTING_KEYS = [
  "a.txt",
  "a-b",
  "a/1",
  "a/2",
  "a/b/c",
  "a/b/d",
  "a0",
  "b/",
  "b/x",
  "c/d/e/f",
  "dir/",
  "zz",
  "é/1",
  "\u{1F600}",
  "\uFFFD",
];

/** Directory markers (keys ending in `/`) hold no bytes on the filesystem backend. */
function bodyOf(key: string): string {
  return key.endsWith("/") ? "" : `body of ${key}`;
}

const ODD_KEYS = [
  "with space",
  "plus+sign",
  "percent%20literal",
  "question?mark",
  "hash#tag",
  "tilde~and!'()*",
  "ümlaut/ключ",
  "emoji-\u{1F680}",
  "amp&eq=semi;colon",
  "back\\slash",
  "trailing space ",
];

const STEPS: Record<string, Step> = {
  "buckets: create, head, list, refuse a duplicate, delete": async (backend, newBucket) => {
    const bucket = await newBucket();
    const head = await backend.headBucket(bucket);
    assert.equal(head?.name, bucket);
    assert.ok((await backend.listBuckets()).some((b) => b.name === bucket));
    await rejectsWith(backend.createBucket(bucket), "BucketAlreadyOwnedByYou");
    await backend.deleteBucket(bucket);
    assert.equal(await backend.headBucket(bucket), null);
    assert.ok(!(await backend.listBuckets()).some((b) => b.name === bucket));
    await rejectsWith(backend.deleteBucket(bucket), "NoSuchBucket");
  },

  "buckets: a bucket with an object is not deleted": async (backend, newBucket) => {
    const bucket = await newBucket();
    await put(backend, bucket, "k", "v");
    await rejectsWith(backend.deleteBucket(bucket), "BucketNotEmpty");
    assert.ok(await backend.deleteObject(bucket, "k"));
    await backend.deleteBucket(bucket);
  },

  "staged objects are invisible until commit; abort leaves nothing": async (backend, newBucket) => {
    const bucket = await newBucket();
    const staged = await backend.stageObject(bucket, "k", streamOf(encoder.encode("hello")));
    assert.equal(await backend.headObject(bucket, "k"), null);
    assert.deepEqual((await backend.listObjects(bucket, { prefix: "", maxKeys: 10 })).objects, []);
    await staged.abort();
    assert.equal(await backend.headObject(bucket, "k"), null);
    const meta = metaFor(encoder.encode("hello"));
    const second = await backend.stageObject(bucket, "k", streamOf(encoder.encode("hello")));
    const info = await second.commit(meta);
    assert.equal(info.key, "k");
    assert.equal(info.storedSize, 5);
    assert.equal(await read(backend, bucket, "k"), "hello");
  },

  "head, get and ranges; missing keys are null": async (backend, newBucket) => {
    const bucket = await newBucket();
    const meta = await put(backend, bucket, "obj", "0123456789");
    const head = await backend.headObject(bucket, "obj");
    assert.equal(head?.storedSize, 10);
    assert.deepEqual(comparable(head!.meta), comparable(meta));
    assert.equal(await read(backend, bucket, "obj"), "0123456789");
    assert.equal(await read(backend, bucket, "obj", [2, 5]), "2345");
    assert.equal(await read(backend, bucket, "obj", [9, 9]), "9");
    assert.equal(await backend.headObject(bucket, "missing"), null);
    assert.equal(await backend.getObject(bucket, "missing"), null);
    assert.equal(await backend.headObject(bucket, "ob"), null);
    await put(backend, bucket, "empty", "");
    assert.equal(await read(backend, bucket, "empty"), "");
    assert.equal((await backend.headObject(bucket, "empty"))?.meta.size, 0);
  },

  "a one-byte range at the start is exactly that byte": async (backend, newBucket) => {
    const bucket = await newBucket();
    await put(backend, bucket, "obj", "0123456789");
    const ranged = await backend.getObject(bucket, "obj", { start: 0, end: 0 });
    assert.equal(ranged?.info.storedSize, 10);
    assert.equal(await new Response(ranged!.body).text(), "0");
  },

  "metadata round-trips, including user keys like ours and extra fields": async (
    backend,
    newBucket,
  ) => {
    const bucket = await newBucket();
    const body = encoder.encode("stored delta bytes");
    const meta = {
      ...metaFor(body),
      size: 123456,
      etag: "0123456789abcdef0123456789abcdef-3",
      md5: "",
      sha256: "ab".repeat(32),
      contentType: "text/plain; charset=utf-8",
      userMeta: {
        "plain": "value",
        "svc-size": "user-owned",
        "svc-u-x": "nested escape",
        "unicode": "grüße ✓",
        "spaces": "  padded  ",
        "looks-encoded": "=?UTF-8?B?aGk=?=",
        "empty": "",
      },
      headers: {
        "cache-control": "max-age=60",
        "content-disposition": 'attachment; filename="a b.txt"',
        "content-encoding": "gzip",
        "content-language": "de",
        "expires": "Wed, 21 Oct 2037 07:28:00 GMT",
      },
      partsCount: 3,
      storage: "delta" as const,
      referenceSha256: "cd".repeat(32),
    };
    const staged = await backend.stageObject(bucket, "d/obj.bin", streamOf(body));
    await staged.commit(meta);
    const head = await backend.headObject(bucket, "d/obj.bin");
    assert.equal(head?.storedSize, body.length);
    assert.deepEqual(comparable(head!.meta), comparable(meta));
    // Bytes stored with Content-Encoding come back untouched (no transparent decompression).
    const got = await backend.getObject(bucket, "d/obj.bin");
    assert.deepEqual(comparable(got!.info.meta), comparable(meta));
    assert.deepEqual(new Uint8Array(await new Response(got!.body).arrayBuffer()), body);
  },

  "listings show the logical size and ETag of objects stored otherwise": async (
    backend,
    newBucket,
  ) => {
    const bucket = await newBucket();
    const body = encoder.encode("stored delta bytes");
    const delta = { size: 123456, etag: "0123456789abcdef0123456789abcdef", md5: "" };
    await put(backend, bucket, "d/delta.bin", body, { ...delta, storage: "delta" });
    const multipart = { etag: "0123456789abcdef0123456789abcdef-2", md5: "", partsCount: 2 };
    await put(backend, bucket, "d/multi.bin", body, multipart);
    await put(backend, bucket, "d/plain.bin", body);
    const listed = await backend.listObjects(bucket, { prefix: "d/", maxKeys: 10 });
    const byKey = Object.fromEntries(listed.objects.map((o) => [o.key, o]));
    assert.deepEqual(Object.keys(byKey), ["d/delta.bin", "d/multi.bin", "d/plain.bin"]);
    assert.equal(byKey["d/delta.bin"].meta.size, 123456);
    assert.equal(byKey["d/delta.bin"].meta.etag, delta.etag);
    assert.equal(byKey["d/delta.bin"].storedSize, body.length);
    assert.equal(byKey["d/multi.bin"].meta.size, body.length);
    assert.equal(byKey["d/multi.bin"].meta.etag, multipart.etag);
    assert.equal(byKey["d/plain.bin"].meta.etag, hex("md5", body));
  },

  "overwrite replaces bytes and metadata": async (backend, newBucket) => {
    const bucket = await newBucket();
    await put(backend, bucket, "k", "first", { userMeta: { a: "1" } });
    const second = await put(backend, bucket, "k", "second!", { contentType: "text/x" });
    assert.equal(await read(backend, bucket, "k"), "second!");
    assert.deepEqual(comparable((await backend.headObject(bucket, "k"))!.meta), comparable(second));
  },

  "delete reports whether the key existed": async (backend, newBucket) => {
    const bucket = await newBucket();
    await put(backend, bucket, "a/b", "x");
    assert.equal(await backend.deleteObject(bucket, "a/b"), true);
    assert.equal(await backend.deleteObject(bucket, "a/b"), false);
    assert.equal(await backend.deleteObject(bucket, "never"), false);
    assert.equal(await backend.headObject(bucket, "a/b"), null);
  },

  "deleting a key that ends in / removes that key only, never the keys below it": async (
    backend,
    newBucket,
  ) => {
    const bucket = await newBucket();
    for (const key of ["dir/", "dir/a", "dir/sub/b"]) await put(backend, bucket, key, "");
    assert.equal(await backend.deleteObject(bucket, "dir/"), true);
    const left = await backend.listObjects(bucket, { prefix: "", maxKeys: 10 });
    assert.deepEqual(left.objects.map((o) => o.key), ["dir/a", "dir/sub/b"]);
  },

  "lastModified: HEAD and LIST agree, near the commit time": async (backend, newBucket) => {
    const bucket = await newBucket();
    const before = Date.now();
    await put(backend, bucket, "t", "time");
    await put(backend, bucket, "big", "multi", {
      etag: "00000000000000000000000000000000-2",
      md5: "",
    });
    for (const key of ["t", "big"]) {
      const head = await backend.headObject(bucket, key);
      const listed = (await backend.listObjects(bucket, { prefix: key, maxKeys: 1 })).objects[0];
      assert.equal(listed.key, key);
      assert.equal(listed.meta.lastModified, head!.meta.lastModified);
      assert.ok(Math.abs(head!.meta.lastModified - before) < 10_000, `${head!.meta.lastModified}`);
    }
  },

  "listing: prefixes, delimiters and every page size": async (backend, newBucket) => {
    const bucket = await newBucket();
    for (const key of LISTING_KEYS) await put(backend, bucket, key, bodyOf(key));
    const all = await backend.listObjects(bucket, { prefix: "", maxKeys: 1000 });
    assert.deepEqual(all.objects.map((o) => o.key), [...LISTING_KEYS].sort(compareUtf8));
    for (const o of all.objects) {
      assert.equal(o.meta.size, encoder.encode(bodyOf(o.key)).length);
      assert.equal(o.meta.etag, hex("md5", encoder.encode(bodyOf(o.key))));
    }
    for (const prefix of ["", "a", "a/", "a/b", "b/", "c/d/", "nothing"]) {
      for (const delimiter of [undefined, "/"]) {
        for (const maxKeys of [1, 2, 3, 1000]) {
          await checkPaging(backend, bucket, LISTING_KEYS, { prefix, delimiter, maxKeys });
        }
      }
    }
    await checkPaging(backend, bucket, LISTING_KEYS, { prefix: "", delimiter: "b", maxKeys: 2 });
  },

  "listing: a common prefix as page boundary hides the keys below it": async (
    backend,
    newBucket,
  ) => {
    const bucket = await newBucket();
    const keys = ["p/1", "p/2", "p/3", "q", "r/1"];
    for (const key of keys) await put(backend, bucket, key, key);
    const first = await backend.listObjects(bucket, { prefix: "", delimiter: "/", maxKeys: 1 });
    assert.deepEqual(first.commonPrefixes, ["p/"]);
    assert.equal(first.nextStartAfter, "p/");
    const second = await backend.listObjects(bucket, {
      prefix: "",
      delimiter: "/",
      maxKeys: 1,
      startAfter: "p/",
    });
    assert.deepEqual(second.objects.map((o) => o.key), ["q"]);
    const fromInside = await backend.listObjects(bucket, {
      prefix: "",
      delimiter: "/",
      maxKeys: 10,
      startAfter: "p/2",
    });
    assert.deepEqual(entriesOf(fromInside), ["q", "r/"]);
  },

  "listing: many pages": async (backend, newBucket) => {
    const bucket = await newBucket();
    const keys: string[] = [];
    for (let i = 0; i < 60; i++) keys.push(`k${String(i).padStart(3, "0")}`);
    for (let i = 0; i < 12; i++) keys.push(`dir${i % 4}/f${i}`);
    await Promise.all(keys.map((key) => put(backend, bucket, key, "x")));
    await checkPaging(backend, bucket, keys, { prefix: "", maxKeys: 7 });
    await checkPaging(backend, bucket, keys, { prefix: "", delimiter: "/", maxKeys: 5 });
  },

  "a missing bucket is NoSuchBucket everywhere": async (backend) => {
    const bucket = `missing-${crypto.randomUUID().slice(0, 8)}`;
    assert.equal(await backend.headBucket(bucket), null);
    await rejectsWith(backend.headObject(bucket, "k"), "NoSuchBucket");
    await rejectsWith(backend.getObject(bucket, "k"), "NoSuchBucket");
    await rejectsWith(
      backend.stageObject(bucket, "k", streamOf(new Uint8Array(1))),
      "NoSuchBucket",
    );
    await rejectsWith(backend.deleteObject(bucket, "k"), "NoSuchBucket");
    await rejectsWith(backend.listObjects(bucket, { prefix: "", maxKeys: 5 }), "NoSuchBucket");
    await rejectsWith(backend.deleteBucket(bucket), "NoSuchBucket");
  },

  "bucket names that are not one path segment never reach another bucket": async (
    backend,
    newBucket,
  ) => {
    const bucket = await newBucket();
    await put(backend, bucket, "secret", "s");
    for (const name of ["..", ".", `${bucket}/..`, `../${bucket}`]) {
      assert.equal(await backend.headBucket(name).catch(() => null), null, name);
      await rejectsWith(backend.getObject(name, `${bucket}/secret`), "NoSuchBucket");
      await rejectsWith(backend.headObject(name, `${bucket}/secret`), "NoSuchBucket");
      await rejectsWith(backend.getObject(name, "secret"), "NoSuchBucket");
      await rejectsWith(backend.listObjects(name, { prefix: "", maxKeys: 5 }), "NoSuchBucket");
      await rejectsWith(backend.deleteObject(name, `${bucket}/secret`), "NoSuchBucket");
    }
    assert.equal(await read(backend, bucket, "secret"), "s");
  },

  "odd keys are stored, read, listed and deleted exactly": async (backend, newBucket) => {
    const bucket = await newBucket();
    for (const key of ODD_KEYS) await put(backend, bucket, key, `body:${key}`);
    for (const key of ODD_KEYS) {
      assert.equal(await read(backend, bucket, key), `body:${key}`, key);
      assert.equal((await backend.headObject(bucket, key))?.key, key);
    }
    const listed = await backend.listObjects(bucket, { prefix: "", maxKeys: 1000 });
    assert.deepEqual(listed.objects.map((o) => o.key), [...ODD_KEYS].sort(compareUtf8));
    const one = await backend.listObjects(bucket, { prefix: "plus+", maxKeys: 10 });
    assert.deepEqual(one.objects.map((o) => o.key), ["plus+sign"]);
    for (const key of ODD_KEYS) assert.equal(await backend.deleteObject(bucket, key), true, key);
  },

  ...META_UPDATE_STEPS,
  ...PATH_STEPS,
};
