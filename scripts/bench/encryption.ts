/**
 * Cost of aes256-gcm-proxy: two svc processes on the same machine, one storing plaintext and one
 * with `storage.backend_encryption.mode: aes256-gcm-proxy`, measured back to back in each round
 * (alternating which goes first): a large PUT and GET (streamed), then 1 MiB range reads at
 * random offsets of that object (a range decrypts only the frames it covers, so it should cost
 * about what a plaintext one does). Ratios are taken inside each round; the spread across rounds
 * is printed, since the machine is shared. Server CPU seconds per GiB moved by PUT and GET are
 * recorded too (all threads of the server process: steadier than wall time when other work shares
 * the cores), and per range read (after the server went idle, so the GET's garbage collection is
 * not billed to the ranges). Ends with the peak RSS (VmHWM) of both servers. `--base DIR` adds
 * a third server, encrypted, run from another checkout (before/after in one run: `git archive
 * <commit> | tar -x -C DIR` and a `node_modules` symlink); its ratios to plaintext come last.
 *
 *   node_modules/.bin/deno run -A scripts/bench/encryption.ts [--size-mib 1024] [--rounds 3]
 *     [--ranges 40] [--base DIR]
 */
import {
  cpuSeconds,
  drain,
  encryptionBenchEnv,
  fmt,
  GiB,
  MiB,
  peakRss,
  rawPut,
  startProcess,
  timed,
} from "./lib.ts";

const option = (name: string) => {
  const i = Deno.args.indexOf(name);
  return i >= 0 ? Deno.args[i + 1] : undefined;
};
const sizeBytes = Number(option("--size-mib") ?? 1024) * MiB;
const rounds = Number(option("--rounds") ?? 3);
const rangeCount = Number(option("--ranges") ?? 40);
const base = option("--base");
const ROOT = new URL("../../", import.meta.url).pathname;

/** Waits until the server is idle (under 20 ms of CPU in 250 ms), at most 5 s. */
async function settle(pid: number) {
  for (let i = 0; i < 20; i++) {
    const before = await cpuSeconds(pid);
    await new Promise((resolve) => setTimeout(resolve, 250));
    if (await cpuSeconds(pid) - before < 0.02) return;
  }
}

const dirs: string[] = [];
async function startSvc(encrypted: boolean, root = ROOT) {
  const dir = await Deno.makeTempDir({ prefix: `bench-enc-${encrypted ? "on" : "off"}-` });
  dirs.push(dir);
  const env = await encryptionBenchEnv(dir, encrypted);
  const server = await startProcess([`${root}/main.ts`, "--listen", "127.0.0.1:0"], env, dir);
  await fetch(`${server.url}/bench`, { method: "PUT" }).then((r) => r.body?.cancel());
  return server;
}

const plain = await startSvc(false);
const sealed = await startSvc(true);
const before = base ? await startSvc(true, base) : null;
const targets = [
  { name: "plaintext", url: `${plain.url}/bench`, pid: plain.pid },
  { name: "aes256-gcm-proxy", url: `${sealed.url}/bench`, pid: sealed.pid },
];
if (before) targets.push({ name: "before", url: `${before.url}/bench`, pid: before.pid });
const compared = targets.slice(1).map((t) => t.name);
type Row = Record<string, number>;
const measures: Record<string, Row[]> = {};
const record = (measure: string, round: number, name: string, value: number) => {
  (measures[measure] ??= [])[round] ??= {};
  measures[measure][round][name] = value;
};

try {
  const label = `${sizeBytes / MiB} MiB`;
  for (let round = 0; round < rounds; round++) {
    const order = round % 2 === 0 ? targets : [...targets].reverse();
    for (const t of order) {
      await new Deno.Command("sync").output();
      const cpuStart = await cpuSeconds(t.pid);
      const put = await timed(async () => {
        const { status, response } = await rawPut(`${t.url}/big`, sizeBytes);
        if (status !== 200) throw new Error(`${t.name} PUT ${status}: ${response}`);
      });
      const cpuPut = await cpuSeconds(t.pid);
      const get = await timed(async () => {
        const n = await drain((await fetch(`${t.url}/big`)).body);
        if (n !== sizeBytes) throw new Error(`${t.name} GET got ${n} bytes`);
      });
      const cpuGet = await cpuSeconds(t.pid);
      await settle(t.pid); // the GET's garbage collected before ranges are timed
      const cpuRangesStart = await cpuSeconds(t.pid);
      const ranged = await timed(async () => {
        for (let i = 0; i < rangeCount; i++) {
          const start = Math.floor(Math.random() * (sizeBytes - MiB));
          const res = await fetch(`${t.url}/big`, {
            headers: { range: `bytes=${start}-${start + MiB - 1}` },
          });
          if (res.status !== 206 || (await drain(res.body)) !== MiB) {
            throw new Error(`${t.name} range read failed (${res.status})`);
          }
        }
      });
      const cpuRanges = await cpuSeconds(t.pid) - cpuRangesStart;
      const load = (await Deno.readTextFile("/proc/loadavg")).split(" ")[0];
      console.error(
        `round ${round} ${t.name} (load ${load}): PUT ${fmt(put.seconds, 2)} s, GET ${
          fmt(get.seconds, 2)
        } s, ` +
          `${rangeCount} ranges ${fmt(ranged.seconds, 2)} s`,
      );
      record(`${label} PUT (MiB/s)`, round, t.name, sizeBytes / MiB / put.seconds);
      record(`${label} GET (MiB/s)`, round, t.name, sizeBytes / MiB / get.seconds);
      // Server CPU: steadier than wall time on a shared machine.
      record(
        `${label} PUT, server CPU-s/GiB`,
        round,
        t.name,
        (cpuPut - cpuStart) * GiB / sizeBytes,
      );
      record(`${label} GET, server CPU-s/GiB`, round, t.name, (cpuGet - cpuPut) * GiB / sizeBytes);
      record(
        `1 MiB range read of ${label} (ms)`,
        round,
        t.name,
        ranged.seconds * 1000 / rangeCount,
      );
      record(`1 MiB range read, server CPU (ms)`, round, t.name, cpuRanges * 1000 / rangeCount);
    }
  }
  const rss = Object.fromEntries(
    await Promise.all(targets.map(async (t) => [t.name, await peakRss(t.pid) / 1e6] as const)),
  );

  const median = (values: number[]) => [...values].sort((a, b) => a - b)[values.length >> 1];
  console.log(
    `| measure | plaintext | ${
      compared.map((name) => `${name} | ratio (median, spread)`).join(" | ")
    } |`,
  );
  console.log(`|---|---|${compared.map(() => "---|---|").join("")}`);
  for (const [measure, rows] of Object.entries(measures)) {
    const cells = compared.map((name) => {
      const ratios = rows.map((r) => r[name] / r.plaintext);
      return `${fmt(median(rows.map((r) => r[name])))} | ${fmt(median(ratios), 2)} (${
        fmt(Math.min(...ratios), 2)
      }-${fmt(Math.max(...ratios), 2)})`;
    });
    console.log(
      `| ${measure} | ${fmt(median(rows.map((r) => r.plaintext)))} | ${cells.join(" | ")} |`,
    );
  }
  console.log(
    `| peak RSS (MB) | ${fmt(rss.plaintext)} | ${
      compared.map((name) => `${fmt(rss[name])} |`).join(" | ")
    } |`,
  );
} finally {
  await plain.stop();
  await sealed.stop();
  await before?.stop();
  for (const dir of dirs) await Deno.remove(dir, { recursive: true }).catch(() => {});
}
