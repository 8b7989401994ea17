/**
 * Throughput of svc against a bare Deno file server that fsyncs (the strongest baseline for a
 * durable PUT), in one run on one machine: large PUT and GET (streamed), then 4 KiB PUT and GET
 * from concurrent clients. Every round measures both servers back to back (alternating which goes
 * first) and the ratio is taken inside the round; the spread across rounds is printed, because
 * the machine is shared. Prints Markdown tables for docs/BENCHMARKS.md.
 *
 *   node_modules/.bin/deno run -A scripts/bench/throughput.ts [--size-mib 512] [--small 4000]
 *     [--rounds 3] [--clients 32] [--only large|small]
 *     [--baseline scripts/bench/bare-server.ts]   # or /work/shared/bench/rawserver.ts
 *     [--before DIR]   # also run the svc of another checkout (e.g. the commit before a change)
 *
 * The baseline script is started as `<script> --port 0 --dir DIR --fsync`.
 */
import { cpuSeconds, drain, fmt, GiB, MiB, peakRss, rawPut, startProcess, timed } from "./lib.ts";

const args = Deno.args;
const option = (name: string) => {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : undefined;
};
const numberOption = (name: string, fallback: number) => Number(option(name) ?? fallback);
const sizeBytes = numberOption("--size-mib", 512) * MiB;
const smallCount = numberOption("--small", 4000);
const rounds = numberOption("--rounds", 3);
const clients = numberOption("--clients", 32);
const only = option("--only");
const ROOT = new URL("../../", import.meta.url).pathname;
const baselineScript = option("--baseline") ?? `${ROOT}scripts/bench/bare-server.ts`;
const beforeRoot = option("--before");

/** Writes back dirty pages (sync) so a timed write does not pay for earlier ones. */
async function settleDisk(): Promise<void> {
  await new Deno.Command("sync").output();
}

/** Runs `smallCount` operations from `clients` concurrent clients; returns ops/s. */
async function hammer(work: (i: number) => Promise<void>): Promise<number> {
  let next = 0;
  const { seconds } = await timed(() =>
    Promise.all(Array.from({ length: clients }, async () => {
      while (next < smallCount) await work(next++);
    }))
  );
  return smallCount / seconds;
}

const dirs: string[] = [];
async function startSvc(root: string) {
  const dir = await Deno.makeTempDir({ prefix: "bench-svc-" });
  dirs.push(dir);
  const server = await startProcess([`${root}/main.ts`, "--listen", "127.0.0.1:0"], {
    SVC_DATA_DIR: dir,
    SVC_AUTHENTICATION: "none",
    SVC_MAX_OBJECT_SIZE: String(4 * GiB),
    SVC_LOG_LEVEL: "info",
  }, dir);
  await fetch(`${server.url}/bench`, { method: "PUT" }).then((r) => r.body?.cancel());
  return server;
}

const baseDir = await Deno.makeTempDir({ prefix: "bench-base-" });
dirs.push(baseDir);
const base = await startProcess([baselineScript, "--port", "0", "--dir", baseDir, "--fsync"]);
const svc = await startSvc(ROOT);
const before = beforeRoot ? await startSvc(beforeRoot) : undefined;

interface Target {
  name: string;
  url: string;
  pid: number;
}
const targets: Target[] = [
  { name: "base", url: `${base.url}/bench`, pid: base.pid },
  { name: "svc", url: `${svc.url}/bench`, pid: svc.pid },
  ...(before ? [{ name: "before", url: `${before.url}/bench`, pid: before.pid }] : []),
];
type Row = Record<string, number>;
const measures: Record<string, Row[]> = {};
const record = (measure: string, round: number, target: Target, value: number) => {
  (measures[measure] ??= [])[round] ??= {};
  measures[measure][round][target.name] = value;
};
const rss: Record<string, Row> = {};
const orderOf = (round: number) => round % 2 === 0 ? targets : [...targets].reverse();
const peaks = async () =>
  Object.fromEntries(
    await Promise.all(targets.map(async (t) => [t.name, await peakRss(t.pid) / 1e6] as const)),
  );

try {
  const largeName = `${sizeBytes / MiB} MiB`;
  if (only !== "small") {
    for (let round = 0; round < rounds; round++) {
      for (const t of orderOf(round)) {
        // Flush what earlier phases left dirty, so neither server pays for the other's writes.
        await settleDisk();
        const cpuBefore = await cpuSeconds(t.pid);
        const put = await timed(async () => {
          const { status, response } = await rawPut(`${t.url}/big`, sizeBytes);
          if (status !== 200) throw new Error(`${t.name} PUT ${status}: ${response}`);
        });
        const cpuPut = await cpuSeconds(t.pid) - cpuBefore;
        const get = await timed(async () => {
          const res = await fetch(`${t.url}/big`);
          const n = await drain(res.body);
          if (n !== sizeBytes) throw new Error(`${t.name} GET got ${n} bytes`);
        });
        console.error(
          `round ${round} ${t.name}: PUT ${fmt(put.seconds, 2)} s (server CPU ${
            fmt(cpuPut, 2)
          } s), GET ${fmt(get.seconds, 2)} s`,
        );
        record(`${largeName} PUT, server CPU (s)`, round, t, cpuPut);
        record(`${largeName} PUT (MiB/s)`, round, t, sizeBytes / MiB / put.seconds);
        record(`${largeName} GET (MiB/s)`, round, t, sizeBytes / MiB / get.seconds);
      }
    }
    rss[`peak RSS after ${largeName} (MB)`] = await peaks();
  }

  if (only !== "large") {
    const small = crypto.getRandomValues(new Uint8Array(4096));
    for (let round = 0; round < rounds; round++) {
      for (const t of orderOf(round)) {
        const cpuStart = await cpuSeconds(t.pid);
        const put = await hammer(async (i) => {
          const res = await fetch(`${t.url}/s${i % 1000}`, { method: "PUT", body: small });
          await res.body?.cancel();
          if (!res.ok) throw new Error(`${t.name} small PUT ${res.status}`);
        });
        const cpuMiddle = await cpuSeconds(t.pid);
        const get = await hammer(async (i) => {
          const res = await fetch(`${t.url}/s${i % 1000}`);
          if ((await drain(res.body)) !== 4096) throw new Error(`${t.name} small GET`);
        });
        const cpuEnd = await cpuSeconds(t.pid);
        // Server CPU per operation in µs: steadier than ops/s on a shared machine.
        const cpuPut = (cpuMiddle - cpuStart) / smallCount * 1e6;
        const cpuGet = (cpuEnd - cpuMiddle) / smallCount * 1e6;
        console.error(
          `round ${round} ${t.name}: 4 KiB PUT ${fmt(put, 0)}/s (${fmt(cpuPut, 0)} µs CPU), GET ${
            fmt(get, 0)
          }/s (${fmt(cpuGet, 0)} µs CPU)`,
        );
        record(`4 KiB PUT, server CPU per op (µs)`, round, t, cpuPut);
        record(`4 KiB GET, server CPU per op (µs)`, round, t, cpuGet);
        record(`4 KiB PUT, ${clients} clients (ops/s)`, round, t, put);
        record(`4 KiB GET, ${clients} clients (ops/s)`, round, t, get);
      }
    }
    rss["peak RSS at the end (MB)"] = await peaks();
  }

  const others = targets.slice(1).map((t) => t.name);
  const label = others.map((name) => `${name} / base`).join(", ");
  const header = Array.from({ length: rounds }, (_, i) => `round ${i + 1}: base, ${label}`);
  console.log(`baseline: ${baselineScript} --fsync${beforeRoot ? `; before: ${beforeRoot}` : ""}`);
  console.log(
    `| measure | ${header.join(" | ")} | ${others.map((n) => `${n} / base min–max`).join(" | ")} |`,
  );
  console.log(`|---|${header.map(() => "---|").join("")}${others.map(() => "---|").join("")}`);
  for (const [measure, rows] of Object.entries(measures)) {
    const digits = measure.includes("CPU (s)") ? 2 : 0;
    const cells = rows.map((r) =>
      [
        fmt(r.base, digits),
        ...others.map((n) => `**${fmt(r[n] / r.base, 2)}** (${fmt(r[n], digits)})`),
      ].join(", ")
    );
    const spreads = others.map((n) => {
      const ratios = rows.map((r) => r[n] / r.base);
      return `${fmt(Math.min(...ratios), 2)}–${fmt(Math.max(...ratios), 2)}`;
    });
    console.log(`| ${measure} | ${cells.join(" | ")} | ${spreads.join(" | ")} |`);
  }
  for (const [measure, row] of Object.entries(rss)) {
    const values = targets.map((t) => `${t.name} ${fmt(row[t.name], 0)}`).join(", ");
    console.log(`| ${measure} | ${values} |`);
  }
} finally {
  await svc.stop();
  await before?.stop();
  await base.stop();
  for (const dir of dirs) await Deno.remove(dir, { recursive: true });
}
