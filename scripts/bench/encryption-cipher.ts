/**
 * What AES-256-GCM costs in this Deno, alone (no I/O, no svc), per engine of
 * src/storage/encryption/gcm-engine.ts: OpenSSL's libcrypto over FFI, and WebCrypto. 64 KiB
 * frames sealed and opened in batches (pipeline.ts) into one reused buffer, as the encrypted PUT
 * and GET paths do with pooled buffers (fresh ~1 MiB arrays would measure page faults, which
 * swing from 0 to several CPU-s per GiB on this VM); wall time and process CPU. Explains the ceiling of aes256-gcm-proxy throughput
 * (scripts/bench/encryption.ts).
 *
 *   node_modules/.bin/deno run -A scripts/bench/encryption-cipher.ts [--size-mib 256]
 */
import { FRAME_SIZE, newHeader, TAG_SIZE } from "../../src/storage/encryption/frame-format.ts";
import {
  type GcmEngine,
  openSslEngine,
  webCryptoEngine,
} from "../../src/storage/encryption/gcm-engine.ts";
import { loadOpenSsl } from "../../src/native/libcrypto/openssl-gcm.ts";
import { BATCH_FRAMES } from "../../src/storage/encryption/pipeline.ts";
import { cpuSeconds, fmt, GiB, MiB } from "./lib.ts";

const i = Deno.args.indexOf("--size-mib");
const total = Number(i >= 0 ? Deno.args[i + 1] : 256) * MiB;
const header = newHeader("bench");
const plain = crypto.getRandomValues(new Uint8Array(FRAME_SIZE));
const engines: GcmEngine[] = loadOpenSsl() ? [openSslEngine, webCryptoEngine] : [webCryptoEngine];

console.log("| engine | operation | MB/s (wall) | CPU s per GiB |");
console.log("|---|---|---|---|");
for (const engine of engines) {
  const cipher = await engine.cipher(crypto.getRandomValues(new Uint8Array(32)), header);
  const sealed = new Uint8Array(FRAME_SIZE + TAG_SIZE);
  await cipher.seal(1, false, plain, sealed);
  for (const operation of ["seal", "open"] as const) {
    const size = operation === "seal" ? FRAME_SIZE + TAG_SIZE : FRAME_SIZE;
    const out = new Uint8Array(BATCH_FRAMES * size);
    const cpuStart = await cpuSeconds(Deno.pid);
    const start = performance.now();
    for (let batch = 0; batch < total / (BATCH_FRAMES * FRAME_SIZE); batch++) {
      const pending: (void | Promise<void>)[] = [];
      for (let frame = 0; frame < BATCH_FRAMES; frame++) {
        const into = out.subarray(frame * size, (frame + 1) * size);
        pending.push(
          operation === "seal"
            ? cipher.seal(1, false, plain, into)
            : cipher.open(1, false, sealed, into),
        );
      }
      if (!cipher.synchronous) await Promise.all(pending);
    }
    const seconds = (performance.now() - start) / 1000;
    const cpu = await cpuSeconds(Deno.pid) - cpuStart;
    console.log(
      `| ${engine.name} | ${operation} | ${fmt(total / 1e6 / seconds, 0)} | ${
        fmt(cpu * GiB / total, 2)
      } |`,
    );
  }
  cipher.dispose();
}
