/**
 * Encrypted GET against plaintext GET, nothing else: quicker to iterate on than encryption.ts.
 * One svc without encryption and one (or more) with `aes256-gcm-proxy`, each holding the same
 * object (PUT once), then `--rounds` rounds of one full GET per server, alternating the order.
 * Per GET: wall MiB/s and the server's CPU seconds per GiB (all threads: steadier than wall time on
 * a shared machine); per round the ratio of each encrypted server to the plaintext one. `--base
 * DIR` adds a second encrypted server run from another checkout (an A/B of two trees in one run:
 * `git archive <commit> | tar -x -C DIR` and a `node_modules` symlink). `--prof DIR` starts the
 * encrypted server(s) with `--cpu-prof` into DIR. Ends with the servers' peak RSS.
 *
 *   node_modules/.bin/deno run -A scripts/bench/encryption-get.ts [--size-mib 512] [--rounds 5]
 *     [--base /tmp/encget-base] [--prof /tmp/prof]
 */
import {
  cpuSeconds,
  drain,
  encryptionBenchEnv,
  fmt,
  GiB,
  MiB,
  numberOption,
  peakRss,
  rawPut,
  startProcess,
  timed,
} from "./lib.ts";

const sizeBytes = numberOption("--size-mib", 512) * MiB;
const rounds = numberOption("--rounds", 5);
const textOption = (name: string) => {
  const i = Deno.args.indexOf(name);
  return i >= 0 ? Deno.args[i + 1] : undefined;
};
const base = textOption("--base");
const prof = textOption("--prof");
/** Extra environment of the --base server (NAME=VALUE), e.g. a GLIBC_TUNABLES setting. */
const baseEnv = textOption("--base-env");
/** The same for the encrypted server of this checkout (--env NAME=VALUE). */
const ownEnv = textOption("--env");
const envOf = (setting: string | undefined): Record<string, string> => {
  if (!setting) return {};
  const [name, ...value] = setting.split("=");
  return { [name]: value.join("=") };
};
const ROOT = new URL("../../", import.meta.url).pathname;

const dirs: string[] = [];
async function startSvc(
  name: string,
  root: string,
  encrypted: boolean,
  extraEnv: Record<string, string> = {},
) {
  const dir = await Deno.makeTempDir({ prefix: `bench-encget-${name}-` });
  dirs.push(dir);
  const env = { ...(await encryptionBenchEnv(dir, encrypted)), ...extraEnv };
  const flags = encrypted && prof ? ["--cpu-prof", `--cpu-prof-dir=${prof}/${name}`] : [];
  const server = await startProcess(
    [...flags, `${root}/main.ts`, "--listen", "127.0.0.1:0"],
    env,
    dir,
  );
  await fetch(`${server.url}/bench`, { method: "PUT" }).then((r) => r.body?.cancel());
  const { status, response } = await rawPut(`${server.url}/bench/big`, sizeBytes);
  if (status !== 200) throw new Error(`${name} PUT ${status}: ${response}`);
  return { name, url: `${server.url}/bench/big`, pid: server.pid, stop: server.stop };
}

const targets = [
  await startSvc("plaintext", ROOT, false),
  await startSvc("encrypted", ROOT, true, envOf(ownEnv)),
];
if (base) targets.push(await startSvc("encrypted-base", base, true, envOf(baseEnv)));

/** Minor page faults of a process so far (a fresh page touched: the cost of fresh buffers). */
async function minorFaults(pid: number): Promise<number> {
  const stat = await Deno.readTextFile(`/proc/${pid}/stat`);
  return Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[7]);
}

type Measured = { rate: number; cpu: number; faults: number };
const rows: Record<string, Measured>[] = [];
try {
  await new Deno.Command("sync").output();
  for (let round = 0; round < rounds; round++) {
    const order = round % 2 === 0 ? targets : [...targets].reverse();
    const row: Record<string, Measured> = {};
    for (const t of order) {
      const before = await cpuSeconds(t.pid);
      const faultsBefore = await minorFaults(t.pid);
      const got = await timed(async () => {
        const n = await drain((await fetch(t.url)).body);
        if (n !== sizeBytes) throw new Error(`${t.name} GET got ${n} bytes`);
      });
      const cpu = (await cpuSeconds(t.pid) - before) * GiB / sizeBytes;
      const faults = (await minorFaults(t.pid) - faultsBefore) * GiB / sizeBytes;
      row[t.name] = { rate: sizeBytes / MiB / got.seconds, cpu, faults };
    }
    rows.push(row);
    const load = (await Deno.readTextFile("/proc/loadavg")).split(" ")[0];
    console.error(
      `round ${round} (load ${load}): ` +
        targets.map((t) =>
          `${t.name} ${fmt(row[t.name].rate)} MiB/s ${fmt(row[t.name].cpu, 2)} CPU-s/GiB ` +
          `${fmt(row[t.name].faults, 0)} faults/GiB`
        ).join(", "),
    );
  }
  const median = (values: number[]) => [...values].sort((a, b) => a - b)[values.length >> 1];
  const spread = (values: number[], digits: number) =>
    `${fmt(median(values), digits)} (${fmt(Math.min(...values), digits)}-${
      fmt(Math.max(...values), digits)
    })`;
  console.log(
    `| ${
      sizeBytes / MiB
    } MiB GET | MiB/s | CPU-s/GiB | page faults/GiB | wall ratio to plaintext |`,
  );
  console.log("|---|---|---|---|---|");
  for (const t of targets) {
    const ratios = rows.map((r) => r[t.name].rate / r.plaintext.rate);
    console.log(
      `| ${t.name} | ${spread(rows.map((r) => r[t.name].rate), 1)} | ${
        spread(rows.map((r) => r[t.name].cpu), 2)
      } | ${spread(rows.map((r) => r[t.name].faults), 0)} | ${spread(ratios, 2)} |`,
    );
  }
  for (const t of targets) {
    const status = await Deno.readTextFile(`/proc/${t.pid}/status`);
    const rss = Number(/VmRSS:\s+(\d+) kB/.exec(status)?.[1]) * 1024;
    console.log(
      `${t.name}: peak RSS ${fmt(await peakRss(t.pid) / 1e6)} MB, RSS at the end ${
        fmt(rss / 1e6)
      } MB`,
    );
  }
} finally {
  for (const t of targets) await t.stop();
  for (const dir of dirs) await Deno.remove(dir, { recursive: true }).catch(() => {});
}
