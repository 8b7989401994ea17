/**
 * Replay memory measured through the server: N header-signed DeleteObject requests (distinct
 * keys, so N distinct signatures; a delete of a missing key succeeds and costs no fsync) against
 * svc with replay detection on (the default window) and off, and the resident set each server
 * holds afterwards. The difference per request is what remembering a signature costs in a real
 * process (V8 heap plus the allocator's slack), next to replay-memory.ts's heap-only figure.
 *
 *   deno run -A scripts/bench/replay-server-memory.ts [requests] [concurrency]
 */
import { AwsClient } from "aws4fetch";
import { startProcess } from "./lib.ts";

const ROOT = new URL("../../", import.meta.url).pathname;
const requests = Number(Deno.args[0] ?? 20_000);
const concurrency = Number(Deno.args[1] ?? 16);
const KEY = "AKIABENCHREPLAY00000";
const SECRET = "bench-replay-secret";
const aws = new AwsClient({ accessKeyId: KEY, secretAccessKey: SECRET, service: "s3", retries: 0 });

async function rss(pid: number): Promise<number> {
  const status = await Deno.readTextFile(`/proc/${pid}/status`);
  return Number(/VmRSS:\s+(\d+) kB/.exec(status)![1]) * 1024;
}

async function run(window: string) {
  const dir = await Deno.makeTempDir({ prefix: "svc-replay-bench-" });
  const server = await startProcess([`${ROOT}main.ts`, "--listen", "127.0.0.1:0"], {
    SVC_DATA_DIR: dir,
    SVC_ACCESS_KEY_ID: KEY,
    SVC_SECRET_ACCESS_KEY: SECRET,
    SVC_LOG_LEVEL: "info",
    SVC_REPLAY_WINDOW_SECS: window,
  }, dir);
  try {
    await (await aws.fetch(`${server.url}/bench`, { method: "PUT" })).body?.cancel();
    // Warm up (JIT, pools), then measure from here.
    for (let i = 0; i < 500; i++) {
      await (await aws.fetch(`${server.url}/bench/warm-${i}`, { method: "DELETE" })).body?.cancel();
    }
    const before = await rss(server.pid);
    const started = performance.now();
    let next = 0;
    const worker = async () => {
      while (next < requests) {
        const i = next++;
        const res = await aws.fetch(`${server.url}/bench/key-${i}`, { method: "DELETE" });
        await res.body?.cancel();
        if (res.status !== 204) throw new Error(`DELETE ${i}: ${res.status}`);
      }
    };
    await Promise.all(Array.from({ length: concurrency }, worker));
    const seconds = (performance.now() - started) / 1000;
    const after = await rss(server.pid);
    return { window, requests, perSecond: Math.round(requests / seconds), growth: after - before };
  } finally {
    await server.stop();
    await Deno.remove(dir, { recursive: true });
  }
}

const on = await run("600");
const off = await run("0");
const perRequest = (on.growth - off.growth) / requests;
console.log(JSON.stringify({
  requests,
  concurrency,
  on: { perSecond: on.perSecond, rssGrowthMiB: +(on.growth / 2 ** 20).toFixed(1) },
  off: { perSecond: off.perSecond, rssGrowthMiB: +(off.growth / 2 ** 20).toFixed(1) },
  bytesPerRememberedWrite: Math.round(perRequest),
  projected2000PerSecondFor300sMiB: +((perRequest * 600_000) / 2 ** 20).toFixed(0),
}));
