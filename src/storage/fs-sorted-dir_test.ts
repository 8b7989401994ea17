/**
 * The cached directory listing is never stale: any change to the directory, by svc or by hand,
 * even one that restores the old mtime, is seen by the next listing.
 */
import assert from "node:assert/strict";
import { FilesystemBackend } from "./filesystem-backend.ts";
import {
  clearSortedDirectoryCache,
  compareUtf8,
  type SortedDir,
  sortedDirectory,
  sortKeyAt,
} from "./fs-sorted-dir.ts";
import { fakeMeta } from "./object-fixtures.ts";
import { setJsonXattr } from "./xattr.ts";

const COUNT = 1500; // above the caching threshold

async function keysOf(backend: FilesystemBackend, startAfter?: string): Promise<string[]> {
  const page = await backend.listObjects("b", { prefix: "d/", maxKeys: 3000, startAfter });
  return page.objects.map((o) => o.key);
}

/** Waits until the directory's last change is old enough for its listing to be cached. */
const quiet = () => new Promise((resolve) => setTimeout(resolve, 2700));

Deno.test("a cached large directory sees every later change", async () => {
  const root = await Deno.makeTempDir({ prefix: "svc-sorted-dir-" });
  clearSortedDirectoryCache();
  try {
    const backend = await FilesystemBackend.open(root);
    await backend.createBucket("b");
    const dir = `${root}/b/d`;
    await Deno.mkdir(dir);
    const expected: string[] = [];
    for (let i = 0; i < COUNT; i++) {
      const name = `k${String(i).padStart(5, "0")}`;
      Deno.writeFileSync(`${dir}/${name}`, new Uint8Array());
      setJsonXattr(`${dir}/${name}`, "user.svc.meta", fakeMeta(0));
      expected.push(`d/${name}`);
    }
    await quiet();
    assert.deepEqual(await keysOf(backend), expected);
    assert.equal(sortedDirectory(dir), sortedDirectory(dir), "the listing is cached");
    // A write through svc.
    const staged = await backend.stageObject("b", "d/k00000a", new Blob(["x"]).stream());
    await staged.commit(fakeMeta(1));
    assert.deepEqual((await keysOf(backend)).slice(0, 3), ["d/k00000", "d/k00000a", "d/k00001"]);
    await quiet();
    await keysOf(backend); // cached again
    const { mtime } = await Deno.lstat(dir);
    // An object added by hand, with the old mtime put back: the ctime still tells.
    Deno.writeFileSync(`${dir}/k00001a`, new Uint8Array());
    setJsonXattr(`${dir}/k00001a`, "user.svc.meta", fakeMeta(0));
    await Deno.utime(dir, mtime!, mtime!);
    assert.equal((await Deno.lstat(dir)).mtime?.getTime(), mtime?.getTime());
    assert.deepEqual((await keysOf(backend)).slice(2, 4), ["d/k00001", "d/k00001a"]);
    // Pages from the middle start at the right place (binary search over the cached listing).
    assert.deepEqual((await keysOf(backend, "d/k00750")).slice(0, 2), ["d/k00751", "d/k00752"]);
    assert.deepEqual((await keysOf(backend, "d/k00750z")).slice(0, 1), ["d/k00751"]);
    // A directory changed within the last moments is read afresh, never cached.
    await backend.deleteObject("b", "d/k00000a");
    const fresh = sortedDirectory(dir);
    assert.notEqual(sortedDirectory(dir), fresh, "a just-changed directory is not cached");
  } finally {
    clearSortedDirectoryCache();
    await Deno.remove(root, { recursive: true });
  }
});

Deno.test("a cached (packed) listing answers the same entries as a fresh read", async () => {
  const root = await Deno.makeTempDir({ prefix: "svc-sorted-dir-" });
  clearSortedDirectoryCache();
  try {
    const dir = `${root}/d`;
    await Deno.mkdir(dir);
    // Names beyond Latin-1 and astral ones (a two-byte packed text), directories (a DIR and a
    // NESTED entry each) whose names prefix file names, and the reserved entries.
    for (let i = 0; i < COUNT; i++) {
      const name = i % 5 === 0 ? `n${i}-名\u{1F600}` : i % 3 === 0 ? `n${i}` : `n${i}-x`;
      if (i % 3 === 0) Deno.mkdirSync(`${dir}/${name}`);
      else Deno.writeFileSync(`${dir}/${name}`, new Uint8Array());
    }
    Deno.writeFileSync(`${dir}/.svc-marker`, new Uint8Array());
    const entries = (listing: SortedDir) =>
      Array.from({ length: listing.length }, (_, i) => `${listing.kinds[i]}:${listing.nameAt(i)}`);
    const fresh = sortedDirectory(dir);
    assert.equal(fresh.length, COUNT + Math.ceil(COUNT / 3));
    assert.ok(fresh.hasMarkerEntry && !fresh.hasObjectEntry);
    const keys = Array.from({ length: fresh.length }, (_, i) => sortKeyAt(fresh, i));
    assert.deepEqual(keys, [...keys].sort(compareUtf8), "entries in UTF-8 byte order");
    await quiet();
    const cached = sortedDirectory(dir);
    assert.equal(sortedDirectory(dir), cached, "the listing is cached");
    assert.deepEqual(entries(cached), entries(fresh));
    assert.equal(cached.hasMarkerEntry, true);
  } finally {
    clearSortedDirectoryCache();
    await Deno.remove(root, { recursive: true });
  }
});
