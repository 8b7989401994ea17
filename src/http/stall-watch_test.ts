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

/** A byte stream like Deno's request body: fills as much of the reader's buffer as it has. */
function byteSource(total: number): ReadableStream<Uint8Array> {
  let sent = 0;
  return new ReadableStream({
    type: "bytes",
    pull(controller) {
      const request = controller.byobRequest!;
      const view = request.view as Uint8Array;
      const n = Math.min(view.byteLength, total - sent);
      if (n === 0) {
        controller.close();
        request.respond(0);
        return;
      }
      view.fill(sent % 251, 0, n);
      sent += n;
      request.respond(n);
    },
    autoAllocateChunkSize: 64 * 1024,
  });
}

Deno.test("a BYOB read of the watched body fills the reader's own buffer in one piece", async () => {
  const watched = watchForStalls(byteSource(3 << 20), 1000, () => new Error("stalled"), () => {});
  const reader = watched.getReader({ mode: "byob" });
  const sizes: number[] = [];
  for (;;) {
    const { done, value } = await reader.read(new Uint8Array(1 << 20));
    if (done) break;
    sizes.push(value.byteLength);
  }
  // A plain stream in between would cut the body into the source's 64 KiB chunks.
  assert.deepEqual(sizes, [1 << 20, 1 << 20, 1 << 20]);
});

Deno.test("a default reader of the watched body gets every byte", async () => {
  const watched = watchForStalls(byteSource(200_000), 1000, () => new Error("stalled"), () => {});
  const bytes = new Uint8Array(await new Response(watched).arrayBuffer());
  assert.equal(bytes.byteLength, 200_000);
});

Deno.test("an empty chunk of a plain source does not break the watched byte stream", async () => {
  const source = new ReadableStream<Uint8Array>({
    start(controller) {
      controller.enqueue(new Uint8Array(0));
      controller.enqueue(new Uint8Array([7]));
      controller.close();
    },
  });
  const watched = watchForStalls(source, 1000, () => new Error("stalled"), () => {});
  assert.deepEqual(new Uint8Array(await new Response(watched).arrayBuffer()), new Uint8Array([7]));
});

Deno.test("a stalled BYOB read is cut", async () => {
  const source = new ReadableStream({ type: "bytes", pull: () => new Promise(() => {}) });
  const watched = watchForStalls(source, 50, () => new Error("stalled"), () => {});
  const reader = watched.getReader({ mode: "byob" });
  await assert.rejects(reader.read(new Uint8Array(16)), /stalled/);
});
