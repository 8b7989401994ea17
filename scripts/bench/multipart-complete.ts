/**
 * CompleteMultipartUpload time on the filesystem backend: uploads an object of each size in
 * parts over raw HTTP/1.1, then times the Complete, checks the multipart ETag and the sha256 svc
 * stored (read from the object's `user.svc.meta` attribute, compared with the sha256 of the bytes
 * sent), times a whole GET, and reads the server's peak RSS (VmHWM). Goal (issue 11): Complete of 5 GiB ≤ 2 s.
 *
 *   node_modules/.bin/deno run -A scripts/bench/multipart-complete.ts \
 *     [--sizes-gib 1,5] [--part-mib 64] [--in-flight 2] [--root <svc checkout>]
 *
 * `--root` runs another checkout's main.ts (e.g. the commit before a change) for a before/after
 * in one run. Needs the object size plus a little free in the temp dir (twice that before).
 */
import { createHash } from "node:crypto";
import { drain, fmt, GiB, MiB, peakRss, startProcess, timed } from "./lib.ts";
import { getJsonXattr } from "../../src/native/xattr.ts";

const args = Deno.args;
const option = (name: string, fallback: string) => {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : fallback;
};
const sizes = option("--sizes-gib", "1,5").split(",").map(Number);
const partBytes = Number(option("--part-mib", "64")) * MiB;
const inFlight = Number(option("--in-flight", "2"));
const root = option("--root", new URL("../../", import.meta.url).pathname).replace(/\/?$/, "/");

/** Part n's bytes: one random MiB block with the part number stamped on each MiB. */
const block = new Uint8Array(MiB);
for (let i = 0; i < MiB; i += 65536) crypto.getRandomValues(block.subarray(i, i + 65536));
function chunkOf(part: number, index: number, length: number): Uint8Array {
  const chunk = block.slice(0, length);
  new DataView(chunk.buffer).setUint32(0, part * 100_003 + index);
  return chunk;
}

async function putPart(url: string, part: number, size: number): Promise<string> {
  const target = new URL(url);
  const conn = await Deno.connect({ hostname: target.hostname, port: Number(target.port) });
  try {
    const head = `PUT ${target.pathname}${target.search} HTTP/1.1\r\nhost: ${target.host}\r\n` +
      `content-length: ${size}\r\nconnection: close\r\n\r\n`;
    await conn.write(new TextEncoder().encode(head));
    for (let sent = 0, i = 0; sent < size; i++) {
      const chunk = chunkOf(part, i, Math.min(MiB, size - sent));
      for (let at = 0; at < chunk.length;) at += await conn.write(chunk.subarray(at));
      sent += chunk.length;
    }
    const response = new TextDecoder().decode(await new Response(conn.readable).arrayBuffer());
    const etag = /^etag:\s*"?([0-9a-f]{32})"?\s*$/im.exec(response)?.[1];
    if (!/^HTTP\/1\.1 200/.test(response) || !etag) throw new Error(`UploadPart: ${response}`);
    return etag;
  } finally {
    try {
      conn.close();
    } catch { /* closed by the peer */ }
  }
}

function expectedDigests(total: number, partCount: number) {
  const sha256 = createHash("sha256");
  const etagHash = createHash("md5");
  for (let part = 1; part <= partCount; part++) {
    const size = Math.min(partBytes, total - (part - 1) * partBytes);
    const md5 = createHash("md5");
    for (let sent = 0, i = 0; sent < size; i++) {
      const chunk = chunkOf(part, i, Math.min(MiB, size - sent));
      sha256.update(chunk);
      md5.update(chunk);
      sent += chunk.length;
    }
    etagHash.update(md5.digest());
  }
  return { sha256: sha256.digest("hex"), etag: `${etagHash.digest("hex")}-${partCount}` };
}

console.log(`svc at ${root}, parts of ${partBytes / MiB} MiB, ${inFlight} in flight`);
console.log(
  "| size | upload parts (s) | MiB/s | Complete (s) | ETag | sha256 | GET MiB/s | peak RSS (MB) |",
);
console.log("|---|---|---|---|---|---|---|---|");
for (const sizeGib of sizes) {
  const total = Math.round(sizeGib * GiB);
  const partCount = Math.ceil(total / partBytes);
  const dataDir = await Deno.makeTempDir({ prefix: "bench-complete-" });
  const svc = await startProcess([`${root}main.ts`, "--listen", "127.0.0.1:0"], {
    SVC_DATA_DIR: dataDir,
    SVC_AUTHENTICATION: "none",
    SVC_MAX_OBJECT_SIZE: String(total + GiB),
    SVC_REQUEST_TIMEOUT_SECS: "600",
    SVC_LOG_LEVEL: "info",
    ...(Deno.env.get("BENCH_DEBUG") ? {} : {}),
  }, dataDir);
  try {
    const base = `${svc.url}/bench`;
    await (await fetch(base, { method: "PUT" })).body?.cancel();
    const created = await (await fetch(`${base}/big?uploads`, { method: "POST" })).text();
    const uploadId = encodeURIComponent(/<UploadId>([^<]+)</.exec(created)![1]);
    const etags: string[] = [];
    let next = 1;
    const upload = await timed(() =>
      Promise.all(Array.from({ length: inFlight }, async () => {
        while (next <= partCount) {
          const n = next++;
          const size = Math.min(partBytes, total - (n - 1) * partBytes);
          etags[n - 1] = await putPart(`${base}/big?partNumber=${n}&uploadId=${uploadId}`, n, size);
        }
      }))
    );
    const xml = "<CompleteMultipartUpload>" +
      etags.map((e, i) => `<Part><PartNumber>${i + 1}</PartNumber><ETag>"${e}"</ETag></Part>`)
        .join("") +
      "</CompleteMultipartUpload>";
    const complete = await timed(async () => {
      const res = await fetch(`${base}/big?uploadId=${uploadId}`, { method: "POST", body: xml });
      const text = await res.text();
      if (res.status !== 200) throw new Error(`Complete ${res.status}: ${text}`);
      return /<ETag>&quot;([^&]+)&quot;<\/ETag>/.exec(text)?.[1] ?? text;
    });
    const expected = expectedDigests(total, partCount);
    const stored = getJsonXattr<{ sha256: string }>(`${dataDir}/bench/big`, "user.svc.meta");
    const get = await timed(async () => {
      const res = await fetch(`${base}/big`);
      const n = await drain(res.body);
      if (n !== total) throw new Error(`GET ${res.status}: ${n} bytes`);
    });
    const row = [
      `${sizeGib} GiB`,
      fmt(upload.seconds, 2),
      fmt(total / MiB / upload.seconds, 0),
      fmt(complete.seconds, 2),
      complete.value === expected.etag ? "right" : `WRONG ${complete.value}`,
      stored?.sha256 === expected.sha256 ? "right" : `WRONG ${stored?.sha256}`,
      fmt(total / MiB / get.seconds, 0),
      fmt((await peakRss(svc.pid)) / 1e6, 0),
    ];
    console.log(`| ${row.join(" | ")} |`);
  } finally {
    await svc.stop();
    await Deno.remove(dataDir, { recursive: true });
  }
}
