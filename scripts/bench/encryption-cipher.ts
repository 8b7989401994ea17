/**
 * What AES-256-GCM through WebCrypto costs in this Deno, alone (no I/O, no svc): 64 KiB frames,
 * sealed and opened with 1, 4 and 8 frames in flight, wall time and process CPU. Explains the
 * ceiling of aes256-gcm-proxy throughput (scripts/bench/encryption.ts).
 *
 *   node_modules/.bin/deno run -A scripts/bench/encryption-cipher.ts [--size-mib 256]
 */
import { cpuSeconds, fmt, MiB } from "./lib.ts";

const i = Deno.args.indexOf("--size-mib");
const total = Number(i >= 0 ? Deno.args[i + 1] : 256) * MiB;
const FRAME = 64 * 1024;
const key = await crypto.subtle.importKey(
  "raw",
  crypto.getRandomValues(new Uint8Array(32)),
  "AES-GCM",
  false,
  ["encrypt", "decrypt"],
);
const plain = crypto.getRandomValues(new Uint8Array(FRAME));
const iv = new Uint8Array(12);
const sealed = new Uint8Array(await crypto.subtle.encrypt({ name: "AES-GCM", iv }, key, plain));

console.log("| operation | frames in flight | MB/s (wall) | CPU s per GiB |");
console.log("|---|---|---|---|");
for (const operation of ["encrypt", "decrypt"] as const) {
  for (const depth of [1, 4, 8]) {
    const cpuStart = await cpuSeconds(Deno.pid);
    const start = performance.now();
    const inflight: Promise<ArrayBuffer>[] = [];
    for (let n = 0; n < total / FRAME; n++) {
      inflight.push(
        operation === "encrypt"
          ? crypto.subtle.encrypt({ name: "AES-GCM", iv }, key, plain)
          : crypto.subtle.decrypt({ name: "AES-GCM", iv }, key, sealed),
      );
      if (inflight.length >= depth) await inflight.shift();
    }
    await Promise.all(inflight);
    const seconds = (performance.now() - start) / 1000;
    const cpu = await cpuSeconds(Deno.pid) - cpuStart;
    console.log(
      `| ${operation} | ${depth} | ${fmt(total / 1e6 / seconds, 0)} | ${
        fmt(cpu * (1024 * MiB) / total, 2)
      } |`,
    );
  }
}
