/**
 * Large-PUT throughput and peak memory of svc against the bare fsync-ing Deno file server, each
 * measured on a freshly started process after `sync`, alternating, so neither pays for the
 * other's (or an earlier round's) disk writeback. Complements throughput.ts, whose back-to-back
 * writes make the PUT ratio swing with the kernel's writeback. The svc column also gives the
 * server's peak RSS (VmHWM) after that one PUT, so runs at several sizes show whether memory
 * grows with the body.
 *
 *   node_modules/.bin/deno run -A scripts/bench/put-fresh.ts [--size-mib 512] [--pairs 3]
 *     [--baseline scripts/bench/bare-server.ts]   # or /work/shared/bench/rawserver.ts
 *     [--before DIR]   # also the svc of another checkout
 */
import { cpuSeconds, fmt, GiB, MiB, peakRss, rawPut, startProcess, timed } from "./lib.ts";

const option = (name: string) => {
  const i = Deno.args.indexOf(name);
  return i >= 0 ? Deno.args[i + 1] : undefined;
};
const sizeBytes = Number(option("--size-mib") ?? 512) * MiB;
const pairs = Number(option("--pairs") ?? 3);
const ROOT = new URL("../../", import.meta.url).pathname;
const baselineScript = option("--baseline") ?? `${ROOT}scripts/bench/bare-server.ts`;
const beforeRoot = option("--before");

async function sync(): Promise<void> {
  await new Deno.Command("sync").output();
}

interface Measured {
  mibPerSecond: number;
  cpu: number;
  rss: number;
}

/** One PUT of `sizeBytes` into a freshly started server. */
async function measure(kind: "base" | "svc" | "before"): Promise<Measured> {
  const dir = await Deno.makeTempDir({ prefix: `bench-${kind}-` });
  const root = kind === "before" ? beforeRoot! : ROOT;
  const server = kind === "base"
    ? await startProcess([baselineScript, "--port", "0", "--dir", dir, "--fsync"])
    : await startProcess([`${root}/main.ts`, "--listen", "127.0.0.1:0"], {
      SVC_DATA_DIR: dir,
      SVC_AUTHENTICATION: "none",
      SVC_MAX_OBJECT_SIZE: String(8 * GiB),
      SVC_LOG_LEVEL: "info",
    }, dir);
  try {
    const base = `${server.url}/bench`;
    if (kind !== "base") await fetch(base, { method: "PUT" }).then((r) => r.body?.cancel());
    await sync();
    const cpuBefore = await cpuSeconds(server.pid);
    const { seconds, value } = await timed(() => rawPut(`${base}/object`, sizeBytes));
    if (value.status !== 200) throw new Error(`${kind} PUT ${value.status}: ${value.response}`);
    return {
      mibPerSecond: sizeBytes / MiB / seconds,
      cpu: await cpuSeconds(server.pid) - cpuBefore,
      rss: await peakRss(server.pid) / 1e6,
    };
  } finally {
    await server.stop();
    await Deno.remove(dir, { recursive: true });
    await sync();
  }
}

const kinds = beforeRoot ? ["base", "svc", "before"] as const : ["base", "svc"] as const;
const others = kinds.slice(1);
console.log(`${sizeBytes / MiB} MiB PUT; baseline ${baselineScript} --fsync`);
console.log(
  `| pair | base MiB/s (CPU s, RSS MB) | ${
    others.map((k) => `${k} MiB/s (CPU s, RSS MB) | ${k} / base`).join(" | ")
  } |`,
);
console.log(`|---|---|${others.map(() => "---|---|").join("")}`);
for (let i = 1; i <= pairs; i++) {
  const results: Partial<Record<string, Measured>> = {};
  // Alternate which goes first.
  for (const kind of i % 2 === 1 ? kinds : [...kinds].reverse()) {
    results[kind] = await measure(kind);
  }
  const cell = (m: Measured) => `${fmt(m.mibPerSecond)} (${fmt(m.cpu, 2)}, ${fmt(m.rss, 0)})`;
  const base = results.base!;
  console.log(
    `| ${i} | ${cell(base)} | ${
      others.map((k) =>
        `${cell(results[k]!)} | **${fmt(results[k]!.mibPerSecond / base.mibPerSecond, 2)}**`
      ).join(" | ")
    } |`,
  );
}
