/**
 * Delta compression in svc against the plain xdelta3 CLI, in one run on one machine:
 *
 * - a real series: consecutive npm tarballs of one package (`npm pack`, gunzipped to .tar),
 *   uploaded in order into one deltaspace;
 * - a synthetic pair: a random base and a copy with 1% of its 4 KiB blocks changed.
 *
 * For each: PUT time of the versions after the first vs `xdelta3 -e -D -W 1048576 -s ref -c
 * target > out` on the same pairs; stored bytes (baseline + deltas on disk) vs the CLI's output
 * plus one baseline; warm GET of the delta objects vs GET of the same bytes stored passthrough
 * (uploaded under `.bin`); cold GET after a restart (empty reference cache); peak RSS (VmHWM) of
 * the server. Prints a Markdown table for docs/BENCHMARKS.md.
 *
 *   node_modules/.bin/deno run -A scripts/bench/delta.ts [--cache /tmp/svc-bench-delta]
 *     [--pkg typescript] [--versions 5.6.2,5.6.3,5.7.2,5.7.3] [--size-mib 100] [--rounds 3]
 */
import { fmt, GiB, MiB, peakRss, type Started, startProcess } from "./lib.ts";
import {
  bytesUnder,
  metric,
  npmSeries,
  rawPutFile,
  syntheticPair,
  timedGet,
  xdelta3Cli,
} from "./delta-inputs.ts";

const arg = (name: string, fallback: string) => {
  const i = Deno.args.indexOf(name);
  return i >= 0 ? Deno.args[i + 1] : fallback;
};
const cacheDir = arg("--cache", "/tmp/svc-bench-delta");
const pkg = arg("--pkg", "typescript");
const versions = arg("--versions", "5.6.2,5.6.3,5.7.2,5.7.3").split(",");
const sizeMiB = Number(arg("--size-mib", "100"));
const rounds = Number(arg("--rounds", "3"));
const ROOT = new URL("../../", import.meta.url).pathname;
const BUCKET = "bench";

interface Dataset {
  name: string;
  files: string[];
}

interface Result {
  name: string;
  versions: number;
  baselineBytes: number;
  /** How each version after the first was stored. */
  kinds: string[];
  putSeconds: number;
  passthroughPutSeconds: number;
  svcEncodeSeconds: number;
  cliSeconds: number;
  storedBytes: number;
  cliBytes: number;
  warmGetSeconds: number;
  passthroughGetSeconds: number;
  coldGetSeconds: number;
  warmLastGetSeconds: number;
}

const baseName = (path: string) => path.slice(path.lastIndexOf("/") + 1);
const sync = () => new Deno.Command("sync").output();
const sum = (values: number[]) => values.reduce((a, b) => a + b, 0);

function startSvc(dataDir: string): Promise<Started> {
  return startProcess([`${ROOT}main.ts`, "--listen", "127.0.0.1:0"], {
    SVC_DATA_DIR: dataDir,
    SVC_AUTHENTICATION: "none",
    SVC_MAX_OBJECT_SIZE: String(4 * GiB),
    // The documented minimum for delta workloads (smaller sizes log an advisory).
    SVC_CACHE_MB: "1024",
    SVC_LOG_LEVEL: "info",
  }, dataDir);
}

/** Best of `rounds` for each version after the first; returns the per-version minima. */
async function bestOf(
  files: string[],
  work: (file: string, i: number) => Promise<number>,
): Promise<number[]> {
  const best: number[] = [];
  for (let round = 0; round < rounds; round++) {
    for (let i = 1; i < files.length; i++) {
      const seconds = await work(files[i], i);
      best[i - 1] = Math.min(best[i - 1] ?? Infinity, seconds);
    }
  }
  return best;
}

async function measure(svc: Started, dataDir: string, set: Dataset): Promise<Result> {
  const deltaUrl = (file: string) => `${svc.url}/${BUCKET}/${set.name}/${baseName(file)}`;
  const plainUrl = (file: string) => `${svc.url}/${BUCKET}/${set.name}-plain/${baseName(file)}.bin`;
  const sizes = await Promise.all(set.files.map(async (f) => (await Deno.stat(f)).size));
  const timedPut = async (url: string, file: string) => {
    await sync(); // neither side pays for the other's writeback
    const start = performance.now();
    await rawPutFile(url, file);
    return (performance.now() - start) / 1000;
  };

  await timedPut(deltaUrl(set.files[0]), set.files[0]); // creates the baseline
  const encodeBefore = await metric(svc.url, "svc_delta_encode_duration_seconds_sum");
  // Round 1 stores each version; later rounds overwrite it (same work: encode against the
  // baseline, which never changes).
  const put = await bestOf(set.files, (file) => timedPut(deltaUrl(file), file));
  const svcEncode = (await metric(svc.url, "svc_delta_encode_duration_seconds_sum")) -
    encodeBefore;
  const passthroughPut = await bestOf(set.files, (file) => timedPut(plainUrl(file), file));
  const work = await Deno.makeTempDir({ prefix: "bench-delta-cli-" });
  const cliBytes: number[] = [];
  const cli = await bestOf(set.files, async (file, i) => {
    const out = await xdelta3Cli(set.files[0], file, `${work}/${i}.vcdiff`);
    cliBytes[i - 1] = out.bytes;
    return out.seconds;
  });
  await Deno.remove(work, { recursive: true });

  const stored = `${dataDir}/${BUCKET}/${set.name}`;
  const names = new Set<string>();
  for await (const entry of Deno.readDir(stored)) names.add(entry.name);
  const kinds = set.files.slice(1).map((f) =>
    names.has(`${baseName(f)}.delta`) ? "delta" : "passthrough"
  );

  // Warm: one GET first so the baseline is in the reference cache.
  for (let i = 1; i < set.files.length; i++) await timedGet(deltaUrl(set.files[i]), sizes[i]);
  const warm = await bestOf(set.files, (file, i) => timedGet(deltaUrl(file), sizes[i]));
  const plain = await bestOf(set.files, (file, i) => timedGet(plainUrl(file), sizes[i]));
  return {
    name: set.name,
    versions: set.files.length,
    baselineBytes: sizes[0],
    kinds,
    putSeconds: sum(put),
    passthroughPutSeconds: sum(passthroughPut),
    svcEncodeSeconds: svcEncode / rounds,
    cliSeconds: sum(cli),
    storedBytes: await bytesUnder(stored),
    cliBytes: sizes[0] + sum(cliBytes),
    warmGetSeconds: sum(warm),
    passthroughGetSeconds: sum(plain),
    coldGetSeconds: NaN,
    warmLastGetSeconds: warm.at(-1)!,
  };
}

const datasets: Dataset[] = [
  { name: `npm-${pkg}`, files: await npmSeries(`${cacheDir}/npm`, pkg, versions) },
  { name: `synthetic-${sizeMiB}m`, files: await syntheticPair(`${cacheDir}/synthetic`, sizeMiB) },
];
const dataDir = await Deno.makeTempDir({ prefix: "bench-delta-svc-" });
let svc = await startSvc(dataDir);
const results: Result[] = [];
let rssWarm = NaN, rssCold = NaN;
try {
  await fetch(`${svc.url}/${BUCKET}`, { method: "PUT" }).then((r) => r.body?.cancel());
  for (const set of datasets) {
    results.push(await measure(svc, dataDir, set));
    console.error(`${set.name}: ${JSON.stringify(results.at(-1))}`);
  }
  rssWarm = await peakRss(svc.pid);

  // Cold: a fresh process has an empty reference cache; the first GET of each deltaspace reads
  // and verifies its baseline from disk.
  await svc.stop();
  svc = await startSvc(dataDir);
  for (const [i, set] of datasets.entries()) {
    const last = set.files.at(-1)!;
    const size = (await Deno.stat(last)).size;
    results[i].coldGetSeconds = await timedGet(
      `${svc.url}/${BUCKET}/${set.name}/${baseName(last)}`,
      size,
    );
  }
  rssCold = await peakRss(svc.pid);
} finally {
  await svc.stop();
  await Deno.remove(dataDir, { recursive: true });
}

const ratio = (a: number, b: number) => fmt(a / b, 2);
const row = (label: string, cells: string[]) => console.log(`| ${label} | ${cells.join(" | ")} |`);
console.log(`| measure | ${results.map((r) => r.name).join(" | ")} |`);
console.log(`|---|${results.map(() => "---").join("|")}|`);
row("versions (baseline MiB)", results.map((r) => `${r.versions} (${fmt(r.baselineBytes / MiB)})`));
row("stored as (after the first)", results.map((r) => r.kinds.join(", ")));
row(
  "PUT of later versions, svc / xdelta3 CLI (s)",
  results.map((r) =>
    `${fmt(r.putSeconds, 2)} / ${fmt(r.cliSeconds, 2)} = **${ratio(r.putSeconds, r.cliSeconds)}×**`
  ),
);
row(
  "svc encode incl. upload (metric, mean of rounds) / passthrough PUT (s)",
  results.map((r) => `${fmt(r.svcEncodeSeconds, 2)} / ${fmt(r.passthroughPutSeconds, 2)}`),
);
row(
  "stored bytes, svc / CLI output + baseline (MiB)",
  results.map((r) =>
    `${fmt(r.storedBytes / MiB, 2)} / ${fmt(r.cliBytes / MiB, 2)} = **${
      ratio(r.storedBytes, r.cliBytes)
    }×**`
  ),
);
row(
  "warm GET, delta / passthrough (s)",
  results.map((r) =>
    `${fmt(r.warmGetSeconds, 3)} / ${fmt(r.passthroughGetSeconds, 3)} = **${
      ratio(r.warmGetSeconds, r.passthroughGetSeconds)
    }×**`
  ),
);
row(
  "cold GET of the last version / its warm GET (s)",
  results.map((r) => `${fmt(r.coldGetSeconds, 3)} / ${fmt(r.warmLastGetSeconds, 3)}`),
);
console.log(
  `| server peak RSS, warm run / cold run (MB) | ${fmt(rssWarm / 1e6, 0)} / ${
    fmt(rssCold / 1e6, 0)
  } | |`,
);
console.log(`\n(best of ${rounds} rounds per version, summed over the versions after the first)`);
