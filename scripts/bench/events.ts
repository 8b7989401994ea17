/**
 * The cost of the event outbox on the write path: 4 KiB PUTs from concurrent clients against two
 * svc processes of this checkout in one run, one recording events (`event_delivery.outbox: true`,
 * the default; delivery off) and one not (`outbox: false`). Each round measures both back to
 * back (alternating which goes first) and the ratio is taken inside the round. Also reports the
 * append → commit lag of events (svc_events_commit_lag_seconds: the window a crash can lose) and
 * checks that every PUT left one outbox row.
 *
 *   node_modules/.bin/deno run -A scripts/bench/events.ts [--small 3000] [--rounds 3] [--clients 32]
 */
import { AdminClient } from "../../tests/helpers/admin.ts";
import { ADMIN_PASSWORD_HASH } from "../../tests/helpers/admin.ts";
import {
  AB_SLICES,
  alternatingRates,
  fmt,
  numberOption,
  peakRss,
  rawPut,
  startProcess,
  timed,
} from "./lib.ts";

const smallCount = numberOption("--small", 3000);
const rounds = numberOption("--rounds", 3);
const clients = numberOption("--clients", 32);
const ROOT = new URL("../../", import.meta.url).pathname;

const dirs: string[] = [];
async function startSvc(outbox: boolean) {
  const dir = await Deno.makeTempDir({ prefix: "bench-events-" });
  dirs.push(dir);
  const config = `${dir}/svc.yaml`;
  await Deno.writeTextFile(config, JSON.stringify({ advanced: { event_delivery: { outbox } } }));
  const server = await startProcess([`${ROOT}main.ts`, "--listen", "127.0.0.1:0"], {
    SVC_DATA_DIR: `${dir}/data`,
    SVC_CONFIG: config,
    SVC_AUTHENTICATION: "none",
    SVC_LOG_LEVEL: "info",
    SVC_BOOTSTRAP_PASSWORD_HASH: ADMIN_PASSWORD_HASH,
  }, dir);
  await fetch(`${server.url}/bench`, { method: "PUT" }).then((r) => r.body?.cancel());
  return server;
}

/** Runs `count` 4 KiB PUTs from `clients` concurrent clients; returns the seconds taken. */
async function hammer(url: string, prefix: string, count: number): Promise<number> {
  let next = 0;
  const { seconds } = await timed(() =>
    Promise.all(Array.from({ length: clients }, async () => {
      while (next < count) await rawPut(`${url}/bench/${prefix}-${next++}`, 4096);
    }))
  );
  return seconds;
}

/** One round: PUT/s of each server, in alternating slices (lib.ts). */
const round = (index: number) =>
  alternatingRates(
    index,
    smallCount,
    (side, prefix, n) => hammer((side === "on" ? on : off).url, prefix, n),
  );

/** Quantile of a Prometheus histogram from its cumulative buckets (upper bound of the bucket). */
function histogramQuantile(text: string, name: string, q: number): number {
  const buckets = [...text.matchAll(new RegExp(`^${name}_bucket\\{le="([^"]+)"\\} (\\d+)`, "gm"))]
    .map((m) => ({ le: m[1] === "+Inf" ? Infinity : Number(m[1]), n: Number(m[2]) }));
  const total = buckets.at(-1)?.n ?? 0;
  return buckets.find((b) => b.n >= q * total)?.le ?? NaN;
}

const on = await startSvc(true);
const off = await startSvc(false);
const rows: { on: number; off: number; ratio: number }[] = [];
try {
  // Warm-up (JIT, first directory creation), not measured.
  await hammer(on.url, "warm", 300);
  await hammer(off.url, "warm", 300);
  for (let index = 0; index < rounds; index++) {
    const rate = await round(index);
    rows.push({ ...rate, ratio: rate.on / rate.off });
  }
  const metrics = await (await fetch(`${on.url}/_/metrics`)).text();
  const admin = new AdminClient(on.url);
  await admin.login();
  await new Promise((resolve) => setTimeout(resolve, 200));
  const outbox = await admin.json<{ total: number }>("GET", "/event-outbox?limit=1");
  const expected = 300 + Math.ceil(smallCount / AB_SLICES) * AB_SLICES * rounds;
  console.log(`| round | outbox on (PUT/s) | outbox off (PUT/s) | on/off |`);
  console.log(`|---|---|---|---|`);
  rows.forEach((r, i) =>
    console.log(`| ${i + 1} | ${fmt(r.on, 0)} | ${fmt(r.off, 0)} | ${fmt(r.ratio, 2)} |`)
  );
  const ratios = rows.map((r) => r.ratio);
  const sorted = [...ratios].sort((a, b) => a - b);
  const median = sorted[Math.floor(sorted.length / 2)];
  console.log(
    `\nratio median ${fmt(median, 2)}, min ${fmt(sorted[0], 2)}, max ${fmt(sorted.at(-1)!, 2)}`,
  );
  console.log(
    `commit lag p50 ≤ ${
      histogramQuantile(metrics, "svc_events_commit_lag_seconds", 0.5) * 1000
    } ms, ` +
      `p99 ≤ ${histogramQuantile(metrics, "svc_events_commit_lag_seconds", 0.99) * 1000} ms, ` +
      `max ≤ ${histogramQuantile(metrics, "svc_events_commit_lag_seconds", 1) * 1000} ms`,
  );
  console.log(`outbox rows ${outbox.total} for ${expected} PUTs`);
  console.log(
    `peak RSS on ${fmt((await peakRss(on.pid)) / 1048576)} MiB, off ${
      fmt((await peakRss(off.pid)) / 1048576)
    } MiB`,
  );
} finally {
  await on.stop();
  await off.stop();
  for (const dir of dirs) await Deno.remove(dir, { recursive: true }).catch(() => {});
}
