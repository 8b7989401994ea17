/**
 * One writer per baseline across instances (baseline-guard.ts), with two delta stores over one
 * filesystem backend standing for two svc instances (each has its own deltaspace locks and
 * caches; the backend's conditional commits are all they share).
 */
import assert from "node:assert/strict";
import type { Backend, ObjectInfo } from "../../storage/backend.ts";
import { FilesystemBackend } from "../../storage/fs/filesystem-backend.ts";
import { metaFor, randomBytes } from "../../testing/object-fixtures.ts";
import { probeXdelta3, Xdelta3Codec } from "../codec/codec.ts";
import { CodecPool } from "../codec/codec-pool.ts";
import { DeltaBackend, type DeltaMeta } from "../delta-backend.ts";
import type { DeltaContext } from "../delta-context.ts";
import { RETIRE_STALE_MS, retireBaseline, retiringNameFor } from "./baseline-guard.ts";
import { deltaTestSettings } from "../../testing/delta-fixtures.ts";

const probe = await probeXdelta3();
const ignore = !probe.available;

const SIZE = 256 * 1024;

function nextVersion(base: Uint8Array): Uint8Array<ArrayBuffer> {
  const out = new Uint8Array(base);
  out.set(randomBytes(512), 1000);
  return out;
}

async function put(store: Backend, key: string, bytes: Uint8Array<ArrayBuffer>) {
  const staged = await store.stageObject("b", key, new Blob([bytes]).stream());
  await staged.commit(metaFor(bytes, { contentType: "application/x-tar" })).catch(async (err) => {
    await staged.abort();
    throw err;
  });
}

async function read(store: Backend, key: string): Promise<Uint8Array> {
  const found = await store.getObject("b", key);
  assert.ok(found, `${key} readable`);
  return new Uint8Array(await new Response(found.body).arrayBuffer());
}

async function putFile(inner: Backend, name: string, lastModified = Date.now()) {
  const body = new TextEncoder().encode("claim");
  const staged = await inner.stageObject("b", name, new Blob([body]).stream());
  await staged.commit(metaFor(body, { lastModified }));
}

/** `inner` with hooks on HEAD and stage, for one "instance". */
function hooked(
  inner: Backend,
  hooks: {
    head?: (key: string, real: () => Promise<ObjectInfo | null>) => Promise<ObjectInfo | null>;
    staging?: (key: string) => Promise<void>;
  },
): Backend {
  return new Proxy(inner, {
    get(target, prop, receiver) {
      if (prop === "headObject" && hooks.head) {
        return (bucket: string, key: string) =>
          hooks.head!(key, () => target.headObject(bucket, key));
      }
      if (prop === "stageObject" && hooks.staging) {
        return async (bucket: string, key: string, ...rest: [ReadableStream<Uint8Array>]) => {
          await hooks.staging!(key);
          return target.stageObject(bucket, key, ...rest);
        };
      }
      const value = Reflect.get(target, prop, receiver);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
}

async function withInstances(
  fn: (env: {
    inner: FilesystemBackend;
    instance: (inner: Backend) => DeltaBackend;
  }) => Promise<void>,
) {
  const dir = await Deno.makeTempDir({ prefix: "svc-fleet-guard-" });
  try {
    const inner = await FilesystemBackend.open(`${dir}/data`);
    await inner.createBucket("b");
    const spoolDir = `${dir}/spool`;
    await Deno.mkdir(spoolDir);
    const pool = new CodecPool(8);
    const codec = new Xdelta3Codec({ tempDir: spoolDir, acceptsA: probe.acceptsA });
    const settings = () =>
      deltaTestSettings({ maxObjectSize: 100 * 1024 * 1024, bucketDeltaspace: () => "parent" });
    await fn({
      inner,
      instance: (other) => new DeltaBackend({ inner: other, codec, pool, spoolDir, settings }),
    });
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

Deno.test({
  name: "fleet guard: the loser of a baseline race encodes against the winner's baseline",
  ignore,
  fn: () =>
    withInstances(async ({ inner, instance }) => {
      const winner = instance(inner);
      // The loser read "no baseline" just before the winner created it.
      let stale = true;
      const loser = instance(hooked(inner, {
        head: (key, real) => {
          if (key === "builds/reference.bin" && stale) {
            stale = false;
            return Promise.resolve(null);
          }
          return real();
        },
      }));
      const v1 = randomBytes(SIZE);
      const v2 = nextVersion(v1);
      await put(winner, "builds/app-1.tar", v1);
      const baseline = await inner.headObject("b", "builds/reference.bin");
      assert.ok(baseline);
      await put(loser, "builds/app-2.tar", v2);
      assert.equal(stale, false, "the loser saw no baseline");
      const after = await inner.headObject("b", "builds/reference.bin");
      assert.equal(after?.version, baseline.version, "the winner's baseline stays");
      const delta = await inner.headObject("b", "builds/app-2.tar.delta");
      assert.ok(delta, "the loser stored a delta");
      assert.equal((delta.meta as DeltaMeta).referenceSha256, baseline.meta.sha256);
      assert.ok(delta.storedSize < SIZE / 4, `delta of ${delta.storedSize} bytes`);
      for (const store of [winner, loser]) {
        assert.deepEqual(await read(store, "builds/app-1.tar"), v1);
        assert.deepEqual(await read(store, "builds/app-2.tar"), v2);
      }
    }),
});

Deno.test({
  name: "fleet guard: a delta whose baseline is being retired elsewhere goes passthrough",
  ignore,
  fn: () =>
    withInstances(async ({ inner, instance }) => {
      const first = instance(inner);
      const v1 = randomBytes(SIZE);
      await put(first, "builds/app-1.tar", v1);
      // Another instance claims the baseline's retirement while this delta is being stored.
      const second = instance(hooked(inner, {
        staging: async (key) => {
          if (key === "builds/app-2.tar.delta") {
            await putFile(inner, retiringNameFor("builds/"));
          }
        },
      }));
      const v2 = nextVersion(v1);
      await put(second, "builds/app-2.tar", v2);
      assert.equal(await inner.headObject("b", "builds/app-2.tar.delta"), null);
      const plain = await inner.headObject("b", "builds/app-2.tar");
      assert.equal(plain?.meta.storage, "passthrough");
      assert.equal((plain?.meta as DeltaMeta).storageReason, "baseline_unusable");
      assert.deepEqual(await read(first, "builds/app-2.tar"), v2);
      // A claim left by a crashed remover (stale) is ignored.
      await inner.deleteObject("b", retiringNameFor("builds/"));
      await putFile(inner, retiringNameFor("builds/"), Date.now() - RETIRE_STALE_MS - 1000);
      const v3 = nextVersion(v2);
      await put(second, "builds/app-3.tar", v3);
      assert.ok(await inner.headObject("b", "builds/app-3.tar.delta"));
      assert.deepEqual(await read(first, "builds/app-3.tar"), v3);
    }),
});

/** The context retireBaseline needs: the backend and a cache to evict from. */
function contextOver(inner: Backend): DeltaContext {
  return { inner, referenceCache: { evict() {} } } as unknown as DeltaContext;
}

Deno.test("fleet guard: a remover keeps a baseline a writer started to use after its claim", async () => {
  const dir = await Deno.makeTempDir({ prefix: "svc-fleet-retire-" });
  try {
    const inner = await FilesystemBackend.open(dir);
    await inner.createBucket("b");
    const ctx = contextOver(inner);
    await putFile(inner, "f/reference.bin");
    const claim = retiringNameFor("f/");
    // Unused at the first check, used at the second (a marker landed meanwhile): kept.
    const answers = [false, true];
    let seenClaim = false;
    const kept = await retireBaseline(ctx, "b", "f/", async () => {
      if (answers.length === 1) seenClaim = (await inner.headObject("b", claim)) !== null;
      return answers.shift()!;
    });
    assert.equal(kept, false);
    assert.ok(seenClaim, "the second check runs under the claim");
    assert.ok(await inner.headObject("b", "f/reference.bin"));
    assert.equal(await inner.headObject("b", claim), null, "the claim is withdrawn");
    // Another remover's fresh claim: this one backs off.
    await putFile(inner, claim);
    assert.equal(await retireBaseline(ctx, "b", "f/", () => Promise.resolve(false)), false);
    assert.ok(await inner.headObject("b", "f/reference.bin"));
    // A stale claim is taken over; unused at both checks: removed, claim too.
    await inner.deleteObject("b", claim);
    await putFile(inner, claim, Date.now() - RETIRE_STALE_MS - 1000);
    assert.equal(await retireBaseline(ctx, "b", "f/", () => Promise.resolve(false)), true);
    assert.equal(await inner.headObject("b", "f/reference.bin"), null);
    assert.equal(await inner.headObject("b", claim), null);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
