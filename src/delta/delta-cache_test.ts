/**
 * The delta store over the file-backed reference cache: what a corrupt cached baseline file does
 * to a GET (500, evicted, fine again on the next read) and to a PUT (never a failed PUT and never
 * a delta made against it: stored passthrough), on the live-encode and the encode-from-spool path.
 */
import assert from "node:assert/strict";
import { FilesystemBackend } from "../storage/fs/filesystem-backend.ts";
import { probeXdelta3, Xdelta3Codec } from "./codec/codec.ts";
import { CodecPool } from "./codec/codec-pool.ts";
import { DeltaBackend } from "./delta-backend.ts";
import { ReferenceCache } from "./cache/reference-cache.ts";
import { metaFor, randomBytes } from "../testing/object-fixtures.ts";
import { deltaTestSettings } from "../testing/delta-fixtures.ts";

const probe = await probeXdelta3();
const ignore = !probe.available;
const SIZE = 1024 * 1024;

/** A copy of `base` with a few 1 KiB runs changed. */
function nextVersion(base: Uint8Array): Uint8Array<ArrayBuffer> {
  const out = new Uint8Array(base);
  for (let r = 0; r < 8; r++) out.set(randomBytes(1024), 1024 * (r * 97 % (SIZE / 1024 - 1)));
  return out;
}

const metaOf = (bytes: Uint8Array) => metaFor(bytes, { contentType: "application/x-tar" });

interface Env {
  store: DeltaBackend;
  cache: ReferenceCache;
  root: string;
}

async function withEnv(fn: (env: Env) => Promise<void>): Promise<void> {
  const dir = await Deno.makeTempDir({ prefix: "svc-delta-cache-" });
  try {
    const inner = await FilesystemBackend.open(`${dir}/data`);
    const spoolDir = `${dir}/spool`;
    await Deno.mkdir(spoolDir);
    await Deno.mkdir(`${dir}/baselines`);
    const cache = new ReferenceCache({ dir: `${dir}/baselines`, maxBytes: 16 * SIZE });
    const store = new DeltaBackend({
      inner,
      codec: new Xdelta3Codec({ tempDir: spoolDir, acceptsA: probe.acceptsA }),
      pool: new CodecPool(8),
      spoolDir,
      referenceCache: cache,
      settings: () =>
        deltaTestSettings({
          maxObjectSize: 100 * SIZE,
          codecSlotWaitMs: 0,
          // These tests check folder baselines (`<folder>reference.bin`): the parent rule.
          bucketDeltaspace: () => "parent",
        }),
    });
    await store.createBucket("b");
    await fn({ store, cache, root: `${inner.root}/b` });
    assert.deepEqual([...Deno.readDirSync(spoolDir)], [], "spool directory left empty");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

async function put(store: DeltaBackend, key: string, bytes: Uint8Array<ArrayBuffer>) {
  const staged = await store.stageObject("b", key, new Blob([bytes]).stream());
  return await staged.commit(metaOf(bytes));
}

async function read(env: Env, key: string): Promise<Uint8Array> {
  const found = await env.store.getObject("b", key);
  assert.ok(found);
  return new Uint8Array(await new Response(found.body).arrayBuffer());
}

const exists = (path: string) => Deno.stat(path).then(() => true, () => false);

/** Overwrites the middle of the one cached baseline file in place; answers its sha256. */
async function corruptCached(cache: ReferenceCache): Promise<string> {
  const [sha] = cache.keys();
  assert.ok(sha, "a baseline is cached");
  using file = await Deno.open(`${cache.dir}/${sha}`, { write: true });
  await file.seek(SIZE / 2, Deno.SeekMode.Start);
  await file.write(randomBytes(4096));
  return sha;
}

Deno.test({
  name: "delta cache: a GET re-hashes a cached baseline; a corrupt one is fetched again",
  ignore,
  fn: () =>
    withEnv(async (env) => {
      const v1 = randomBytes(SIZE), v2 = nextVersion(v1);
      await put(env.store, "g/v1.tar", v1);
      await put(env.store, "g/v2.tar", v2); // downloads the baseline into the cache
      const sha = await corruptCached(env.cache);
      // Verified before the decode uses it: evicted, downloaded again, never a 500.
      const got = await env.store.getObject("b", "g/v2.tar");
      assert.equal(got?.info.debug?.referenceCache, "miss");
      assert.deepEqual(new Uint8Array(await new Response(got!.body).arrayBuffer()), v2);
      assert.equal(env.cache.stats().verifyFailures, 1);
      await env.cache.settled();
      assert.deepEqual(env.cache.keys(), [sha], "cached again, from the backend");
      const again = await env.store.getObject("b", "g/v1.tar");
      assert.equal(again?.info.debug?.referenceCache, "hit");
      assert.deepEqual(new Uint8Array(await new Response(again!.body).arrayBuffer()), v1);
      assert.equal(env.cache.stats().verifyFailures, 1, "the new copy is whole");
    }),
});

Deno.test({
  name: "delta cache: a PUT encoded live against a corrupt cached baseline goes passthrough",
  ignore,
  fn: () =>
    withEnv(async (env) => {
      const v1 = randomBytes(SIZE), v2 = nextVersion(v1), v3 = nextVersion(v2);
      await put(env.store, "p/v1.tar", v1);
      await put(env.store, "p/v2.tar", v2);
      await corruptCached(env.cache);
      await put(env.store, "p/v3.tar", v3);
      assert.ok(await exists(`${env.root}/p/v3.tar`), "stored passthrough");
      assert.equal(await exists(`${env.root}/p/v3.tar.delta`), false);
      assert.deepEqual(env.cache.keys(), [], "evicted");
      assert.equal(env.cache.stats().verifyFailures, 1);
      assert.deepEqual(await read(env, "p/v3.tar"), v3);
      // The next PUT downloads the real baseline again and gets its delta.
      await put(env.store, "p/v4.tar", nextVersion(v3));
      assert.ok(await exists(`${env.root}/p/v4.tar.delta`));
    }),
});

Deno.test({
  name:
    "delta cache: a PUT re-encoded from the spool against a corrupt cached file goes passthrough",
  ignore,
  fn: () =>
    withEnv(async (env) => {
      const a1 = randomBytes(SIZE);
      await put(env.store, "s/a1.tar", a1);
      // Staged (and encoded live) against baseline A...
      const target = nextVersion(a1);
      const staged = await env.store.stageObject("b", "s/t.tar", new Blob([target]).stream());
      // ...then A is replaced by B (similar bytes), whose cached file gets corrupted.
      assert.equal(await env.store.deleteObject("b", "s/a1.tar"), true);
      const b1 = nextVersion(a1);
      await put(env.store, "s/b1.tar", b1);
      await put(env.store, "s/b2.tar", nextVersion(b1));
      env.cache.evictSha256(metaOf(a1).sha256);
      await corruptCached(env.cache);
      await staged.commit(metaOf(target));
      assert.ok(await exists(`${env.root}/s/t.tar`), "stored passthrough");
      assert.equal(await exists(`${env.root}/s/t.tar.delta`), false);
      assert.equal(env.cache.stats().verifyFailures, 1, "passthrough for the cache, not the ratio");
      assert.deepEqual(await read(env, "s/t.tar"), target);
    }),
});
