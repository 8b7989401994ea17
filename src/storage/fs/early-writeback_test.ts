import assert from "node:assert/strict";
import { EarlyWriteback } from "./early-writeback.ts";

Deno.test("early writeback: syncs while the file grows, one at a time, and settles", async () => {
  const dir = await Deno.makeTempDir();
  const path = `${dir}/f`;
  const file = await Deno.open(path, { write: true, createNew: true });
  const writeback = new EarlyWriteback(path, 64 * 1024);
  const chunk = crypto.getRandomValues(new Uint8Array(32 * 1024));
  for (let i = 0; i < 16; i++) {
    await file.write(chunk);
    writeback.wrote(chunk.byteLength);
  }
  await writeback.settle();
  // 512 KiB written, a sync every 64 KiB at most (fewer when one was still running).
  assert.ok(writeback.syncs >= 1 && writeback.syncs <= 8, `syncs: ${writeback.syncs}`);
  const syncs = writeback.syncs;
  writeback.wrote(1 << 20); // after settle: no new sync
  await writeback.settle();
  assert.equal(writeback.syncs, syncs);
  file.close();
  assert.equal((await Deno.stat(path)).size, 16 * chunk.byteLength);
  await Deno.remove(dir, { recursive: true });
});

Deno.test("early writeback: below the threshold nothing is opened or synced", async () => {
  const writeback = new EarlyWriteback("/nonexistent/never-opened", 1 << 20);
  writeback.wrote(1000);
  await writeback.settle();
  assert.equal(writeback.syncs, 0);
});

Deno.test("early writeback: a failed early sync fails the settle", async () => {
  // The file cannot be opened for its sync: the upload must not be acknowledged.
  const writeback = new EarlyWriteback("/nonexistent/dir/file", 10);
  writeback.wrote(100);
  await assert.rejects(writeback.settle(), Deno.errors.NotFound);
});
