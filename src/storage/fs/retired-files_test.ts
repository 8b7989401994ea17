/**
 * Large replaced and deleted files are unlinked after the request, from a second name in the temp
 * directory; nothing of them is left once that ends, or after a crash and a restart.
 */
import assert from "node:assert/strict";
import { FilesystemBackend } from "./filesystem-backend.ts";
import { fakeMeta } from "../../testing/object-fixtures.ts";
import { RETIRE_MIN_BYTES, RetiredFiles } from "./retired-files.ts";

const LARGE = RETIRE_MIN_BYTES + 1;

async function put(backend: FilesystemBackend, key: string, size: number) {
  const body = new Uint8Array(size).fill(size % 251);
  const staged = await backend.stageObject("b", key, new Blob([body]).stream());
  return await staged.commit(fakeMeta(size));
}

async function sizeOf(backend: FilesystemBackend, key: string): Promise<number | null> {
  const got = await backend.getObject("b", key);
  if (!got) return null;
  return (await new Response(got.body).arrayBuffer()).byteLength;
}

const tempNames = (backend: FilesystemBackend) =>
  Array.fromAsync(Deno.readDir(`${backend.root}/.svc/tmp`), (entry) => entry.name);

async function withBackend(test: (backend: FilesystemBackend) => Promise<void>) {
  const dir = await Deno.makeTempDir({ prefix: "svc-retired-" });
  try {
    const backend = await FilesystemBackend.open(`${dir}/data`);
    await backend.createBucket("b");
    await test(backend);
    await backend.retired.settled();
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

Deno.test("a large object replaced or deleted is unlinked after, from the temp directory", () =>
  withBackend(async (backend) => {
    await put(backend, "k", LARGE);
    const path = `${backend.root}/b/k`;
    const old = await Deno.stat(path);
    await put(backend, "k", 10);
    assert.equal(backend.retired.released, 1, "the replaced file went to the background unlink");
    assert.equal(await sizeOf(backend, "k"), 10, "the new object is in place at once");
    // The old inode lived on under a temp name until the background unlink.
    await backend.retired.settled();
    assert.deepEqual(await tempNames(backend), []);
    assert.notEqual((await Deno.stat(path)).ino, old.ino);

    await put(backend, "big", LARGE);
    assert.equal(await backend.deleteObject("b", "big"), true);
    assert.equal(backend.retired.released, 2);
    assert.equal(await backend.headObject("b", "big"), null, "gone once the delete answered");
    assert.equal(await backend.deleteObject("b", "big"), false);
    await backend.retired.settled();
    assert.deepEqual(await tempNames(backend), []);
    // Small files are unlinked inline, nothing passes through the temp directory.
    await put(backend, "small", 10);
    await put(backend, "small", 11);
    assert.equal(await backend.deleteObject("b", "small"), true);
    assert.equal(backend.retired.released, 2);
    assert.deepEqual(await tempNames(backend), []);
  }));

Deno.test("a retired name a crash left behind goes with the next start's sweep", async () => {
  const dir = await Deno.makeTempDir({ prefix: "svc-retired-" });
  try {
    const first = await FilesystemBackend.open(`${dir}/data`);
    await first.createBucket("b");
    await put(first, "k", 1000);
    // What a kill between the link and the unlink leaves: a second name of the old file (a link
    // keeps its mtime, which predates the next process).
    await Deno.utime(`${first.root}/b/k`, new Date(2020, 0), new Date(2020, 0));
    await Deno.link(`${first.root}/b/k`, `${first.root}/.svc/tmp/left.retired`);
    const second = await FilesystemBackend.open(`${dir}/data`);
    assert.deepEqual(await tempNames(second), []);
    assert.equal(await sizeOf(second, "k"), 1000, "the object itself is untouched");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("a file on another filesystem than the temp directory is left to the inline unlink", async () => {
  const shm = await Deno.makeTempDir({ dir: "/dev/shm", prefix: "svc-retired-" }).catch(() => null);
  if (shm === null) return; // no tmpfs here to stand for another filesystem
  const dir = await Deno.makeTempDir({ prefix: "svc-retired-" });
  try {
    const retired = new RetiredFiles(shm);
    await Deno.writeTextFile(`${dir}/f`, "x");
    const sameDevice = (await Deno.stat(dir)).dev === (await Deno.stat(shm)).dev;
    if (sameDevice) return;
    assert.equal(await retired.hold(`${dir}/f`), null);
    assert.equal(await retired.take(`${dir}/f`), false);
    assert.equal(await Deno.readTextFile(`${dir}/f`), "x", "left where it was");
    assert.equal(await retired.hold(`${dir}/absent`), null);
  } finally {
    await Deno.remove(dir, { recursive: true });
    await Deno.remove(shm, { recursive: true });
  }
});
