/**
 * CPU cost of aws-chunked framing: one PUT whose body is `--chunks` one-byte chunks (default
 * 100,000), signed (`STREAMING-AWS4-HMAC-SHA256-PAYLOAD`: a chunk-signature HMAC per chunk) and
 * unsigned with a CRC32 trailer (`STREAMING-UNSIGNED-PAYLOAD-TRAILER`, the JS SDK's default),
 * against svc on a temp data directory. Reports the server's CPU seconds for the PUT (utime +
 * stime from /proc, so the client's own work is not counted) and the cost per chunk.
 *
 *   node_modules/.bin/deno run -A scripts/bench/tiny-chunks.ts [--chunks 100000] [--rounds 3] \
 *     [--before <dir>]
 *
 * `--before` names a checkout of an earlier svc (e.g. `git archive <rev> | tar -x -C <dir>` plus
 * a node_modules link): both servers then run side by side and rounds alternate between them,
 * so a before/after comparison is taken in one run on this noisy machine.
 */
import { createHash, createHmac } from "node:crypto";
import { AwsClient } from "aws4fetch";
import { fmt, startProcess } from "./lib.ts";

const arg = (name: string, fallback: number) => {
  const i = Deno.args.indexOf(name);
  return i >= 0 ? Number(Deno.args[i + 1]) : fallback;
};
const chunks = arg("--chunks", 100_000);
const rounds = arg("--rounds", 3);
const beforeAt = Deno.args.indexOf("--before");
const beforeRoot = beforeAt >= 0 ? Deno.args[beforeAt + 1].replace(/\/?$/, "/") : undefined;
const ROOT = new URL("../../", import.meta.url).pathname;
const ACCESS = "AKIABENCHTINYCHUNKS0";
const SECRET = "bench-secret-for-tiny-chunks";
const enc = new TextEncoder();

const hmac = (key: string | Uint8Array, data: string) =>
  new Uint8Array(createHmac("sha256", key).update(data).digest());
const sha256Hex = (data: string | Uint8Array) => createHash("sha256").update(data).digest("hex");

function crc32Base64(data: Uint8Array): string {
  let crc = ~0;
  for (const byte of data) {
    crc ^= byte;
    for (let k = 0; k < 8; k++) crc = (crc >>> 1) ^ (0xedb88320 & -(crc & 1));
  }
  const out = new Uint8Array(4);
  new DataView(out.buffer).setUint32(0, ~crc >>> 0);
  return btoa(String.fromCharCode(...out));
}

/** The signed request (headers) and its aws-chunked body of `data`, one byte per chunk. */
async function build(url: string, data: Uint8Array, signed: boolean) {
  const signer = new AwsClient({ accessKeyId: ACCESS, secretAccessKey: SECRET, service: "s3" });
  const request = await signer.sign(url, {
    method: "PUT",
    headers: {
      "content-encoding": "aws-chunked",
      "x-amz-decoded-content-length": String(data.length),
      "x-amz-content-sha256": signed
        ? "STREAMING-AWS4-HMAC-SHA256-PAYLOAD"
        : "STREAMING-UNSIGNED-PAYLOAD-TRAILER",
      ...(signed ? {} : { "x-amz-trailer": "x-amz-checksum-crc32" }),
    },
  });
  const date = request.headers.get("x-amz-date")!;
  const prefix = `${date}\n${date.slice(0, 8)}/us-east-1/s3/aws4_request\n`;
  let key = hmac(`AWS4${SECRET}`, date.slice(0, 8));
  for (const part of ["us-east-1", "s3", "aws4_request"]) key = hmac(key, part);
  let previous = /Signature=(\w+)/.exec(request.headers.get("authorization")!)![1];
  const empty = sha256Hex("");
  const signature = (chunk: Uint8Array) => {
    if (!signed) return "";
    previous = createHmac("sha256", key)
      .update(`AWS4-HMAC-SHA256-PAYLOAD\n${prefix}${previous}\n${empty}\n${sha256Hex(chunk)}`)
      .digest("hex");
    return `;chunk-signature=${previous}`;
  };
  let text = "";
  for (let i = 0; i < data.length; i++) {
    text += `1${signature(data.subarray(i, i + 1))}\r\n${String.fromCharCode(data[i])}\r\n`;
  }
  text += `0${signature(new Uint8Array(0))}\r\n`;
  text += signed ? "\r\n" : `x-amz-checksum-crc32:${crc32Base64(data)}\r\n\r\n`;
  return { headers: request.headers, body: enc.encode(text) };
}

/** utime + stime of a process in seconds. */
async function cpuSeconds(pid: number): Promise<number> {
  const stat = await Deno.readTextFile(`/proc/${pid}/stat`);
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return (Number(fields[11]) + Number(fields[12])) / 100; // USER_HZ is 100 on Linux
}

async function startSvc(root: string) {
  const dir = await Deno.makeTempDir({ prefix: "bench-tiny-chunks-" });
  const server = await startProcess([`${root}main.ts`, "--listen", "127.0.0.1:0"], {
    SVC_DATA_DIR: dir,
    SVC_ACCESS_KEY_ID: ACCESS,
    SVC_SECRET_ACCESS_KEY: SECRET,
    SVC_REPLAY_WINDOW_SECS: "0",
    SVC_LOG_LEVEL: "info",
  }, dir);
  const admin = new AwsClient({ accessKeyId: ACCESS, secretAccessKey: SECRET, service: "s3" });
  await (await admin.fetch(`${server.url}/bench`, { method: "PUT" })).body?.cancel();
  return {
    ...server,
    async stop() {
      await server.stop();
      await Deno.remove(dir, { recursive: true });
    },
  };
}

const servers = [
  ...(beforeRoot ? [{ name: "before", server: await startSvc(beforeRoot) }] : []),
  { name: beforeRoot ? "after" : "svc", server: await startSvc(ROOT) },
];
try {
  const data = new Uint8Array(chunks);
  for (let i = 0; i < chunks; i++) data[i] = 97 + (i % 26);
  console.log(`${chunks} one-byte chunks per PUT; server CPU seconds (utime + stime)`);
  console.log(
    `| mode | round | server | body (MB) | wall (s) | server CPU (s) | µs CPU per chunk |`,
  );
  console.log(`|---|---|---|---|---|---|---|`);
  for (const signed of [true, false]) {
    for (let round = 1; round <= rounds; round++) {
      for (const { name, server } of servers) {
        const url = `${server.url}/bench/tiny-${round}`;
        const { headers, body } = await build(url, data, signed);
        const cpuBefore = await cpuSeconds(server.pid);
        const started = performance.now();
        const response = await fetch(url, { method: "PUT", headers, body });
        const text = await response.text();
        const wall = (performance.now() - started) / 1000;
        const cpu = (await cpuSeconds(server.pid)) - cpuBefore;
        if (response.status !== 200) throw new Error(`PUT ${response.status}: ${text}`);
        const mode = signed ? "signed" : "unsigned + crc32 trailer";
        console.log(
          `| ${mode} | ${round} | ${name} | ${fmt(body.length / 1e6)} | ${fmt(wall, 2)} | ${
            fmt(cpu, 2)
          } | ${fmt(cpu * 1e6 / (chunks + 1))} |`,
        );
      }
    }
  }
} finally {
  for (const { server } of servers) await server.stop();
}
