import assert from "node:assert/strict";
import { FilesystemBackend } from "../../storage/fs/filesystem-backend.ts";
import { probeXdelta3, Xdelta3Codec } from "../codec/codec.ts";
import { CodecPool } from "../codec/codec-pool.ts";
import { DeltaBackend, type DeltaMeta } from "../delta-backend.ts";
import { metaFor, randomBytes } from "../../testing/object-fixtures.ts";
import { groupFolder } from "./deltaspace-policy.ts";
import { groupFolderOfName, markerName } from "./group-refs.ts";
import { deltaTestSettings } from "../../testing/delta-fixtures.ts";

const probe = await probeXdelta3();
const ignore = !probe.available;

function nextVersion(base: Uint8Array): Uint8Array<ArrayBuffer> {
  const out = new Uint8Array(base);
  out.set(randomBytes(2048), 4096);
  return out;
}

/** A delta store over a filesystem backend whose `deltaspace` setting the test changes. */
async function withStore(
  fn: (env: {
    store: DeltaBackend;
    inner: FilesystemBackend;
    policy: { value: string | undefined };
    put(key: string, bytes: Uint8Array<ArrayBuffer>): Promise<void>;
    read(key: string): Promise<Uint8Array>;
    names(): Promise<string[]>;
  }) => Promise<void>,
): Promise<void> {
  const dir = await Deno.makeTempDir({ prefix: "svc-delta-groups-" });
  try {
    const inner = await FilesystemBackend.open(`${dir}/data`);
    await Deno.mkdir(`${dir}/spool`);
    const policy = { value: undefined as string | undefined };
    const store = new DeltaBackend({
      inner,
      codec: new Xdelta3Codec({ tempDir: `${dir}/spool`, acceptsA: probe.acceptsA }),
      pool: new CodecPool(8),
      spoolDir: `${dir}/spool`,
      settings: () =>
        deltaTestSettings({ codecSlotWaitMs: 0, bucketDeltaspace: () => policy.value }),
    });
    await store.createBucket("b");
    await fn({
      store,
      inner,
      policy,
      async put(key, bytes) {
        const staged = await store.stageObject("b", key, new Blob([bytes]).stream());
        await staged.commit(metaFor(bytes, { contentType: "application/zip" }));
      },
      async read(key) {
        const found = await store.getObject("b", key);
        assert.ok(found, `${key} readable`);
        return new Uint8Array(await new Response(found.body).arrayBuffer());
      },
      async names() {
        const page = await inner.listObjects("b", { prefix: "", maxKeys: 1000 });
        return page.objects.map((o) => o.key);
      },
    });
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

/** The marker name of the delta `key` now has: one of its own, named by its `markerId`. */
function ownMarker(inner: FilesystemBackend, folder: string) {
  return async (key: string) => {
    const delta = await inner.headObject("b", `${key}.delta`);
    const id = (delta!.meta as DeltaMeta).markerId;
    assert.ok(id, `${key}.delta records its marker id`);
    return markerName(folder, key, id);
  };
}

Deno.test({
  name: "groups: versions in version folders share one .dg baseline, tracked by markers",
  ignore,
  fn: () =>
    withStore(async ({ store, inner, put, read, names }) => {
      const v1 = randomBytes(256 * 1024);
      const v2 = nextVersion(v1);
      await put("releases/1.2.3/app.zip", v1);
      await put("releases/1.2.4/app.zip", v2);
      const folder = groupFolder("releases/*/app.zip");
      const marker = ownMarker(inner, folder);
      const marker4 = await marker("releases/1.2.4/app.zip");
      assert.deepEqual(
        await names(),
        [
          `${folder}reference.bin`,
          await marker("releases/1.2.3/app.zip"),
          marker4,
          "releases/1.2.3/app.zip.delta",
          "releases/1.2.4/app.zip.delta",
        ].sort(),
      );
      const delta = await inner.headObject("b", "releases/1.2.4/app.zip.delta");
      const meta = delta!.meta as DeltaMeta;
      assert.equal(meta.deltaspace, folder);
      assert.equal(meta.deltaGroup, "releases/*/app.zip");
      assert.equal(meta.storageReason, "ratio_met");
      assert.ok(delta!.storedSize < 32 * 1024, `small delta, got ${delta!.storedSize}`);
      assert.deepEqual(await read("releases/1.2.4/app.zip"), v2);
      assert.deepEqual(await read("releases/1.2.3/app.zip"), v1);
      // The first delete keeps the baseline (one marker left), the last removes everything.
      assert.equal(await store.deleteObject("b", "releases/1.2.3/app.zip"), true);
      assert.deepEqual(
        await names(),
        [`${folder}reference.bin`, marker4, "releases/1.2.4/app.zip.delta"].sort(),
      );
      assert.equal(await store.deleteObject("b", "releases/1.2.4/app.zip"), true);
      assert.deepEqual(await names(), []);
    }),
});

Deno.test({
  name: "groups: a policy change orphans nothing; overwrite and delete follow the stored meta",
  ignore,
  fn: () =>
    withStore(async ({ store, inner, policy, put, read, names }) => {
      const v1 = randomBytes(256 * 1024);
      const v2 = nextVersion(v1);
      const v3 = nextVersion(v2);
      policy.value = "parent";
      await put("r/1.0/app.zip", v1);
      await put("r/1.0/lib.zip", v2);
      assert.ok((await names()).includes("r/1.0/reference.bin"));
      policy.value = "auto";
      assert.deepEqual(await read("r/1.0/app.zip"), v1, "old parent delta reads under auto");
      // Overwrite under auto: the new delta joins the group, the parent baseline stays for lib.
      await put("r/1.0/app.zip", v3);
      const folder = groupFolder("r/*/app.zip");
      const appMarker = await ownMarker(inner, folder)("r/1.0/app.zip");
      assert.deepEqual(
        await names(),
        [
          `${folder}reference.bin`,
          appMarker,
          "r/1.0/app.zip.delta",
          "r/1.0/lib.zip.delta",
          "r/1.0/reference.bin",
        ].sort(),
      );
      assert.deepEqual(await read("r/1.0/app.zip"), v3);
      assert.deepEqual(await read("r/1.0/lib.zip"), v2);
      // Deleting lib (a parent delta) under auto removes the parent baseline: app no longer uses it.
      await store.deleteObject("b", "r/1.0/lib.zip");
      assert.deepEqual(
        await names(),
        [`${folder}reference.bin`, appMarker, "r/1.0/app.zip.delta"].sort(),
      );
      // Back to parent: overwriting app moves it to the folder; the group goes.
      policy.value = "parent";
      await put("r/1.0/app.zip", v1);
      assert.deepEqual(await names(), ["r/1.0/app.zip.delta", "r/1.0/reference.bin"]);
      assert.deepEqual(await read("r/1.0/app.zip"), v1);
    }),
});

Deno.test({
  name: "groups: .dg is hidden and reserved; DeleteBucket sweeps leftover baselines and markers",
  ignore,
  fn: () =>
    withStore(async ({ store, inner, put }) => {
      await put("a/1.0/app.zip", randomBytes(64 * 1024));
      const page = await store.listObjects("b", { prefix: "", delimiter: "/", maxKeys: 100 });
      assert.deepEqual(page.commonPrefixes, ["a/"]);
      assert.deepEqual(page.objects, []);
      const flat = await store.listObjects("b", { prefix: "", maxKeys: 1 });
      assert.deepEqual(flat.objects.map((o) => o.key), ["a/1.0/app.zip"]);
      assert.equal(flat.isTruncated, false);
      assert.deepEqual((await store.listObjects("b", { prefix: ".dg/", maxKeys: 9 })).objects, []);
      await assert.rejects(store.stageObject("b", ".dg/x", new Blob(["x"]).stream()), /reserved/);
      assert.equal(await store.headObject("b", `${groupFolder("a/*/app.zip")}reference.bin`), null);
      // A crash between marker and delta: the delta is gone, a marker and the baseline remain.
      await inner.deleteObject("b", "a/1.0/app.zip.delta");
      await assert.rejects(inner.deleteBucket("b"));
      await store.deleteBucket("b");
      assert.equal(await inner.headBucket("b"), null);
    }),
});

Deno.test("groups: marker and folder names", () => {
  const folder = groupFolder("releases/*/app.zip");
  const marker = markerName(folder, "releases/1.2.3/app.zip");
  assert.match(marker, /^\.dg\/[0-9a-f]{32}\/refs\/[0-9a-f]{64}$/);
  assert.equal(marker, markerName(folder, "releases/1.2.3/app.zip"), "deterministic");
  assert.notEqual(marker, markerName(folder, "releases/1.2.4/app.zip"));
  assert.equal(groupFolderOfName(marker), folder);
  assert.equal(groupFolderOfName(`${folder}reference.bin`), folder);
  assert.equal(groupFolderOfName("releases/reference.bin"), null);
  // A later baseline generation is a group folder of its own.
  const g2 = `${folder}g2/`;
  assert.equal(groupFolderOfName(markerName(g2, "releases/1.2.3/app.zip")), g2);
  assert.equal(groupFolderOfName(`${g2}reference.bin`), g2);
  assert.equal(groupFolderOfName(`${folder}g0/reference.bin`), folder, "no generation 0 folder");
});
