/**
 * Issue 27: the cost of durable events on the 4 KiB PUT path. An S3 answer now waits for its
 * event's group commit; this measures that against a base tree (today's main:
 * `git archive main | tar -x -C /tmp/base && ln -s $PWD/node_modules /tmp/base/node_modules`).
 * Two svc processes in one run, this checkout ("on") and the base ("off"), both with the outbox
 * on (the default, delivery off); rounds of alternating slices as in put-ab.ts, ratio per round.
 * Also checks that every PUT of this checkout left its outbox row.
 *
 *   node_modules/.bin/deno run -A scripts/bench/events-durable.ts --base /tmp/base \
 *     [--small 3000] [--rounds 5] [--clients 32]
 */
import { ADMIN_PASSWORD_HASH, AdminClient } from "../../tests/helpers/admin.ts";
import { AB_SLICES, cpuSeconds, fmt, numberOption, startProcess } from "./lib.ts";
import { type BenchSvc, printRounds, putRounds, stopAll, WARM_PUTS } from "./put-ab.ts";

const ROOT = new URL("../../", import.meta.url).pathname;
const baseAt = Deno.args.indexOf("--base");
if (baseAt < 0 || !Deno.args[baseAt + 1]) throw new Error("--base <directory of the base tree>");
const base = Deno.args[baseAt + 1].replace(/\/?$/, "/");
const smallCount = numberOption("--small", 3000);
const rounds = numberOption("--rounds", 5);
const clients = numberOption("--clients", 32);

/** svc of the tree at `root` (no authentication, bucket `bench`) in a fresh temp dir. */
async function start(root: string): Promise<BenchSvc> {
  const dir = await Deno.makeTempDir({ prefix: "bench-durable-" });
  await Deno.writeTextFile(`${dir}/svc.yaml`, "{}");
  const server = await startProcess([`${root}main.ts`, "--listen", "127.0.0.1:0"], {
    SVC_DATA_DIR: `${dir}/data`,
    SVC_CONFIG: `${dir}/svc.yaml`,
    SVC_AUTHENTICATION: "none",
    SVC_LOG_LEVEL: "info",
    SVC_BOOTSTRAP_PASSWORD_HASH: ADMIN_PASSWORD_HASH,
  }, dir);
  await fetch(`${server.url}/bench`, { method: "PUT" }).then((r) => r.body?.cancel());
  return { ...server, dir };
}

const on = await start(ROOT);
const off = await start(base);
try {
  const cpuBefore = [await cpuSeconds(on.pid), await cpuSeconds(off.pid)];
  const rows = await putRounds(on, off, { count: smallCount, rounds, clients });
  const puts = WARM_PUTS + Math.ceil(smallCount / AB_SLICES) * AB_SLICES * rounds;
  const cpuMs = async (pid: number, before: number) =>
    fmt((await cpuSeconds(pid) - before) * 1000 / puts, 3);
  const admin = new AdminClient(on.url);
  await admin.login();
  const outbox = await admin.json<{ total: number }>("GET", "/event-outbox?limit=1");
  const expected = puts;
  console.log(`${clients} clients, ${smallCount} PUTs a side per round`);
  printRounds(["durable (PUT/s)", "base (PUT/s)", "durable/base"], rows);
  console.log(
    `server CPU per PUT: durable ${await cpuMs(on.pid, cpuBefore[0])} ms, base ${await cpuMs(
      off.pid,
      cpuBefore[1],
    )} ms`,
  );
  console.log(`outbox rows ${outbox.total} for ${expected} PUTs (read at once, no wait)`);
  console.log(
    `load average ${fmt(Number((await Deno.readTextFile("/proc/loadavg")).split(" ")[0]), 2)}`,
  );
} finally {
  await stopAll([on, off]);
}
