import assert from "node:assert/strict";
import { SvcError } from "../../lib/errors.ts";
import { FilesystemBackend } from "../../storage/fs/filesystem-backend.ts";
import { metaFor } from "../../testing/object-fixtures.ts";
import { InternalKeysGuard } from "./internal-keys-guard.ts";

async function put(backend: FilesystemBackend, key: string, text: string) {
  const bytes = new TextEncoder().encode(text);
  const staged = await backend.stageObject("b", key, new Blob([bytes]).stream());
  await staged.commit(metaFor(bytes));
}

const code = (name: string) => (err: unknown) => err instanceof SvcError && err.code === name;

Deno.test("internal keys guard: multipart state under .svc/multipart/ is out of clients' reach", async () => {
  const dir = await Deno.makeTempDir({ prefix: "svc-guard-" });
  try {
    const inner = await FilesystemBackend.open(dir);
    await inner.createBucket("b");
    const purged: string[] = [];
    const guard = new InternalKeysGuard(inner, async (bucket) => {
      purged.push(bucket);
      const page = await inner.listObjects(bucket, { prefix: ".svc/multipart/", maxKeys: 100 });
      for (const info of page.objects) await inner.deleteObject(bucket, info.key);
    });
    await put(inner, ".svc/multipart/u/upload.json", "{}");
    await put(inner, ".svc/multipart/u/p00001.x", "part");

    assert.equal(await guard.headObject("b", ".svc/multipart/u/upload.json"), null);
    assert.equal(await guard.getObject("b", ".svc/multipart/u/p00001.x"), null);
    assert.equal(await guard.deleteObject("b", ".svc/multipart/u/p00001.x"), false);
    await assert.rejects(
      () => guard.stageObject("b", ".svc/multipart/u/x", new Blob(["x"]).stream()),
      code("InvalidObjectName"),
    );
    await assert.rejects(
      () => guard.headObject("missing", ".svc/multipart/u"),
      code("NoSuchBucket"),
    );

    // Listings: neither the keys nor a `.svc/` holding only them; other `.svc/` keys stay visible.
    const flat = await guard.listObjects("b", { prefix: "", maxKeys: 100 });
    assert.deepEqual(flat.objects, []);
    const root = await guard.listObjects("b", { prefix: "", delimiter: "/", maxKeys: 100 });
    assert.deepEqual(root.commonPrefixes, []);
    const inside = await guard.listObjects("b", { prefix: ".svc/multipart/", maxKeys: 100 });
    assert.deepEqual(inside.objects, []);
    await put(inner, ".svc/config.db", "db");
    const shown = await guard.listObjects("b", { prefix: "", delimiter: "/", maxKeys: 100 });
    assert.deepEqual(shown.commonPrefixes, [".svc/"]);
    const all = await guard.listObjects("b", { prefix: "", maxKeys: 100 });
    assert.deepEqual(all.objects.map((o) => o.key), [".svc/config.db"]);

    // DeleteBucket: refused while a client object remains, then the state goes with the bucket.
    await assert.rejects(() => guard.deleteBucket("b"), code("BucketNotEmpty"));
    assert.deepEqual(purged, []);
    await inner.deleteObject("b", ".svc/config.db");
    await guard.deleteBucket("b");
    assert.deepEqual(purged, ["b"]);
    assert.equal(await inner.headBucket("b"), null);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
