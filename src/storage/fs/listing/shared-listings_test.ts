/**
 * Backends open on one data directory share its listing cache: a config reload opens a second
 * backend on the root while requests in flight finish on the first, and svc's own changes
 * through either must patch the cache both list through.
 */
import assert from "node:assert/strict";
import { FilesystemBackend } from "../filesystem-backend.ts";
import { fakeMeta } from "../../../testing/object-fixtures.ts";
import { setJsonXattr } from "../../../native/xattr.ts";

const COUNT = 1500; // above the caching threshold

async function withRoots(test: (root: string, other: string) => Promise<void>) {
  const root = await Deno.makeTempDir({ prefix: "svc-shared-listings-" });
  const other = await Deno.makeTempDir({ prefix: "svc-shared-listings-" });
  try {
    await test(root, other);
  } finally {
    await Deno.remove(root, { recursive: true });
    await Deno.remove(other, { recursive: true });
  }
}

Deno.test("backends open on one root share its listings, other roots have their own", () =>
  withRoots(async (root, other) => {
    const first = await FilesystemBackend.open(root);
    const second = await FilesystemBackend.open(`${root}/.`); // the same directory, resolved
    const elsewhere = await FilesystemBackend.open(other);
    assert.equal(second.listings, first.listings);
    assert.notEqual(elsewhere.listings, first.listings);
  }));

Deno.test("a second open of a root still open must ask for the same listing options", () =>
  withRoots(async (root) => {
    const onDirectoryRead = () => {};
    const first = await FilesystemBackend.open(root, { listing: { onDirectoryRead } });
    const same = await FilesystemBackend.open(root, { listing: { onDirectoryRead } });
    assert.equal(same.listings, first.listings);
    await assert.rejects(FilesystemBackend.open(root), /other listing options/);
    await assert.rejects(
      FilesystemBackend.open(root, { listing: { onDirectoryRead, unverifiedMs: 5 } }),
      /other listing options/,
    );
  }));

Deno.test("writes finishing on the old backend after a reload patch the new one's listing", () =>
  withRoots(async (root) => {
    const reads: string[] = [];
    const listing = { onDirectoryRead: (path: string) => void reads.push(path) };
    const old = await FilesystemBackend.open(root, { listing });
    await old.createBucket("b");
    const dir = `${root}/b/d`;
    await Deno.mkdir(dir);
    for (let i = 0; i < COUNT; i++) {
      Deno.writeFileSync(`${dir}/k${String(i).padStart(5, "0")}`, new Uint8Array());
      setJsonXattr(`${dir}/k${String(i).padStart(5, "0")}`, "user.svc.meta", fakeMeta(0));
    }
    await new Promise((resolve) => setTimeout(resolve, 2700)); // quiet: the listing is cached
    const reloaded = await FilesystemBackend.open(root, { listing });
    const list = async () =>
      (await reloaded.listObjects("b", { prefix: "d/", maxKeys: 3000 })).objects.map((o) => o.key);
    assert.equal((await list()).length, COUNT);
    // Both keep writing (the old one finishing requests in flight); the new one lists.
    for (const [n, backend] of [old, reloaded, old, old, reloaded].entries()) {
      const key = `d/k00000-${n}`;
      const staged = await backend.stageObject("b", key, new Blob(["x"]).stream());
      await staged.commit(fakeMeta(1));
      assert.ok((await list()).includes(key), `${key} listed right after its PUT`);
    }
    assert.deepEqual(reads.filter((path) => path === dir).length, 1, "read whole once, patched");
  }));
