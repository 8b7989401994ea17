/**
 * Throughput of svc against a bare Deno.serve file server, in one run on one machine:
 * 1 GiB PUT and GET (streamed), then 4 KiB PUT and GET at 32 concurrent clients. Prints a
 * Markdown table for docs/BENCHMARKS.md.
 *
 *   node_modules/.bin/deno run -A scripts/bench/throughput.ts [--size-mib 1024] [--small 4000]
 */
import { drain, fmt, GiB, MiB, peakRss, rawPut, startProcess, timed } from "./lib.ts";

const args = Deno.args;
const arg = (name: string, fallback: number) => {
  const i = args.indexOf(name);
  return i >= 0 ? Number(args[i + 1]) : fallback;
};
const sizeBytes = arg("--size-mib", 1024) * MiB;
const smallCount = arg("--small", 4000);
const CONCURRENCY = 32;
const ROOT = new URL("../../", import.meta.url).pathname;

/** Writes back dirty pages (sync) so a timed write does not pay for earlier ones. */
async function settleDisk(): Promise<void> {
  await new Deno.Command("sync").output();
}

/** Runs `smallCount` operations from CONCURRENCY concurrent clients; returns ops/s. */
async function hammer(work: (i: number) => Promise<void>): Promise<number> {
  let next = 0;
  const { seconds } = await timed(() =>
    Promise.all(Array.from({ length: CONCURRENCY }, async () => {
      while (next < smallCount) await work(next++);
    }))
  );
  return smallCount / seconds;
}

const bareDir = await Deno.makeTempDir({ prefix: "bench-bare-" });
const svcDir = await Deno.makeTempDir({ prefix: "bench-svc-" });
const bare = await startProcess([`${ROOT}scripts/bench/bare-server.ts`, bareDir]);
const svc = await startProcess([`${ROOT}main.ts`, "--listen", "127.0.0.1:0"], {
  SVC_DATA_DIR: svcDir,
  SVC_AUTHENTICATION: "none",
  SVC_MAX_OBJECT_SIZE: String(4 * GiB),
  SVC_LOG_LEVEL: "info",
}, svcDir);

try {
  await fetch(`${svc.url}/bench`, { method: "PUT" }).then((r) => r.body?.cancel());
  const targets = [
    { name: "bare Deno.serve", base: `${bare.url}` },
    { name: "svc", base: `${svc.url}/bench` },
  ];
  const results: Record<string, Record<string, number>> = {};
  for (const t of targets) results[t.name] = {};

  // Two rounds, alternating order, best of two: the machine is noisy.
  for (let round = 0; round < 2; round++) {
    for (const t of round === 0 ? targets : [...targets].reverse()) {
      // Flush what earlier phases left dirty, so neither server pays for the other's writes.
      await settleDisk();
      const put = await timed(async () => {
        const { status, response } = await rawPut(`${t.base}/big`, sizeBytes);
        if (status !== 200) throw new Error(`${t.name} PUT ${status}: ${response}`);
      });
      const get = await timed(async () => {
        const res = await fetch(`${t.base}/big`);
        const n = await drain(res.body);
        if (n !== sizeBytes) throw new Error(`${t.name} GET got ${n} bytes`);
      });
      console.error(
        `round ${round} ${t.name}: PUT ${fmt(put.seconds, 2)} s, GET ${fmt(get.seconds, 2)} s`,
      );
      const r = results[t.name];
      r.put = Math.max(r.put ?? 0, sizeBytes / MiB / put.seconds);
      r.get = Math.max(r.get ?? 0, sizeBytes / MiB / get.seconds);
    }
  }

  const small = crypto.getRandomValues(new Uint8Array(4096));
  for (const t of targets) {
    const r = results[t.name];
    r.smallPut = await hammer(async (i) => {
      const res = await fetch(`${t.base}/s${i % 1000}`, { method: "PUT", body: small });
      await res.body?.cancel();
      if (!res.ok) throw new Error(`${t.name} small PUT ${res.status}`);
    });
    r.smallGet = await hammer(async (i) => {
      const res = await fetch(`${t.base}/s${i % 1000}`);
      if ((await drain(res.body)) !== 4096) throw new Error(`${t.name} small GET`);
    });
  }
  results["svc"].rss = await peakRss(svc.pid);
  results["bare Deno.serve"].rss = await peakRss(bare.pid);

  const b = results["bare Deno.serve"], s = results["svc"];
  console.log(`| measure | bare Deno.serve | svc | svc / bare |`);
  console.log(`|---|---|---|---|`);
  console.log(
    `| ${sizeBytes / MiB} MiB PUT (MiB/s) | ${fmt(b.put)} | ${fmt(s.put)} | ${
      fmt(s.put / b.put, 2)
    } |`,
  );
  console.log(
    `| ${sizeBytes / MiB} MiB GET (MiB/s) | ${fmt(b.get)} | ${fmt(s.get)} | ${
      fmt(s.get / b.get, 2)
    } |`,
  );
  console.log(
    `| 4 KiB PUT, ${CONCURRENCY} clients (ops/s) | ${fmt(b.smallPut, 0)} | ${
      fmt(s.smallPut, 0)
    } | ${fmt(s.smallPut / b.smallPut, 2)} |`,
  );
  console.log(
    `| 4 KiB GET, ${CONCURRENCY} clients (ops/s) | ${fmt(b.smallGet, 0)} | ${
      fmt(s.smallGet, 0)
    } | ${fmt(s.smallGet / b.smallGet, 2)} |`,
  );
  console.log(`| server peak RSS (MB) | ${fmt(b.rss / 1e6, 0)} | ${fmt(s.rss / 1e6, 0)} | |`);
} finally {
  await svc.stop();
  await bare.stop();
  await Deno.remove(bareDir, { recursive: true });
  await Deno.remove(svcDir, { recursive: true });
}
