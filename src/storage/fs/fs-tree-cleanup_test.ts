import assert from "node:assert/strict";
import { setJsonXattr } from "../../native/xattr.ts";
import { fakeMeta } from "../../testing/object-fixtures.ts";
import { META_XATTR } from "./fs-object-meta.ts";
import { DirectoryListings } from "./listing/fs-sorted-dir.ts";
import {
  removeDirectoryIfEmptySync,
  removeEmptyParentsSync,
  removeTreeWithoutObjects,
} from "./fs-tree-cleanup.ts";

async function withDir(test: (dir: string) => Promise<void>) {
  const dir = await Deno.makeTempDir({ prefix: "svc-tree-cleanup-" });
  try {
    await test(dir);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

const listings = new DirectoryListings();
const exists = (path: string) => Deno.lstat(path).then(() => true, () => false);

Deno.test("removeDirectoryIfEmptySync: removes an empty or vanished directory, keeps a full one", () =>
  withDir(async (dir) => {
    await Deno.mkdir(`${dir}/empty`);
    await Deno.mkdir(`${dir}/full`);
    await Deno.writeTextFile(`${dir}/full/file`, "x");
    assert.equal(removeDirectoryIfEmptySync(listings, `${dir}/empty`), true);
    assert.equal(await exists(`${dir}/empty`), false);
    assert.equal(removeDirectoryIfEmptySync(listings, `${dir}/never-was`), true);
    assert.equal(removeDirectoryIfEmptySync(listings, `${dir}/full`), false);
    assert.equal(await exists(`${dir}/full/file`), true);
  }));

Deno.test("removeEmptyParentsSync: stops at a marker directory and at the bucket", () =>
  withDir(async (bucket) => {
    await Deno.mkdir(`${bucket}/a/b/c`, { recursive: true });
    setJsonXattr(`${bucket}/a`, META_XATTR, fakeMeta(0)); // `a/` is a directory marker
    assert.equal(removeEmptyParentsSync(listings, bucket, ["a", "b", "c"]), `${bucket}/a`);
    assert.equal(await exists(`${bucket}/a/b`), false);
    assert.equal(await exists(`${bucket}/a`), true);

    await Deno.mkdir(`${bucket}/x/y`, { recursive: true });
    assert.equal(removeEmptyParentsSync(listings, bucket, ["x", "y"]), bucket);
    assert.equal(await exists(`${bucket}/x`), false);
    assert.equal(await exists(bucket), true);
  }));

Deno.test("removeTreeWithoutObjects: never deletes an object, files only when asked", () =>
  withDir(async (dir) => {
    await Deno.mkdir(`${dir}/t/sub`, { recursive: true });
    await Deno.writeTextFile(`${dir}/t/sub/stray`, "x");
    assert.equal(removeTreeWithoutObjects(listings, `${dir}/t`, { unlinkFiles: false }), false);
    assert.equal(await exists(`${dir}/t/sub/stray`), true);

    await Deno.writeTextFile(`${dir}/t/object`, "o");
    setJsonXattr(`${dir}/t/object`, META_XATTR, fakeMeta(1));
    assert.equal(removeTreeWithoutObjects(listings, `${dir}/t`, { unlinkFiles: true }), false);
    assert.equal(await exists(`${dir}/t/object`), true);

    await Deno.remove(`${dir}/t/object`);
    assert.equal(removeTreeWithoutObjects(listings, `${dir}/t`, { unlinkFiles: true }), true);
    assert.equal(await exists(`${dir}/t`), false);
    assert.equal(
      removeTreeWithoutObjects(listings, `${dir}/t`, { unlinkFiles: true }),
      true,
      "gone counts",
    );
  }));
