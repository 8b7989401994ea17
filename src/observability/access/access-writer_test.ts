import assert from "node:assert/strict";
import { accessLogTarget, FLUSH_BYTES, openAccessLog } from "./access-writer.ts";

Deno.test("accessLogTarget: off by default, stderr, or a path", () => {
  assert.deepEqual(accessLogTarget(undefined), null);
  assert.deepEqual(accessLogTarget(""), null);
  assert.deepEqual(accessLogTarget("OFF"), null);
  assert.deepEqual(accessLogTarget("stderr"), "stderr");
  assert.deepEqual(accessLogTarget(" /var/log/svc.log "), "/var/log/svc.log");
});

Deno.test("the writer appends lines in order, flushing on its own within the interval", async () => {
  const dir = await Deno.makeTempDir();
  const path = `${dir}/access.log`;
  await Deno.writeTextFile(path, "earlier\n");
  const writer = await openAccessLog(path);
  writer.write("one");
  writer.write("two");
  // Queued, not written synchronously by write().
  assert.deepEqual(await Deno.readTextFile(path), "earlier\n");
  await new Promise((resolve) => setTimeout(resolve, 300));
  assert.deepEqual(await Deno.readTextFile(path), "earlier\none\ntwo\n");
  await writer.close();
  await Deno.remove(dir, { recursive: true });
});

Deno.test("the writer flushes at once when 64 KiB are queued", async () => {
  const dir = await Deno.makeTempDir();
  const path = `${dir}/access.log`;
  const writer = await openAccessLog(path);
  const line = "x".repeat(1023);
  for (let i = 0; i < FLUSH_BYTES / 1024; i++) writer.write(line);
  // Let the flush the 64th line started finish, well before the 100 ms timer would.
  for (let i = 0; i < 20; i++) await new Promise((resolve) => setTimeout(resolve, 0));
  assert.deepEqual((await Deno.stat(path)).size, FLUSH_BYTES);
  await writer.close();
  await Deno.remove(dir, { recursive: true });
});

Deno.test("reopen after a rename writes to a new file at the path", async () => {
  const dir = await Deno.makeTempDir();
  const path = `${dir}/access.log`;
  const writer = await openAccessLog(path);
  writer.write("before");
  await writer.flush();
  await Deno.rename(path, `${dir}/access.log.1`);
  writer.write("still old"); // queued before the reopen: lands in the renamed file
  await writer.reopen();
  writer.write("after");
  await writer.close();
  assert.deepEqual(await Deno.readTextFile(`${dir}/access.log.1`), "before\nstill old\n");
  assert.deepEqual(await Deno.readTextFile(path), "after\n");
  // Closed: later lines are ignored, not thrown.
  writer.write("late");
  await writer.flush();
  assert.deepEqual(await Deno.readTextFile(path), "after\n");
  await Deno.remove(dir, { recursive: true });
});
