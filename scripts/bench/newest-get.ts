/**
 * Issue 28: the newest version of an archive series read through the server that stored it (its
 * rebuilt bytes are cached since its PUT), against the same bytes read from a passthrough bucket
 * (`compression: false`), in alternating GETs of one run; the ratio per round, median and spread.
 * The series are stored under archive names (`builds/<pkg>-<version>.<ext>`) and measured once
 * their background conversions ended: the newest is an archive delta (checked).
 *
 *   node_modules/.bin/deno run -A scripts/bench/newest-get.ts [--series typescript.tgz,...] [--gets 20]
 *     [--older]
 */
import { corpusSeries, type Series } from "./corpus/series.ts";
import { conversionsDone } from "./savings-server.ts";
import { buildCorpus, defaultCorpusDir } from "./corpus/build.ts";
import { signedFetch, startSvc } from "../../tests/helpers/svc.ts";

const args = Deno.args;
const arg = (name: string, fallback: string) => {
  const at = args.indexOf(name);
  return at >= 0 ? args[at + 1] : fallback;
};
const gets = Number(arg("--gets", "20"));
/**
 * `--older`: the version before the newest instead, read once (cold: rebuilt from its delta
 * into the rebuilt-object cache) before the timed GETs, which then read it warm.
 */
const older = args.includes("--older");
const only = arg(
  "--series",
  "typescript.tgz,prettier.tgz,eslint.tgz,react-dom.tgz,react-dom.zip,eslint.jar",
);
const corpusDir = defaultCorpusDir();
await buildCorpus(corpusDir);
const series = corpusSeries(corpusDir).filter((s) => only.split(",").includes(s.name));

const configDir = await Deno.makeTempDir({ prefix: "svc-newest-" });
await Deno.writeTextFile(
  `${configDir}/svc.yaml`,
  "storage:\n  buckets:\n    plain: { compression: false }\n    flat: {}\n",
);
const svc = await startSvc({
  args: ["--config", `${configDir}/svc.yaml`],
  env: { SVC_CACHE_MB: "1024", SVC_REBUILT_CACHE_MB: "1024", SVC_DEBUG_HEADERS: "true" },
});
const median = (v: number[]) => [...v].sort((a, b) => a - b)[v.length >> 1];
/** An artifact's name, as a release series stores it (an archive name: an archive delta). */
const keyOf = (s: Series, i: number) => `builds/${s.pkg}-${s.versions[i]}.${s.ext}`;
try {
  for (const bucket of ["plain", "flat"]) {
    const res = await signedFetch(`${svc.url}/${bucket}`, { method: "PUT" });
    await res.body?.cancel();
  }
  console.log(
    "| series | newest MiB | plain GET ms | svc GET ms | ratio svc/plain speed (median, min-max) |",
  );
  console.log("| --- | --- | --- | --- | --- |");
  for (const s of series) {
    for (const [i, file] of s.files.entries()) {
      const body = await Deno.readFile(file);
      for (const bucket of ["plain", "flat"]) {
        const res = await signedFetch(`${svc.url}/${bucket}/${keyOf(s, i)}`, {
          method: "PUT",
          body,
        });
        if (res.status !== 200) throw new Error(`PUT ${s.name} ${i}: ${await res.text()}`);
        await res.body?.cancel();
      }
    }
    await conversionsDone(svc.url); // the newest is measured as stored: an archive delta
    const stored = await signedFetch(`${svc.url}/flat/${keyOf(s, s.files.length - 1)}`, {
      method: "HEAD",
    });
    const kind = stored.headers.get("x-amz-storage-type");
    if (kind !== "delta") throw new Error(`${s.name}: the newest is stored ${kind}`);
    const last = s.files.length - (older ? 2 : 1);
    const size = (await Deno.stat(s.files[last])).size;
    const time = async (bucket: string) => {
      const t = performance.now();
      const res = await signedFetch(`${svc.url}/${bucket}/${keyOf(s, last)}`);
      const n = (await res.arrayBuffer()).byteLength;
      if (res.status !== 200 || n !== size) throw new Error(`GET ${bucket}: ${res.status} ${n}`);
      return performance.now() - t;
    };
    if (older) await time("flat"); // the cold read that fills the rebuilt-object cache
    const plain: number[] = [], flat: number[] = [], ratios: number[] = [];
    for (let g = 0; g < gets; g++) {
      const p = await time("plain");
      const f = await time("flat");
      plain.push(p);
      flat.push(f);
      ratios.push(p / f);
    }
    console.log(
      `| ${s.name} | ${(size / 2 ** 20).toFixed(1)} | ${median(plain).toFixed(1)} | ${
        median(flat).toFixed(1)
      } | ` +
        `${median(ratios).toFixed(2)} (${Math.min(...ratios).toFixed(2)}-${
          Math.max(...ratios).toFixed(2)
        }) |`,
    );
  }
} finally {
  await svc.stop();
  await Deno.remove(configDir, { recursive: true });
}
