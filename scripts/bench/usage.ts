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
import { AB_SLICES, fmt, numberOption, peakRss } from "./lib.ts";
import { printRounds, putRounds, startBenchSvc, stopAll, WARM_PUTS } from "./put-ab.ts";

const smallCount = numberOption("--small", 1500);
const rounds = numberOption("--rounds", 5);
const clients = numberOption("--clients", 32);

async function usageRow(url: string) {
  const admin = new AdminClient(url);
  await admin.login();
  return await admin.json<{ object_count: number; never_scanned: boolean }>(
    "GET",
    "/usage/bucket/bench",
  );
}

const config = { advanced: { event_delivery: { outbox: false } } };
const on = await startBenchSvc("bench-usage-", config);
// Made on disk before the start and never asked about: its writes are not observed.
const off = await startBenchSvc("bench-usage-", config, true);
try {
  const rows = await putRounds(on, off, { count: smallCount, rounds, clients });
  printRounds(["counted (PUT/s)", "not counted (PUT/s)", "counted/not"], rows);
  const expected = WARM_PUTS + Math.ceil(smallCount / AB_SLICES) * AB_SLICES * rounds;
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
  await stopAll([on, off]);
}
