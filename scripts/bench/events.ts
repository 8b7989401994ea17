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
import { AB_SLICES, fmt, numberOption, peakRss } from "./lib.ts";
import { printRounds, putRounds, startBenchSvc, stopAll, WARM_PUTS } from "./put-ab.ts";

const smallCount = numberOption("--small", 3000);
const rounds = numberOption("--rounds", 3);
const clients = numberOption("--clients", 32);

/** Quantile of a Prometheus histogram from its cumulative buckets (upper bound of the bucket). */
function histogramQuantile(text: string, name: string, q: number): number {
  const buckets = [...text.matchAll(new RegExp(`^${name}_bucket\\{le="([^"]+)"\\} (\\d+)`, "gm"))]
    .map((m) => ({ le: m[1] === "+Inf" ? Infinity : Number(m[1]), n: Number(m[2]) }));
  const total = buckets.at(-1)?.n ?? 0;
  return buckets.find((b) => b.n >= q * total)?.le ?? NaN;
}

const config = (outbox: boolean) => ({ advanced: { event_delivery: { outbox } } });
const on = await startBenchSvc("bench-events-", config(true));
const off = await startBenchSvc("bench-events-", config(false));
try {
  const rows = await putRounds(on, off, { count: smallCount, rounds, clients });
  const metrics = await (await fetch(`${on.url}/_/metrics`)).text();
  const admin = new AdminClient(on.url);
  await admin.login();
  await new Promise((resolve) => setTimeout(resolve, 200));
  const outbox = await admin.json<{ total: number }>("GET", "/event-outbox?limit=1");
  const expected = WARM_PUTS + Math.ceil(smallCount / AB_SLICES) * AB_SLICES * rounds;
  printRounds(["outbox on (PUT/s)", "outbox off (PUT/s)", "on/off"], rows);
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
  await stopAll([on, off]);
}
