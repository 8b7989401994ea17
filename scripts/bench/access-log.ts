/**
 * The cost of the access log on the small-PUT path: 4 KiB PUTs from concurrent clients against
 * two svc processes of this checkout in one run, one with `SVC_ACCESS_LOG=<file>` and one with
 * the log off; slices alternate inside each round (put-ab.ts) and the ratio is taken per round.
 * Checks at the end that the file holds one line per request of the logging server.
 *
 *   node_modules/.bin/deno run -A scripts/bench/access-log.ts [--small 1500] [--rounds 5] [--clients 32]
 */
import { ADMIN_PASSWORD_HASH } from "../../tests/helpers/admin.ts";
import { AB_SLICES, numberOption, startProcess } from "./lib.ts";
import { type BenchSvc, printRounds, putRounds, stopAll, WARM_PUTS } from "./put-ab.ts";

const ROOT = new URL("../../", import.meta.url).pathname;
const smallCount = numberOption("--small", 1500);
const rounds = numberOption("--rounds", 5);
const clients = numberOption("--clients", 32);

async function start(accessLog: string | null): Promise<BenchSvc> {
  const dir = await Deno.makeTempDir({ prefix: "bench-access-log-" });
  const server = await startProcess([`${ROOT}main.ts`, "--listen", "127.0.0.1:0"], {
    SVC_DATA_DIR: `${dir}/data`,
    SVC_AUTHENTICATION: "none",
    SVC_LOG_LEVEL: "info",
    SVC_BOOTSTRAP_PASSWORD_HASH: ADMIN_PASSWORD_HASH,
    SVC_ACCESS_LOG: accessLog === null ? "off" : `${dir}/${accessLog}`,
  }, dir);
  await fetch(`${server.url}/bench`, { method: "PUT" }).then((r) => r.body?.cancel());
  return { ...server, dir };
}

const on = await start("access.log");
const off = await start(null);
try {
  const rows = await putRounds(on, off, { count: smallCount, rounds, clients });
  printRounds(["logged (PUT/s)", "not logged (PUT/s)", "logged/not"], rows);
  await new Promise((resolve) => setTimeout(resolve, 300)); // the last flush
  const text = await Deno.readTextFile(`${on.dir}/access.log`);
  const lines = text.split("\n").filter((line) => line !== "").length;
  const expected = 1 + WARM_PUTS + Math.ceil(smallCount / AB_SLICES) * AB_SLICES * rounds;
  console.log(`access log: ${lines} lines for ${expected} requests, ${text.length} bytes`);
} finally {
  await stopAll([on, off]);
}
