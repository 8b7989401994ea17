/**
 * Two bucket names routed to one real bucket (`alias`) share their deltaspaces: concurrent writes
 * through both names create one baseline and every version reads back right through either name.
 */
import assert from "node:assert/strict";
import { BucketRouter } from "../storage/bucket-router.ts";
import { FilesystemBackend } from "../storage/fs/filesystem-backend.ts";
import { metaFor, randomBytes } from "../testing/object-fixtures.ts";
import { probeXdelta3, Xdelta3Codec } from "./codec/codec.ts";
import { CodecPool } from "./codec/codec-pool.ts";
import { DeltaBackend } from "./delta-backend.ts";
import { ReferenceCache } from "./cache/reference-cache.ts";
import { deltaTestSettings } from "../testing/delta-fixtures.ts";

const probe = await probeXdelta3();
const SIZE = 256 * 1024;

const metaOf = (bytes: Uint8Array) => metaFor(bytes, { contentType: "application/zip" });

Deno.test({
  name: "delta store: two aliases of one bucket share one baseline per deltaspace",
  ignore: !probe.available,
  fn: async () => {
    const dir = await Deno.makeTempDir({ prefix: "svc-delta-alias-" });
    try {
      const fs = await FilesystemBackend.open(`${dir}/data`);
      await fs.createBucket("real");
      const router = new BucketRouter(
        [{ name: "only", backend: fs, available: () => true }],
        "only",
        () => ({
          policies: { one: { alias: "real" }, two: { alias: "real" } },
          listTimeoutMs: 1000,
          listCooldownMs: 1000,
          listFreshMs: 0,
        }),
      );
      await Deno.mkdir(`${dir}/spool`);
      await Deno.mkdir(`${dir}/baselines`);
      const store = new DeltaBackend({
        inner: router,
        bucketIdentity: (bucket) => router.identityOf(bucket),
        codec: new Xdelta3Codec({ tempDir: `${dir}/spool`, acceptsA: probe.acceptsA }),
        pool: new CodecPool(32),
        spoolDir: `${dir}/spool`,
        referenceCache: new ReferenceCache({ dir: `${dir}/baselines`, maxBytes: 64 * SIZE }),
        settings: () =>
          deltaTestSettings({
            maxDeltaRatio: 0.9,
            maxObjectSize: 100 * SIZE,
            codecSlotWaitMs: 0,
            // These tests check folder baselines (`<folder>reference.bin`): the parent rule.
            bucketDeltaspace: () => "parent",
          }),
      });
      assert.equal(router.identityOf("one"), router.identityOf("two"));
      const base = randomBytes(SIZE);
      const versions = Array.from({ length: 12 }, (_, i) => {
        const v = base.slice();
        v.set(randomBytes(512), 1024 * (i + 1));
        return v;
      });
      await Promise.all(versions.map(async (bytes, i) => {
        const bucket = i % 2 === 0 ? "one" : "two";
        const staged = await store.stageObject(bucket, `app/v${i}.zip`, new Blob([bytes]).stream());
        await staged.commit(metaOf(bytes));
      }));
      const names = [...Deno.readDirSync(`${fs.root}/real/app`)].map((e) => e.name).sort();
      assert.equal(names.filter((n) => n === "reference.bin").length, 1);
      for (const [i, bytes] of versions.entries()) {
        for (const bucket of ["one", "two"]) {
          const found = await store.getObject(bucket, `app/v${i}.zip`);
          const read = new Uint8Array(await new Response(found!.body).arrayBuffer());
          assert.deepEqual(read, bytes, `${bucket} v${i}`);
        }
      }
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
});
