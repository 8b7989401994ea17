/**
 * The baseline for the throughput benchmark: the plainest fast Deno.serve file server. A PUT
 * streams the body to a temp file with a BYOB reader into one reused 1 MiB buffer (the fastest
 * upload loop on Deno 2.9.5: fewer, larger reads than the default reader), fsyncs it (with
 * `--fsync`) and renames it into one flat directory; a GET streams the file back with Deno's
 * native file stream. svc is compared against this on the same machine in the same run; it is
 * as fast as `/work/shared/bench/rawserver.ts --fsync` (the project's reference baseline, which
 * `throughput.ts --baseline` can run instead) on large bodies and faster on small ones.
 *
 *   deno run -A scripts/bench/bare-server.ts --port 0 --dir DIR [--fsync]
 */
const arg = (name: string) => {
  const i = Deno.args.indexOf(name);
  return i >= 0 ? Deno.args[i + 1] : undefined;
};
const dir = arg("--dir") ?? await Deno.makeTempDir({ prefix: "bare-" });
const port = Number(arg("--port") ?? 0);
const fsync = Deno.args.includes("--fsync");
let sequence = 0;

async function writeAll(file: Deno.FsFile, bytes: Uint8Array): Promise<void> {
  for (let offset = 0; offset < bytes.length;) offset += await file.write(bytes.subarray(offset));
}

async function put(
  path: string,
  body: ReadableStream<Uint8Array> | null,
  length: number,
): Promise<void> {
  const temp = `${dir}/.tmp-${sequence++}`;
  const file = await Deno.open(temp, { write: true, create: true, truncate: true });
  try {
    if (body) {
      const reader = body.getReader({ mode: "byob" });
      let buffer = new Uint8Array(Math.max(16 * 1024, Math.min(1 << 20, length || 1 << 20)));
      for (;;) {
        const { done, value } = await reader.read(buffer);
        if (done || !value) break;
        await writeAll(file, value);
        buffer = new Uint8Array(value.buffer); // the read transferred the buffer: take it back
      }
    }
    if (fsync) await file.sync();
  } finally {
    file.close();
  }
  await Deno.rename(temp, path);
}

const server = Deno.serve({ hostname: "127.0.0.1", port, onListen: () => {} }, async (req) => {
  const name = encodeURIComponent(decodeURIComponent(new URL(req.url).pathname));
  const path = `${dir}/${name}`;
  if (req.method === "PUT") {
    await put(path, req.body, Number(req.headers.get("content-length") ?? 0));
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
console.log(`listening on http://127.0.0.1:${server.addr.port} dir=${dir} fsync=${fsync}`);
