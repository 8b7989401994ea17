import assert from "node:assert/strict";
import { SvcError } from "../lib/errors.ts";
import type { Backend, ByteRange } from "../storage/backend.ts";
import { FilesystemBackend } from "../storage/fs/filesystem-backend.ts";
import { META_XATTR } from "../storage/fs/fs-object-meta.ts";
import { getJsonXattr, setJsonXattr } from "../native/xattr.ts";
import { probeXdelta3, Xdelta3Codec } from "./codec/codec.ts";
import { CodecPool } from "./codec/codec-pool.ts";
import { DeltaBackend, type DeltaBackendOptions, type DeltaMeta } from "./delta-backend.ts";
import { ReferenceCache } from "./cache/reference-cache.ts";
import { metaFor, randomBytes } from "../testing/object-fixtures.ts";
import { deltaTestSettings } from "../testing/delta-fixtures.ts";

const probe = await probeXdelta3();
const ignore = !probe.available;
if (ignore) console.warn(`skipping delta backend tests: ${probe.reason}`);

const SIZE = 2 * 1024 * 1024;

/** A copy of `base` with ~1% changed in 1 KiB runs. */
function nextVersion(base: Uint8Array): Uint8Array<ArrayBuffer> {
  const out = new Uint8Array(base);
  const runs = Math.round(base.length * 0.01 / 1024);
  for (let r = 0; r < runs; r++) {
    const at = Math.floor(Math.random() * (base.length - 1024));
    out.set(randomBytes(1024), at);
  }
  return out;
}

const metaOf = (bytes: Uint8Array) =>
  metaFor(bytes, { contentType: "application/x-tar", userMeta: { build: "1" } });

const streamOf = (bytes: Uint8Array<ArrayBuffer>) => new Blob([bytes]).stream();

async function withEnv(fn: (env: Env) => Promise<void>): Promise<void> {
  const dir = await Deno.makeTempDir({ prefix: "svc-delta-backend-" });
  try {
    const inner = await FilesystemBackend.open(`${dir}/data`);
    const spoolDir = `${dir}/spool`;
    await Deno.mkdir(spoolDir);
    await Deno.mkdir(`${dir}/baselines`);
    const cache = new ReferenceCache({ dir: `${dir}/baselines`, maxBytes: 64 * 1024 * 1024 });
    const compression = new Map<string, boolean>();
    const pool = new CodecPool(32);
    const codec = new Xdelta3Codec({ tempDir: spoolDir, acceptsA: probe.acceptsA });
    const settings = () =>
      deltaTestSettings({
        maxObjectSize: 100 * 1024 * 1024,
        codecSlotWaitMs: 0,
        bucketCompression: (bucket: string) => compression.get(bucket) ?? true,
        // These tests check folder baselines (`<folder>reference.bin`): the parent rule.
        bucketDeltaspace: () => "parent",
      });
    /** A store over `other`; `innerPageKeys: 2` splits listings into tiny inner pages. */
    const over = (other: Backend, extra: Partial<DeltaBackendOptions> = {}) =>
      new DeltaBackend({ inner: other, codec, pool, spoolDir, settings, ...extra });
    const store = over(inner, { referenceCache: cache });
    await store.createBucket("b");
    await fn({
      inner,
      store,
      smallPages: over(inner, { innerPageKeys: 2 }),
      over,
      cache,
      pool,
      compression,
      put: (key: string, bytes: Uint8Array<ArrayBuffer>, bucket = "b") =>
        putTo(store, bucket, key, bytes),
      async read(key: string, range?: ByteRange, bucket = "b") {
        const found = await store.getObject(bucket, key, range);
        assert.ok(found, `${key} readable`);
        return new Uint8Array(await new Response(found.body).arrayBuffer());
      },
      onDisk: (key: string, bucket = "b") => `${inner.root}/${bucket}/${key}`,
    });
    assert.deepEqual([...Deno.readDirSync(spoolDir)], [], "spool directory left empty");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

type Env = {
  inner: FilesystemBackend;
  store: DeltaBackend;
  smallPages: DeltaBackend;
  over: (other: Backend) => DeltaBackend;
  cache: ReferenceCache;
  pool: CodecPool;
  compression: Map<string, boolean>;
  put: (key: string, bytes: Uint8Array<ArrayBuffer>, bucket?: string) => Promise<void>;
  read: (key: string, range?: ByteRange, bucket?: string) => Promise<Uint8Array>;
  onDisk: (key: string, bucket?: string) => string;
};

async function putTo(store: Backend, bucket: string, key: string, bytes: Uint8Array<ArrayBuffer>) {
  const staged = await store.stageObject(bucket, key, streamOf(bytes));
  await staged.commit(metaOf(bytes)).catch(async (err) => {
    await staged.abort();
    throw err;
  });
}

async function exists(path: string): Promise<boolean> {
  return await Deno.stat(path).then(() => true, () => false);
}

/** Flips one byte in place (same inode, so the metadata attribute stays). */
async function flipByte(path: string, at: number): Promise<void> {
  using file = await Deno.open(path, { read: true, write: true });
  const one = new Uint8Array(1);
  await file.seek(at, Deno.SeekMode.Start);
  await file.read(one);
  one[0] ^= 0xff;
  await file.seek(at, Deno.SeekMode.Start);
  await file.write(one);
}

async function rejectsCode(promise: Promise<unknown>, code = "InternalError"): Promise<void> {
  await assert.rejects(promise, (err) => err instanceof SvcError && err.code === code);
}

Deno.test({
  name: "delta backend: versions become a baseline plus small deltas and read back exactly",
  ignore,
  fn: () =>
    withEnv(async (env) => {
      const v1 = randomBytes(SIZE);
      const v2 = nextVersion(v1);
      const v3 = nextVersion(v2);
      await env.put("builds/app-1.tar", v1);
      assert.ok(await exists(env.onDisk("builds/reference.bin")));
      assert.ok(await exists(env.onDisk("builds/app-1.tar.delta")));
      assert.equal(await exists(env.onDisk("builds/app-1.tar")), false);
      await env.put("builds/app-2.tar", v2);
      await env.put("builds/app-3.tar", v3);
      for (const name of ["app-2.tar", "app-3.tar"]) {
        const size = (await Deno.stat(env.onDisk(`builds/${name}.delta`))).size;
        assert.ok(size < SIZE * 0.1, `${name} delta is ${size} bytes`);
      }
      const expected = [v1, v2, v3];
      for (let i = 0; i < 3; i++) {
        const key = `builds/app-${i + 1}.tar`;
        assert.deepEqual(await env.read(key), expected[i]);
        const range = { start: 1000 + i, end: 300_000 };
        assert.deepEqual(await env.read(key, range), expected[i].subarray(1000 + i, 300_001));
        const tail = { start: SIZE - 10, end: SIZE - 1 };
        assert.deepEqual(await env.read(key, tail), expected[i].subarray(SIZE - 10));
        const head = await env.store.headObject("b", key);
        assert.equal(head?.key, key);
        assert.equal(head?.meta.size, SIZE);
        assert.equal(head?.meta.etag, metaOf(expected[i]).etag);
        assert.equal(head?.meta.storage, "delta");
        assert.equal((head?.meta as DeltaMeta).referenceSha256, metaOf(v1).sha256);
        assert.ok(head!.storedSize < SIZE);
      }
      // Internal names are not client keys.
      assert.equal(await env.store.headObject("b", "builds/reference.bin"), null);
      assert.equal(await env.store.getObject("b", "builds/app-1.tar.delta"), null);
      await rejectsCode(env.put("builds/reference.bin", v1), "InvalidArgument");
    }),
});

Deno.test({
  name: "delta backend: dissimilar content and compressed types are stored passthrough",
  ignore,
  fn: () =>
    withEnv(async (env) => {
      const v1 = randomBytes(SIZE);
      await env.put("a/x-1.tar", v1);
      const before = await Deno.readFile(env.onDisk("a/reference.bin"));
      const other = randomBytes(SIZE);
      await env.put("a/x-2.tar", other);
      assert.ok(await exists(env.onDisk("a/x-2.tar")));
      assert.equal(await exists(env.onDisk("a/x-2.tar.delta")), false);
      assert.deepEqual(await Deno.readFile(env.onDisk("a/reference.bin")), before);
      assert.deepEqual(await env.read("a/x-2.tar"), other);
      assert.equal((await env.store.headObject("b", "a/x-2.tar"))?.meta.storage, "passthrough");

      const gz = nextVersion(v1);
      await env.put("a/x-3.tar.xz", gz);
      assert.ok(await exists(env.onDisk("a/x-3.tar.xz")));
      assert.deepEqual(await env.read("a/x-3.tar.xz"), gz);

      // Overwriting the passthrough key with similar content switches it to a delta.
      const similar = nextVersion(v1);
      await env.put("a/x-2.tar", similar);
      assert.equal(await exists(env.onDisk("a/x-2.tar")), false);
      assert.ok(await exists(env.onDisk("a/x-2.tar.delta")));
      assert.deepEqual(await env.read("a/x-2.tar"), similar);
      // And back: dissimilar content removes the delta.
      await env.put("a/x-2.tar", other);
      assert.equal(await exists(env.onDisk("a/x-2.tar.delta")), false);
      assert.deepEqual(await env.read("a/x-2.tar"), other);
    }),
});

Deno.test({
  name: "delta backend: a corrupted delta or baseline fails the GET without bytes",
  ignore,
  fn: () =>
    withEnv(async (env) => {
      const v1 = randomBytes(SIZE);
      const v2 = nextVersion(v1);
      await env.put("c/v1.tar", v1);
      await env.put("c/v2.tar", v2);
      const deltaPath = env.onDisk("c/v2.tar.delta");
      const deltaSize = (await Deno.stat(deltaPath)).size;
      await flipByte(deltaPath, Math.floor(deltaSize / 2));
      await rejectsCode(env.store.getObject("b", "c/v2.tar"));
      await flipByte(deltaPath, Math.floor(deltaSize / 2));
      assert.deepEqual(await env.read("c/v2.tar"), v2);

      // Bytes that decode cleanly but differ from the recorded sha256 are refused too.
      const recorded = getJsonXattr<DeltaMeta>(deltaPath, META_XATTR)!;
      setJsonXattr(deltaPath, META_XATTR, { ...recorded, sha256: metaOf(v1).sha256 });
      await rejectsCode(env.store.getObject("b", "c/v2.tar"));
      setJsonXattr(deltaPath, META_XATTR, recorded);
      assert.deepEqual(await env.read("c/v2.tar"), v2);

      await flipByte(env.onDisk("c/reference.bin"), 12345);
      env.cache.clear();
      await rejectsCode(env.store.getObject("b", "c/v1.tar"));
      await rejectsCode(env.store.getObject("b", "c/v2.tar", { start: 0, end: 9 }));
      // A new version is still accepted, stored passthrough.
      const v3 = nextVersion(v2);
      await env.put("c/v3.tar", v3);
      assert.ok(await exists(env.onDisk("c/v3.tar")));
      assert.deepEqual(await env.read("c/v3.tar"), v3);
    }),
});

Deno.test({
  name: "delta backend: parallel PUTs into one deltaspace share one baseline; deletes clean up",
  ignore,
  fn: () =>
    withEnv(async (env) => {
      const base = randomBytes(SIZE / 2);
      const versions = Array.from({ length: 20 }, () => nextVersion(base));
      await Promise.all(versions.map((v, i) => env.put(`p/v${i}.tar`, v)));
      const names = [...Deno.readDirSync(env.onDisk("p"))].map((e) => e.name);
      assert.equal(names.filter((n) => n === "reference.bin").length, 1);
      assert.equal(names.filter((n) => n.endsWith(".delta")).length, 20);
      for (let i = 0; i < 20; i++) assert.deepEqual(await env.read(`p/v${i}.tar`), versions[i]);

      const page = await env.store.listObjects("b", { prefix: "p/", maxKeys: 1000 });
      assert.equal(page.objects.length, 20);
      assert.ok(page.objects.every((o) => o.meta.size === SIZE / 2 && !o.key.endsWith(".delta")));

      for (let i = 0; i < 19; i++) {
        assert.equal(await env.store.deleteObject("b", `p/v${i}.tar`), true);
      }
      assert.ok(await exists(env.onDisk("p/reference.bin")));
      assert.equal(await env.store.deleteObject("b", "p/v19.tar"), true);
      assert.equal(await env.store.deleteObject("b", "p/v19.tar"), false);
      assert.equal(await exists(env.onDisk("p/reference.bin")), false);
      await env.store.deleteBucket("b");
      assert.equal(await env.store.headBucket("b"), null);
    }),
});

Deno.test({
  name: "delta backend: listings show logical keys and sizes in order, across pages",
  ignore,
  fn: () =>
    withEnv(async (env) => {
      const base = randomBytes(256 * 1024);
      // `x.tar` is stored as `x.tar.delta`, which sorts after `x.tar-y`: logical order differs.
      await env.put("x.tar", base);
      await env.put("x.tar-y", new TextEncoder().encode("plain"));
      await env.put("x.tar-z", new TextEncoder().encode("plain"));
      await env.put("x.tar.zip", nextVersion(base));
      await env.put("d/a.tar", nextVersion(base));
      await env.put("e.txt", new TextEncoder().encode("hello"));
      const logical = ["d/a.tar", "e.txt", "x.tar", "x.tar-y", "x.tar-z", "x.tar.zip"];
      const all = await env.store.listObjects("b", { prefix: "", maxKeys: 1000 });
      assert.deepEqual(all.objects.map((o) => o.key), logical);
      assert.equal(all.objects[2].meta.size, base.length);
      assert.equal(all.objects[2].meta.etag, metaOf(base).etag);
      assert.equal(all.isTruncated, false);
      const rolled = await env.store.listObjects("b", { prefix: "", delimiter: "/", maxKeys: 10 });
      assert.deepEqual(rolled.commonPrefixes, ["d/"]);
      assert.deepEqual(rolled.objects.map((o) => o.key), logical.slice(1));
      // Small client pages over small inner pages (which split `x.tar-y` from `x.tar.delta`).
      for (const store of [env.store, env.smallPages]) {
        for (const maxKeys of [1, 2, 3, 4]) {
          const keys: string[] = [];
          let startAfter: string | undefined;
          for (let n = 0; n < 10; n++) {
            const page = await store.listObjects("b", { prefix: "", startAfter, maxKeys });
            assert.ok(page.objects.length <= maxKeys);
            keys.push(...page.objects.map((o) => o.key));
            if (!page.isTruncated) break;
            startAfter = page.nextStartAfter;
          }
          assert.deepEqual(keys, logical, `maxKeys ${maxKeys}`);
        }
      }
      const small = await env.smallPages.listObjects("b", { prefix: "x", maxKeys: 10 });
      assert.deepEqual(small.objects.map((o) => o.key), logical.slice(2));
    }),
});

Deno.test({
  name: "delta backend: with compression off, internal names are ordinary keys",
  ignore,
  fn: () =>
    withEnv(async (env) => {
      await env.store.createBucket("plain");
      env.compression.set("plain", false);
      const bytes = randomBytes(64 * 1024);
      await env.put("reference.bin", bytes, "plain");
      await env.put("x.delta", bytes, "plain");
      await env.put("y.tar", bytes, "plain");
      assert.ok(await exists(env.onDisk("y.tar", "plain")));
      assert.deepEqual(await env.read("reference.bin", undefined, "plain"), bytes);
      assert.deepEqual(await env.read("x.delta", undefined, "plain"), bytes);
      const page = await env.store.listObjects("plain", { prefix: "", maxKeys: 10 });
      assert.deepEqual(page.objects.map((o) => o.key), ["reference.bin", "x.delta", "y.tar"]);
      assert.equal(await env.store.deleteObject("plain", "reference.bin"), true);
    }),
});

Deno.test({
  name: "delta backend: deleteBucket removes an orphaned baseline, refuses real objects",
  ignore,
  fn: () =>
    withEnv(async (env) => {
      const bytes = randomBytes(64 * 1024);
      await env.put("k/a.tar", bytes);
      // Simulate a crash between deleting the last delta and its baseline.
      await env.inner.deleteObject("b", "k/a.tar.delta");
      assert.ok(await exists(env.onDisk("k/reference.bin")));
      await env.put("z.txt", bytes);
      await rejectsCode(env.store.deleteBucket("b"), "BucketNotEmpty");
      await env.store.deleteObject("b", "z.txt");
      await env.store.deleteBucket("b");
      assert.equal(await env.store.headBucket("b"), null);
    }),
});

Deno.test({
  name: "delta backend: no free codec slot stores passthrough; a failed PUT leaves nothing behind",
  ignore,
  fn: () =>
    withEnv(async (env) => {
      const bytes = randomBytes(64 * 1024);
      const held = Array.from({ length: env.pool.concurrency }, () => env.pool.tryAcquire());
      await env.put("s/a.tar", bytes); // never refused for busy codecs (codecSlotWaitMs 0)
      for (const permit of held) permit.release();
      assert.equal((await env.inner.headObject("b", "s/a.tar"))?.meta.storage, "passthrough");
      assert.equal(await exists(env.onDisk("s/reference.bin")), false);
      assert.deepEqual(await env.read("s/a.tar"), bytes);
      await env.put("s/a.tar", bytes);
      assert.deepEqual(await env.read("s/a.tar"), bytes);

      // Error is not absence: a failing baseline HEAD aborts the PUT; a failed delta store
      // rolls the new baseline back.
      const failing = new Set<string>();
      const flaky = new Proxy(env.inner, {
        get(target, prop) {
          const value = Reflect.get(target, prop);
          if (typeof value !== "function") return value;
          return (...args: unknown[]) => {
            if (failing.has(`${String(prop)} ${args[1]}`)) throw new Error("backend down");
            return value.apply(target, args);
          };
        },
      });
      const store = env.over(flaky);
      const put = (key: string) => putTo(store, "b", key, bytes);
      failing.add("headObject r/reference.bin");
      await assert.rejects(put("r/a.tar"), /backend down/);
      assert.equal(await exists(env.onDisk("r")), false);
      failing.clear();
      failing.add("stageObject r/a.tar.delta");
      await assert.rejects(put("r/a.tar"), /backend down/);
      assert.equal(await exists(env.onDisk("r/reference.bin")), false);
      failing.clear();
      await put("r/a.tar");
      assert.deepEqual(await env.read("r/a.tar"), bytes);
    }),
});
