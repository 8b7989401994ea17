/**
 * The baseline for the throughput benchmark: the plainest Deno.serve file server that streams a
 * PUT body to disk (reader loop + write, fsync, rename) and a GET back from disk. svc is compared
 * against this on the same machine in the same run.
 */
const dir = Deno.args[0] ?? await Deno.makeTempDir({ prefix: "bare-" });

async function put(path: string, body: ReadableStream<Uint8Array>): Promise<void> {
  const temp = `${path}.tmp-${crypto.randomUUID()}`;
  const file = await Deno.open(temp, { write: true, create: true, truncate: true });
  try {
    const reader = body.getReader();
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      let offset = 0;
      while (offset < value.byteLength) offset += await file.write(value.subarray(offset));
    }
    await file.sync();
  } finally {
    file.close();
  }
  await Deno.rename(temp, path);
}

const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, async (req) => {
  const name = new URL(req.url).pathname.replace(/[^A-Za-z0-9._-]/g, "_");
  const path = `${dir}/${name}`;
  if (req.method === "PUT") {
    await put(path, req.body ?? new ReadableStream({ start: (c) => c.close() }));
    return new Response(null);
  }
  try {
    const file = await Deno.open(path);
    const { size } = await file.stat();
    return new Response(file.readable, { headers: { "content-length": String(size) } });
  } catch {
    return new Response("not found", { status: 404 });
  }
});
console.log(`listening on http://127.0.0.1:${server.addr.port}`);
