/**
 * Issue 28 leftovers: the archive worker pool. Expansions and contractions of real archives (the
 * savings corpus), one after the other, with the pool as svc runs it ("pooled": workers kept
 * between jobs) and as before the pool ("fresh": every job starts its own worker, emulated by
 * ending the pool's workers before each job). Rounds alternate the two; jobs/s and MiB/s of
 * archive, median (min-max) over rounds.
 *
 *   node_modules/.bin/deno run -A scripts/bench/archive-pool.ts [--rounds 5] [--jobs 20]
 *     [--files eslint-10.8.0.tgz,react-dom-19.2.3.zip] [--corpus DIR]
 */
import {
  contractArchive,
  expandArchive,
  shutdownArchiveWorkers,
} from "../../src/delta/archive/archive-codec.ts";
import { defaultCorpusDir } from "./corpus/build.ts";
import { MiB } from "./lib.ts";

const arg = (name: string, fallback: string) => {
  const i = Deno.args.indexOf(name);
  return i >= 0 ? Deno.args[i + 1] : fallback;
};
const rounds = Number(arg("--rounds", "5"));
const jobs = Number(arg("--jobs", "20"));
const corpus = arg("--corpus", defaultCorpusDir());
const files = arg("--files", "eslint-10.8.0.tgz,react-dom-19.2.3.zip").split(",");

const work = await Deno.makeTempDir({ prefix: "svc-archive-pool-" });
const median = (v: number[]) => [...v].sort((a, b) => a - b)[v.length >> 1];
const spread = (v: number[]) =>
  `${median(v).toFixed(1)} (${Math.min(...v).toFixed(1)}-${Math.max(...v).toFixed(1)})`;
try {
  console.log(
    `rounds ${rounds}, ${jobs} expansions then ${jobs} contractions per round and mode\n`,
  );
  console.log(
    "| archive | MiB | mode | expand jobs/s | expand MiB/s | contract jobs/s | contract MiB/s |",
  );
  console.log("| --- | --- | --- | --- | --- | --- | --- |");
  for (const name of files) {
    const path = `${corpus}/${name.split(".").at(-1)}/${name}`;
    const size = (await Deno.stat(path)).size;
    const format = name.endsWith(".tgz") ? "gzip" : "zip";
    const rates: Record<string, { expand: number[]; contract: number[] }> = {
      fresh: { expand: [], contract: [] },
      pooled: { expand: [], contract: [] },
    };
    for (let round = 0; round < rounds; round++) {
      for (const mode of round % 2 ? ["pooled", "fresh"] : ["fresh", "pooled"]) {
        shutdownArchiveWorkers();
        if (mode === "pooled") await expandArchive(format, path, `${work}/warm`); // one started
        let t = performance.now();
        for (let i = 0; i < jobs; i++) {
          if (mode === "fresh") shutdownArchiveWorkers();
          const r = await expandArchive(format, path, `${work}/x`);
          if (!r.ok) throw new Error(`${name}: ${r.reason}`);
        }
        rates[mode].expand.push(jobs / ((performance.now() - t) / 1000));
        t = performance.now();
        for (let i = 0; i < jobs; i++) {
          if (mode === "fresh") shutdownArchiveWorkers();
          await contractArchive(`${work}/x`, `${work}/y`);
        }
        rates[mode].contract.push(jobs / ((performance.now() - t) / 1000));
      }
    }
    const mib = size / MiB;
    for (const mode of ["fresh", "pooled"]) {
      const { expand, contract } = rates[mode];
      console.log(
        `| ${name} | ${mib.toFixed(2)} | ${mode} | ${spread(expand)} | ` +
          `${spread(expand.map((r) => r * mib))} | ${spread(contract)} | ` +
          `${spread(contract.map((r) => r * mib))} |`,
      );
    }
  }
} finally {
  shutdownArchiveWorkers();
  await Deno.remove(work, { recursive: true });
}
