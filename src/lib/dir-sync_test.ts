import assert from "node:assert/strict";
import { mock } from "node:test";
import { syncDirectory } from "./dir-sync.ts";

/** Counts directory fsyncs by watching FsFile.prototype.sync on directories opened for read. */
function countSyncs() {
  const started: number[] = [];
  const original = Deno.FsFile.prototype.sync;
  const spy = mock.method(Deno.FsFile.prototype, "sync", function (this: Deno.FsFile) {
    started.push(performance.now());
    return original.call(this);
  });
  return { started, restore: () => spy.mock.restore() };
}

Deno.test("dir sync: concurrent callers share fsyncs, each served by one that began after it", async () => {
  const dir = await Deno.makeTempDir();
  const syncs = countSyncs();
  try {
    const calls = Array.from({ length: 50 }, () => {
      const asked = performance.now();
      return syncDirectory(dir).then(() => asked);
    });
    const asked = await Promise.all(calls);
    // The first call starts a sync at once; the other 49 arrive while it runs and share one more.
    assert.ok(syncs.started.length <= 2, `${syncs.started.length} fsyncs for 50 callers`);
    assert.ok(syncs.started.length >= 1);
    // Every caller asked before the last sync began (that sync is the one that served it).
    const last = syncs.started[syncs.started.length - 1];
    for (const time of asked) assert.ok(time <= last);
    // A later caller gets a sync of its own.
    const before = syncs.started.length;
    await syncDirectory(dir);
    assert.equal(syncs.started.length, before + 1);
  } finally {
    syncs.restore();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("dir sync: a caller arriving during a sync waits for the next one", async () => {
  const dir = await Deno.makeTempDir();
  const syncs = countSyncs();
  try {
    const first = syncDirectory(dir);
    // The first caller's batch was taken when its sync began; a caller after that point is not
    // in it, whatever the disk is doing.
    const second = syncDirectory(dir);
    await Promise.all([first, second]);
    assert.equal(syncs.started.length, 2, "the second caller needs a sync that began after it");
  } finally {
    syncs.restore();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("dir sync: a directory that is gone needs nothing", async () => {
  await syncDirectory("/nonexistent-svc-dir-sync-test/x");
  const file = await Deno.makeTempFile();
  try {
    // A file where a directory path is expected: ENOTDIR is "gone", not an error.
    await syncDirectory(`${file}/below`);
  } finally {
    await Deno.remove(file);
  }
});
