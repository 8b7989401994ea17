/**
 * A feature's cost on the 4 KiB PUT path, as the events and usage benches measure it: two svc
 * processes of this checkout (one with the feature, one without), concurrent clients, alternating
 * slices inside each round (lib.ts alternatingRates) so both see the same noise, ratio per round.
 */
import { ADMIN_PASSWORD_HASH } from "../../tests/helpers/admin.ts";
import { alternatingRates, fmt, rawPut, type Started, startProcess, timed } from "./lib.ts";

const ROOT = new URL("../../", import.meta.url).pathname;

export interface BenchSvc extends Started {
  dir: string;
}

/**
 * Starts svc (no authentication, bucket `bench`) in a fresh temp dir with `config` as its file.
 * `preparedBucket` makes the bucket on disk before the start instead of through S3 after it.
 */
export async function startBenchSvc(
  prefix: string,
  config: Record<string, unknown>,
  preparedBucket = false,
): Promise<BenchSvc> {
  const dir = await Deno.makeTempDir({ prefix });
  await Deno.writeTextFile(`${dir}/svc.yaml`, JSON.stringify(config));
  if (preparedBucket) await Deno.mkdir(`${dir}/data/bench`, { recursive: true });
  const server = await startProcess([`${ROOT}main.ts`, "--listen", "127.0.0.1:0"], {
    SVC_DATA_DIR: `${dir}/data`,
    SVC_CONFIG: `${dir}/svc.yaml`,
    SVC_AUTHENTICATION: "none",
    SVC_LOG_LEVEL: "info",
    SVC_BOOTSTRAP_PASSWORD_HASH: ADMIN_PASSWORD_HASH,
  }, dir);
  if (!preparedBucket) {
    await fetch(`${server.url}/bench`, { method: "PUT" }).then((r) => r.body?.cancel());
  }
  return { ...server, dir };
}

/** `count` 4 KiB PUTs of new keys from `clients` concurrent clients; the seconds taken. */
export async function putHammer(
  url: string,
  prefix: string,
  count: number,
  clients: number,
): Promise<number> {
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

/** PUTs made before the rounds (JIT, first directory creation): not measured, but stored. */
export const WARM_PUTS = 300;

/** Warm-up, then `rounds` A/B rounds of `count` PUTs a side; PUT/s of each side and the ratio. */
export async function putRounds(
  on: Started,
  off: Started,
  options: { count: number; rounds: number; clients: number },
): Promise<{ on: number; off: number; ratio: number }[]> {
  await putHammer(on.url, "warm", WARM_PUTS, options.clients);
  await putHammer(off.url, "warm", WARM_PUTS, options.clients);
  const rows = [];
  for (let index = 0; index < options.rounds; index++) {
    const rate = await alternatingRates(
      index,
      options.count,
      (side, prefix, n) => putHammer((side === "on" ? on : off).url, prefix, n, options.clients),
    );
    rows.push({ ...rate, ratio: rate.on / rate.off });
  }
  return rows;
}

/** Prints the rounds as a Markdown table and the ratio's median and spread. */
export function printRounds(
  columns: [string, string, string],
  rows: { on: number; off: number; ratio: number }[],
): void {
  console.log(`| round | ${columns.join(" | ")} |`);
  console.log(`|---|---|---|---|`);
  rows.forEach((r, i) =>
    console.log(`| ${i + 1} | ${fmt(r.on, 0)} | ${fmt(r.off, 0)} | ${fmt(r.ratio, 2)} |`)
  );
  const sorted = rows.map((r) => r.ratio).sort((a, b) => a - b);
  const median = sorted[Math.floor(sorted.length / 2)];
  console.log(
    `\nratio median ${fmt(median, 2)}, min ${fmt(sorted[0], 2)}, max ${fmt(sorted.at(-1)!, 2)}`,
  );
}

/** Stops the servers and removes their directories. */
export async function stopAll(servers: BenchSvc[]): Promise<void> {
  for (const server of servers) {
    await server.stop();
    await Deno.remove(server.dir, { recursive: true }).catch(() => {});
  }
}
