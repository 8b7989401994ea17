/**
 * Cost and gain of storage compression (docs/COMPRESSION.md): two svc processes on the same
 * machine, one with `storage_compression: auto` (the default) and one with it `off`, measured
 * back to back in each round (alternating which goes first): PUT and GET of a compressible
 * object (CSV rows) and of random bytes, then 64 KiB range reads at random offsets of the
 * compressible one (a range decodes only the frames it covers). Prints median and spread
 * (min-max) over the rounds of wall-time rates and of server CPU (all threads, steadier than
 * wall time on a shared machine), the bytes each stores on disk, and the servers' peak RSS
 * (VmHWM).
 *
 *   node_modules/.bin/deno run -A scripts/bench/compressed-storage.ts [--size-mib 100]
 *     [--rounds 5] [--ranges 40]
 */
import { cpuSeconds, drain, fmt, MiB, numberOption, peakRss, startProcess, timed } from "./lib.ts";

const size = numberOption("--size-mib", 100) * MiB;
const rounds = numberOption("--rounds", 5);
const rangeCount = numberOption("--ranges", 40);
const ROOT = new URL("../../", import.meta.url).pathname;

/** CSV rows, exactly `n` bytes (zstd level 3 stores them in about a sixth). */
function csv(n: number): Uint8Array<ArrayBuffer> {
  const out = new Uint8Array(n);
  const encoder = new TextEncoder();
  let at = 0;
  for (let i = 0; at < n; i++) {
    const row = encoder.encode(
      `${i},customer-${(i * 31) % 9973},${(i * 7919) % 1000003},2026-11-${1 + i % 28},${
        i % 7 ? "paid" : "open"
      }\n`,
    );
    out.set(row.subarray(0, n - at), at);
    at += row.length;
  }
  return out;
}

function random(n: number): Uint8Array<ArrayBuffer> {
  const out = new Uint8Array(n);
  for (let at = 0; at < n; at += 65536) crypto.getRandomValues(out.subarray(at, at + 65536));
  return out;
}

async function diskBytes(dir: string): Promise<number> {
  const out = await new Deno.Command("du", { args: ["-sb", dir] }).output();
  return Number(new TextDecoder().decode(out.stdout).split("\t")[0]);
}

const dirs: string[] = [];
async function start(mode: "auto" | "off") {
  const dir = await Deno.makeTempDir({ prefix: `bench-zstd-${mode}-` });
  dirs.push(dir);
  const server = await startProcess([`${ROOT}/main.ts`, "--listen", "127.0.0.1:0"], {
    SVC_DATA_DIR: dir,
    SVC_AUTHENTICATION: "none",
    SVC_MAX_OBJECT_SIZE: String(4 * 1024 * MiB),
    SVC_STORAGE_COMPRESSION: mode,
  }, dir);
  await fetch(`${server.url}/bench`, { method: "PUT" }).then((r) => r.body?.cancel());
  return { mode, dir, server, url: `${server.url}/bench` };
}

const targets = [await start("auto"), await start("off")];
const bodies = { csv: csv(size), random: random(size) };
const measures: Record<string, Record<string, number[]>> = {};
const record = (measure: string, mode: string, value: number) => {
  ((measures[measure] ??= {})[mode] ??= []).push(value);
};

try {
  for (let round = 0; round < rounds; round++) {
    const order = round % 2 === 0 ? targets : [...targets].reverse();
    for (const t of order) {
      for (const [kind, body] of Object.entries(bodies)) {
        const cpu0 = await cpuSeconds(t.server.pid);
        const put = await timed(async () => {
          const res = await fetch(`${t.url}/${kind}-${round}.dat`, { method: "PUT", body });
          if (res.status !== 200) throw new Error(`${t.mode} PUT ${res.status}`);
          await res.body?.cancel();
        });
        const cpu1 = await cpuSeconds(t.server.pid);
        const get = await timed(async () => {
          const n = await drain((await fetch(`${t.url}/${kind}-${round}.dat`)).body);
          if (n !== size) throw new Error(`${t.mode} GET got ${n} bytes`);
        });
        const cpu2 = await cpuSeconds(t.server.pid);
        // Server CPU (all threads): steadier than wall time when other work shares the cores.
        record(`${kind} PUT, server CPU-s/GiB`, t.mode, (cpu1 - cpu0) * 1024 * MiB / size);
        record(`${kind} GET, server CPU-s/GiB`, t.mode, (cpu2 - cpu1) * 1024 * MiB / size);
        record(`${kind} PUT (MiB/s)`, t.mode, size / MiB / put.seconds);
        record(`${kind} GET (MiB/s)`, t.mode, size / MiB / get.seconds);
      }
      const cpuRanges = await cpuSeconds(t.server.pid);
      const ranged = await timed(async () => {
        for (let i = 0; i < rangeCount; i++) {
          const startAt = Math.floor(Math.random() * (size - 65536));
          const res = await fetch(`${t.url}/csv-${round}.dat`, {
            headers: { range: `bytes=${startAt}-${startAt + 65535}` },
          });
          const got = new Uint8Array(await res.arrayBuffer());
          if (res.status !== 206 || got.length !== 65536 || got[0] !== bodies.csv[startAt]) {
            throw new Error(`${t.mode} range read failed (${res.status})`);
          }
        }
      });
      record("64 KiB range GET (ms)", t.mode, ranged.seconds * 1000 / rangeCount);
      record(
        "64 KiB range GET, server CPU (ms)",
        t.mode,
        (await cpuSeconds(t.server.pid) - cpuRanges) * 1000 / rangeCount,
      );
      console.error(`round ${round} ${t.mode} done`);
    }
  }
  const median = (v: number[]) => [...v].sort((a, b) => a - b)[v.length >> 1];
  console.log(`${size / MiB} MiB objects, ${rounds} rounds: median (min-max)\n`);
  console.log("| measure | compression auto | compression off |");
  console.log("|---|---|---|");
  for (const [measure, byMode] of Object.entries(measures)) {
    const cell = (v: number[]) =>
      `${fmt(median(v), 2)} (${fmt(Math.min(...v), 2)}-${fmt(Math.max(...v), 2)})`;
    console.log(`| ${measure} | ${cell(byMode.auto)} | ${cell(byMode.off)} |`);
  }
  const disk = await Promise.all(targets.map((t) => diskBytes(`${t.dir}/bench`)));
  console.log(
    `| bytes on disk (${rounds} x csv + random) | ${fmt(disk[0] / MiB)} MiB | ${
      fmt(disk[1] / MiB)
    } MiB |`,
  );
  const rss = await Promise.all(targets.map((t) => peakRss(t.server.pid)));
  console.log(`| server peak RSS | ${fmt(rss[0] / MiB)} MiB | ${fmt(rss[1] / MiB)} MiB |`);
} finally {
  for (const t of targets) await t.server.stop();
  for (const dir of dirs) await Deno.remove(dir, { recursive: true }).catch(() => {});
}
