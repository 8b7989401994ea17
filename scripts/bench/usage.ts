/**
 * The cost of the usage counters on the write path: 4 KiB PUTs from concurrent clients against
 * two svc processes of this checkout in one run. In one the bucket is counted (created through S3,
 * so its counter exists: every PUT reads the replaced object's metadata, updates the counter and
 * marks it for the batched database write); in the other the bucket was made on disk before the
 * start and nothing asked for its usage, so its writes are not observed (what every bucket cost
 * before the counters were kept for all). The event outbox is off in both, so the comparison is
 * not diluted by its own cost. Each round interleaves slices on both servers (alternating which
 * goes first) and takes the ratio inside the round. Checks at the end that the counter holds
 * exactly the PUTs made and that the other bucket was never scanned.
 *
 *   node_modules/.bin/deno run -A scripts/bench/usage.ts [--small 1500] [--rounds 5] [--clients 32]
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

const smallCount = numberOption("--small", 1500);
const rounds = numberOption("--rounds", 5);
const clients = numberOption("--clients", 32);
const ROOT = new URL("../../", import.meta.url).pathname;

const dirs: string[] = [];
async function startSvc(counted: boolean) {
  const dir = await Deno.makeTempDir({ prefix: "bench-usage-" });
  dirs.push(dir);
  const config = `${dir}/svc.yaml`;
  await Deno.writeTextFile(
    config,
    JSON.stringify({ advanced: { event_delivery: { outbox: false } } }),
  );
  if (!counted) await Deno.mkdir(`${dir}/data/bench`, { recursive: true });
  const server = await startProcess([`${ROOT}main.ts`, "--listen", "127.0.0.1:0"], {
    SVC_DATA_DIR: `${dir}/data`,
    SVC_CONFIG: config,
    SVC_AUTHENTICATION: "none",
    SVC_LOG_LEVEL: "info",
    SVC_BOOTSTRAP_PASSWORD_HASH: ADMIN_PASSWORD_HASH,
  }, dir);
  if (counted) await fetch(`${server.url}/bench`, { method: "PUT" }).then((r) => r.body?.cancel());
  return server;
}

/** Runs `count` 4 KiB PUTs from `clients` concurrent clients; returns the seconds taken. */
async function hammer(url: string, prefix: string, count: number): Promise<number> {
  let next = 0;
  const { seconds } = await timed(() =>
    Promise.all(Array.from({ length: clients }, async () => {
      while (next < count) {
        const { status } = await rawPut(`${url}/bench/${prefix}-${next++}`, 4096);
        if (status !== 200) throw new Error(`PUT answered ${status}`);
      }
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

async function usageRow(url: string) {
  const admin = new AdminClient(url);
  await admin.login();
  return await admin.json<{ object_count: number; never_scanned: boolean }>(
    "GET",
    "/usage/bucket/bench",
  );
}

const on = await startSvc(true);
const off = await startSvc(false);
const rows: { on: number; off: number; ratio: number }[] = [];
try {
  await hammer(on.url, "warm", 300);
  await hammer(off.url, "warm", 300);
  for (let index = 0; index < rounds; index++) {
    const rate = await round(index);
    rows.push({ ...rate, ratio: rate.on / rate.off });
  }
  console.log(`| round | counted (PUT/s) | not counted (PUT/s) | counted/not |`);
  console.log(`|---|---|---|---|`);
  rows.forEach((r, i) =>
    console.log(`| ${i + 1} | ${fmt(r.on, 0)} | ${fmt(r.off, 0)} | ${fmt(r.ratio, 2)} |`)
  );
  const sorted = rows.map((r) => r.ratio).sort((a, b) => a - b);
  const median = sorted[Math.floor(sorted.length / 2)];
  console.log(
    `\nratio median ${fmt(median, 2)}, min ${fmt(sorted[0], 2)}, max ${fmt(sorted.at(-1)!, 2)}`,
  );
  const expected = 300 + Math.ceil(smallCount / AB_SLICES) * AB_SLICES * rounds;
  const counted = await usageRow(on.url);
  const uncounted = await usageRow(off.url);
  console.log(
    `counter ${counted.object_count} objects for ${expected} PUTs; ` +
      `the other bucket never_scanned: ${uncounted.never_scanned}`,
  );
  console.log(
    `peak RSS counted ${fmt((await peakRss(on.pid)) / 1048576)} MiB, not counted ${
      fmt((await peakRss(off.pid)) / 1048576)
    } MiB`,
  );
} finally {
  await on.stop();
  await off.stop();
  for (const dir of dirs) await Deno.remove(dir, { recursive: true }).catch(() => {});
}
