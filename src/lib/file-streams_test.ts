import assert from "node:assert/strict";
import {
  fileRangeStream,
  openIfUnchanged,
  READ_CHUNK_BYTES,
  writeStreamToFile,
} from "./file-streams.ts";

function pattern(length: number): Uint8Array<ArrayBuffer> {
  const bytes = new Uint8Array(length);
  for (let i = 0; i < length; i++) bytes[i] = (i * 7 + (i >> 11)) & 0xff;
  return bytes;
}

async function readAll(stream: ReadableStream<Uint8Array>): Promise<Uint8Array> {
  return new Uint8Array(await new Response(stream).arrayBuffer());
}

function streamOf(chunks: Uint8Array[]): ReadableStream<Uint8Array> {
  return new ReadableStream({
    pull(controller) {
      const next = chunks.shift();
      if (next) controller.enqueue(next);
      else controller.close();
    },
  });
}

Deno.test("writeStreamToFile writes every chunk and returns the size", async () => {
  const dir = await Deno.makeTempDir();
  const data = pattern(700_000);
  const file = await Deno.open(`${dir}/f`, { write: true, createNew: true });
  const size = await writeStreamToFile(
    streamOf([data.subarray(0, 1), data.subarray(1, 300_000), data.subarray(300_000)]),
    file,
  );
  file.close();
  assert.equal(size, data.length);
  assert.deepEqual(await Deno.readFile(`${dir}/f`), data);
  await Deno.remove(dir, { recursive: true });
});

Deno.test("writeStreamToFile stops on abort while the body is stalled", async () => {
  const dir = await Deno.makeTempDir();
  const file = await Deno.open(`${dir}/f`, { write: true, createNew: true });
  let cancelled: unknown = null;
  let sent = false;
  const stalled = new ReadableStream<Uint8Array>({
    pull(controller) {
      if (!sent) controller.enqueue(new Uint8Array([1, 2, 3]));
      sent = true;
      return new Promise(() => {}); // a client that stops sending
    },
    cancel(reason) {
      cancelled = reason;
    },
  });
  const controller = new AbortController();
  const writing = writeStreamToFile(stalled, file, controller.signal);
  setTimeout(() => controller.abort(new Error("client went away")), 20);
  await assert.rejects(writing, /client went away/);
  file.close();
  assert.match(String(cancelled), /client went away/);
  await Deno.remove(dir, { recursive: true });
});

Deno.test("writeStreamToFile refuses an already aborted signal without reading", async () => {
  const dir = await Deno.makeTempDir();
  const file = await Deno.open(`${dir}/f`, { write: true, createNew: true });
  let pulled = false;
  const body = new ReadableStream<Uint8Array>({
    pull() {
      pulled = true;
    },
  }, { highWaterMark: 0 }); // pull only when read
  await assert.rejects(writeStreamToFile(body, file, AbortSignal.abort()));
  assert.equal(pulled, false);
  file.close();
  await Deno.remove(dir, { recursive: true });
});

Deno.test("fileRangeStream returns exactly the range, across chunk boundaries", async () => {
  const dir = await Deno.makeTempDir();
  const data = pattern(READ_CHUNK_BYTES * 2 + 1000);
  await Deno.writeFile(`${dir}/f`, data);
  const cases: Array<[number, number]> = [
    [0, data.length],
    [0, 1],
    [data.length - 1, 1],
    [READ_CHUNK_BYTES - 3, READ_CHUNK_BYTES + 10],
    [12345, 0],
  ];
  for (const [start, length] of cases) {
    const file = await Deno.open(`${dir}/f`);
    const got = await readAll(fileRangeStream(file, start, length));
    assert.deepEqual(got, data.subarray(start, start + length), `range ${start}+${length}`);
  }
  await Deno.remove(dir, { recursive: true });
});

Deno.test("fileRangeStream reads at most one chunk per pull", async () => {
  const dir = await Deno.makeTempDir();
  await Deno.writeFile(`${dir}/f`, pattern(READ_CHUNK_BYTES * 3));
  const reader = fileRangeStream(await Deno.open(`${dir}/f`), 0, READ_CHUNK_BYTES * 3)
    .getReader();
  const first = await reader.read();
  assert.equal(first.value?.length, READ_CHUNK_BYTES);
  // Cancelling closes the file; the test's resource sanitizer fails if it stays open.
  await reader.cancel();
  await Deno.remove(dir, { recursive: true });
});

Deno.test("fileRangeStream errors when the file is shorter than the range", async () => {
  const dir = await Deno.makeTempDir();
  await Deno.writeFile(`${dir}/f`, pattern(100));
  const stream = fileRangeStream(await Deno.open(`${dir}/f`), 50, 100);
  await assert.rejects(readAll(stream), /ended 50 bytes before/);
  await Deno.remove(dir, { recursive: true });
});

Deno.test("openIfUnchanged detects a file replaced by rename", async () => {
  const dir = await Deno.makeTempDir();
  await Deno.writeTextFile(`${dir}/f`, "one");
  const ino = (await Deno.lstat(`${dir}/f`)).ino;
  const same = openIfUnchanged(`${dir}/f`, ino);
  assert.ok(same);
  same.close();
  await Deno.writeTextFile(`${dir}/g`, "two");
  await Deno.rename(`${dir}/g`, `${dir}/f`);
  assert.equal(openIfUnchanged(`${dir}/f`, ino), null);
  assert.equal(openIfUnchanged(`${dir}/missing`, ino), null);
  await Deno.remove(dir, { recursive: true });
});

Deno.test("writeStreamToFile recycles lent read buffers only after their bytes are written", async () => {
  const { lendChunk, takeReadBuffer, freeReadBuffers } = await import("./read-buffers.ts");
  const dir = await Deno.makeTempDir();
  const data = pattern(5 * 1024 * 1024 + 77);
  const file = await Deno.open(`${dir}/f`, { write: true, createNew: true });
  let sent = 0;
  const body = new ReadableStream<Uint8Array>({
    pull(controller) {
      if (sent >= data.length) return controller.close();
      // Each chunk in a pooled megabyte, as the request body reader lends them: a buffer given
      // back too early would be overwritten by the next chunk before its write.
      const buffer = takeReadBuffer();
      const n = Math.min(buffer.byteLength - 13, data.length - sent);
      buffer.set(data.subarray(sent, sent + n));
      const chunk = buffer.subarray(0, n);
      lendChunk(chunk);
      sent += n;
      controller.enqueue(chunk);
    },
  });
  const written: number[] = [];
  const size = await writeStreamToFile(body, file, undefined, undefined, {
    recycle: true,
    onWritten: (bytes) => written.push(bytes),
  });
  file.close();
  assert.equal(size, data.length);
  assert.equal(written.reduce((a, b) => a + b, 0), data.length);
  assert.deepEqual(await Deno.readFile(`${dir}/f`), data);
  assert.ok(freeReadBuffers() >= 1, "written buffers went back to the pool");
  await Deno.remove(dir, { recursive: true });
});

Deno.test("writeStreamToFile fails the body when a queued write fails, with no write left running", async () => {
  const dir = await Deno.makeTempDir();
  await Deno.writeFile(`${dir}/f`, new Uint8Array(0));
  const readOnly = await Deno.open(`${dir}/f`, { read: true });
  const chunks = Array.from({ length: 6 }, () => pattern(200_000));
  await assert.rejects(writeStreamToFile(streamOf(chunks), readOnly));
  readOnly.close(); // would throw if a write still held the file
  await Deno.remove(dir, { recursive: true });
});
