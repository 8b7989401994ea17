/**
 * The cached directory listing is never stale: any change to the directory, by svc or by hand,
 * even one that restores the old mtime, is seen by the next listing.
 */
import assert from "node:assert/strict";
import { FilesystemBackend } from "../filesystem-backend.ts";
import { DirectoryListings, type ListingOptions, SortedDir, sortKeyAt } from "./fs-sorted-dir.ts";
import { fakeMeta } from "../../../testing/object-fixtures.ts";
import { setJsonXattr } from "../../../native/xattr.ts";
import { compareUtf8 } from "../../../lib/key-order.ts";

const COUNT = 1500; // above the caching threshold

async function keysOf(backend: FilesystemBackend, startAfter?: string): Promise<string[]> {
  const page = await backend.listObjects("b", { prefix: "d/", maxKeys: 3000, startAfter });
  return page.objects.map((o) => o.key);
}

/** Waits until the directory's last change is old enough for its listing to be cached. */
const quiet = () => new Promise((resolve) => setTimeout(resolve, 2700));

/**
 * A backend (opened with `listing`) with bucket `b` whose directory `d` holds COUNT objects
 * `k00000…` placed by hand, quiet and listed once (cached) unless `listed` is false; `test` gets
 * the backend, the directory and the keys.
 */
async function withLargeDirectory(
  test: (backend: FilesystemBackend, dir: string, keys: string[]) => Promise<void>,
  { listing, listed = true }: { listing?: ListingOptions; listed?: boolean } = {},
) {
  const root = await Deno.makeTempDir({ prefix: "svc-sorted-dir-" });
  try {
    const backend = await FilesystemBackend.open(root, { listing });
    await backend.createBucket("b");
    const dir = `${root}/b/d`;
    await Deno.mkdir(dir);
    const keys: string[] = [];
    for (let i = 0; i < COUNT; i++) {
      const name = `k${String(i).padStart(5, "0")}`;
      Deno.writeFileSync(`${dir}/${name}`, new Uint8Array());
      setJsonXattr(`${dir}/${name}`, "user.svc.meta", fakeMeta(0));
      keys.push(`d/${name}`);
    }
    await quiet();
    if (listed) assert.deepEqual(await keysOf(backend), keys);
    await test(backend, dir, keys);
  } finally {
    await Deno.remove(root, { recursive: true });
  }
}

Deno.test("a cached large directory sees every later change", () =>
  withLargeDirectory(async (backend, dir) => {
    const { listings } = backend;
    assert.equal(listings.sorted(dir), listings.sorted(dir), "the listing is cached");
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
    // A directory another program changed within the last moments is read afresh, never cached
    // (one svc writes to is kept provisionally: see the tests below).
    Deno.removeSync(`${dir}/k00000a`);
    const fresh = listings.sorted(dir);
    assert.notEqual(listings.sorted(dir), fresh, "a just-changed directory is not cached");
  }));

Deno.test("a cached (packed) listing answers the same entries as a fresh read", async () => {
  const root = await Deno.makeTempDir({ prefix: "svc-sorted-dir-" });
  try {
    const listings = new DirectoryListings();
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
    const fresh = listings.sorted(dir);
    assert.equal(fresh.length, COUNT + Math.ceil(COUNT / 3));
    assert.ok(fresh.hasMarkerEntry && !fresh.hasObjectEntry);
    const keys = Array.from({ length: fresh.length }, (_, i) => sortKeyAt(fresh, i));
    assert.deepEqual(keys, [...keys].sort(compareUtf8), "entries in UTF-8 byte order");
    await quiet();
    const cached = listings.sorted(dir);
    assert.equal(listings.sorted(dir), cached, "the listing is cached");
    assert.deepEqual(entries(cached), entries(fresh));
    assert.equal(cached.hasMarkerEntry, true);
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});

Deno.test("onDirectoryRead is told every directory read whole, never a cached listing", async () => {
  const root = await Deno.makeTempDir({ prefix: "svc-sorted-dir-" });
  try {
    const reads: string[] = [];
    const listings = new DirectoryListings({ onDirectoryRead: (path) => reads.push(path) });
    const [small, large, absent] = [`${root}/small`, `${root}/large`, `${root}/absent`];
    await Deno.mkdir(small);
    await Deno.mkdir(large);
    for (let i = 0; i < 3; i++) Deno.writeFileSync(`${small}/f${i}`, new Uint8Array());
    for (let i = 0; i < COUNT; i++) Deno.writeFileSync(`${large}/f${i}`, new Uint8Array());
    await quiet();
    for (const path of [small, small, large, large, absent]) listings.sorted(path);
    assert.deepEqual(reads, [small, small, large, absent], "small ones uncached, large cached");
    // Another cache (another root) reads on its own, and tells no one without a hook.
    assert.equal(new DirectoryListings().sorted(large).length, COUNT);
    assert.deepEqual(reads, [small, small, large, absent]);
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});

Deno.test("svc's own writes keep a large directory's listing cached, every new key in its place", () => {
  const reads: string[] = [];
  const onDirectoryRead = (path: string) => void reads.push(path);
  return withLargeDirectory(async (backend, dir, expected) => {
    reads.length = 0; // the reads from here on
    // Ingestion: new files, a new directory, a file turned into a directory (nesting), a marker,
    // an overwrite and deletes, with listings in between.
    const writes = ["d/k00000a", "d/k01499z", "d/new/1", "d/k00010/x", "d/m/", "d/k00002", "d/é"];
    for (const key of writes) {
      const staged = await backend.stageObject("b", key, new Blob([key]).stream());
      await staged.commit(fakeMeta(key.length));
      await keysOf(backend);
    }
    await backend.deleteObject("b", "d/k00003");
    expected.push("d/k00000a", "d/k01499z", "d/new/1", "d/k00010/x", "d/m/", "d/é");
    const shown = expected.filter((key) => key !== "d/k00003").sort(compareUtf8);
    assert.deepEqual(await keysOf(backend), shown);
    assert.deepEqual((await keysOf(backend, "d/k00009")).slice(0, 3), [
      "d/k00010",
      "d/k00010/x",
      "d/k00011",
    ]);
    assert.ok(!reads.includes(dir), `the directory was read again: ${reads.join(", ")}`);
    // Once quiet, the next listing reads the directory whole once (a change by another program
    // made meanwhile is seen then), and it is cached again.
    await quiet();
    assert.deepEqual(await keysOf(backend), shown);
    assert.equal(reads.filter((path) => path === dir).length, 1);
    await keysOf(backend);
    assert.equal(reads.filter((path) => path === dir).length, 1);
  }, { listing: { onDirectoryRead } });
});

Deno.test("another program's change while svc writes is seen once the directory is quiet", () =>
  withLargeDirectory(async (backend, dir) => {
    const staged = await backend.stageObject("b", "d/a-by-svc", new Blob(["x"]).stream());
    await staged.commit(fakeMeta(1));
    Deno.writeFileSync(`${dir}/a-by-hand`, new Uint8Array());
    setJsonXattr(`${dir}/a-by-hand`, "user.svc.meta", fakeMeta(0));
    assert.ok((await keysOf(backend)).includes("d/a-by-svc"));
    // While svc's own change is fresh the hand-made file may stay unseen: at most until the
    // directory is quiet (or after 30 s of svc's changes), when the listing is read whole.
    await quiet();
    assert.deepEqual((await keysOf(backend)).slice(0, 2), ["d/a-by-hand", "d/a-by-svc"]);
  }));

Deno.test("keys merged into a packed listing read as a fresh listing of them all", () => {
  const next = (() => {
    let seed = 99;
    return () => (seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648;
  })();
  const alphabet = ["a", "b", "-", ".", "0", "é", "名", "\u{1F600}", "\uE000", "z"];
  const word = () =>
    Array.from(
      { length: 1 + Math.floor(next() * 4) },
      () => alphabet[Math.floor(next() * alphabet.length)],
    ).join("");
  for (let round = 0; round < 40; round++) {
    const names = new Set<string>();
    while (names.size < 60) names.add(word());
    const keys = [...names].flatMap((name) => next() < 0.3 ? [`${name}/`, `${name}\0`] : [name]);
    const sorted = [...keys].sort(compareUtf8);
    const base = sorted.filter(() => next() < 0.6);
    const added = sorted.filter((key) => !base.includes(key));
    const merged = SortedDir.fromSortKeys(base, false, true).withKeys(added);
    const fresh = SortedDir.fromSortKeys(sorted, false, true);
    const entries = (listing: SortedDir) =>
      Array.from(
        { length: listing.length },
        (_, i) => `${listing.kinds[i]}:${listing.nameAt(i)}:${listing.sortKeyAt(i)}`,
      );
    assert.deepEqual(entries(merged), entries(fresh), `round ${round}`);
    assert.ok(merged.hasMarkerEntry && sorted.every((key) => merged.hasKey(key)));
    assert.ok(!merged.hasKey("absent-name"));
  }
});

Deno.test("under steady writes a listing is read whole at most once per unverified limit", () => {
  const reads: string[] = [];
  const onDirectoryRead = (path: string) => void reads.push(path);
  // As after a restart while clients keep writing: no cached listing (the directory was never
  // listed), svc writing.
  return withLargeDirectory(async (backend, dir) => {
    let pages = 0;
    const until = Date.now() + 1500;
    for (let n = 0; Date.now() < until; n++) {
      const key = `d/new-${String(n).padStart(4, "0")}`;
      const staged = await backend.stageObject("b", key, new Blob(["x"]).stream());
      await staged.commit(fakeMeta(1));
      const keys = await keysOf(backend);
      assert.ok(keys.includes(key), `${key} listed right after its PUT`);
      pages++;
    }
    const wholeReads = reads.filter((path) => path === dir).length;
    assert.ok(pages >= 10, `only ${pages} pages`);
    // Once at the start, then once per 300 ms at most, never once per page.
    assert.ok(wholeReads <= 1 + 1500 / 300 + 1, `${wholeReads} reads for ${pages} pages`);
  }, { listing: { onDirectoryRead, unverifiedMs: 300 }, listed: false });
});
