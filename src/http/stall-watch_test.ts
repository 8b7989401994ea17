import assert from "node:assert/strict";
import { watchForStalls } from "./stall-watch.ts";

Deno.test("a body that stops sending is cut with the given reason", async () => {
  let stalled: Error | null = null;
  const source = new ReadableStream<Uint8Array>({
    start: (controller) => controller.enqueue(new Uint8Array(3)),
  });
  const watched = watchForStalls(source, 50, () => new Error("stalled"), (e) => stalled = e);
  const reader = watched.getReader();
  assert.equal((await reader.read()).value?.length, 3);
  await assert.rejects(reader.read(), /stalled/);
  assert.equal(stalled!.message, "stalled");
});

Deno.test("time the consumer takes between reads is not a stall", async () => {
  let stalls = 0;
  let sent = 0;
  const source = new ReadableStream<Uint8Array>({
    pull: (controller) => sent++ < 3 ? controller.enqueue(new Uint8Array(1)) : controller.close(),
  });
  const watched = watchForStalls(source, 30, () => new Error("stalled"), () => stalls++);
  let total = 0;
  for await (const chunk of watched) {
    total += chunk.length;
    await new Promise((resolve) => setTimeout(resolve, 80)); // a slow disk, not a slow client
  }
  assert.equal(total, 3);
  assert.equal(stalls, 0);
});
