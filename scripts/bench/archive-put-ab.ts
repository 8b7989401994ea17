/**
 * Issue 28, "delta/archive PUT ≤ 2× today's delta PUT time for the same object": the same archive
 * PUT to two servers side by side, this tree and an older one (`--base`, e.g. the tree before
 * issue 28, whose delta path ran xdelta3 on the archive's raw bytes; a `.tgz` was no delta
 * candidate there and went passthrough), alternating object by object so both see the same noise
 * of a shared machine. Every series is PUT oldest first, as a release series arrives, to a bucket
 * per series on each server; each PUT's time is a sample, the ratio is this tree's time over the
 * base's for the same object, reported per series (median and spread over its versions 2..n: the
 * first version of a series makes a baseline on both sides) and over all of them.
 *
 * With background archive conversion (this tree's default, docs/DELTA.md "Archives converted in
 * the background") a PUT stores the archive as it came; the bench waits, untimed, until this
 * tree's conversions are done before the next PUT (a release series arrives a version at a time)
 * and reports that wait too: how long after its PUT answered an archive was stored as a delta.
 *
 *   node_modules/.bin/deno run -A scripts/bench/archive-put-ab.ts --base /tmp/old-4399500 \
 *     [--series typescript.tgz,react-dom.zip] [--rounds 1]
 */
import { CreateBucketCommand, PutObjectCommand, type S3Client } from "@aws-sdk/client-s3";
import { buildCorpus, defaultCorpusDir } from "./corpus/build.ts";
import { corpusSeries } from "./corpus/series.ts";
import {
  configYaml,
  conversionsDone,
  s3Client,
  type Server,
  startServer,
} from "./savings-server.ts";

const args = Deno.args;
const arg = (name: string, fallback: string) => {
  const at = args.indexOf(name);
  return at >= 0 ? args[at + 1] : fallback;
};
const ROOT = new URL("../../", import.meta.url).pathname.replace(/\/$/, "");
const base = arg("--base", "");
if (!base) throw new Error("--base DIR: the older tree to compare with (git archive <rev>)");
const rounds = Number(arg("--rounds", "1"));
const only = arg("--series", "");
const corpusDir = defaultCorpusDir();
await buildCorpus(corpusDir);
const series = corpusSeries(corpusDir).filter((s) =>
  ["tgz", "zip", "jar"].includes(s.ext) && (!only || only.split(",").includes(s.name))
);
const slug = (name: string) => name.replace(/[^a-z0-9]/g, "-");

async function start(tree: string): Promise<{ server: Server; client: S3Client; dirs: string[] }> {
  const dataDir = await Deno.makeTempDir({ prefix: "svc-put-ab-data-" });
  const configDir = await Deno.makeTempDir({ prefix: "svc-put-ab-conf-" });
  const config = `${configDir}/svc.yaml`;
  await Deno.writeTextFile(config, configYaml([], ["unused-plain"], {})); // no settings
  const server = await startServer(
    { tree, env: { SVC_CODEC_SLOT_WAIT_SECS: "120" } },
    dataDir,
    config,
  );
  const client = s3Client(server.url);
  for (const s of series) await client.send(new CreateBucketCommand({ Bucket: slug(s.name) }));
  return { server, client, dirs: [dataDir, configDir] };
}

const median = (v: number[]) => {
  const sorted = [...v].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
};
const spread = (v: number[], digits = 2) =>
  `${median(v).toFixed(digits)} (${Math.min(...v).toFixed(digits)}-${
    Math.max(...v).toFixed(digits)
  })`;

const rows = new Map<
  string,
  { ours: number[]; theirs: number[]; mib: number[]; converted: number[] }
>();
for (let round = 1; round <= rounds; round++) {
  const ours = await start(ROOT);
  const theirs = await start(base);
  try {
    for (const s of series) {
      const row = rows.get(s.name) ?? { ours: [], theirs: [], mib: [], converted: [] };
      rows.set(s.name, row);
      for (const [i, file] of s.files.entries()) {
        const body = await Deno.readFile(file);
        const key = `builds/${s.pkg}-${s.versions[i]}.${s.ext}`;
        const put = async (client: S3Client) => {
          const t = performance.now();
          await client.send(new PutObjectCommand({ Bucket: slug(s.name), Key: key, Body: body }));
          return (performance.now() - t) / 1000;
        };
        // Alternate which side goes first (the page cache, the machine's other load).
        let oursTime: number;
        let theirsTime: number;
        if (i % 2 === 0) {
          oursTime = await put(ours.client);
          theirsTime = await put(theirs.client);
        } else {
          theirsTime = await put(theirs.client);
          oursTime = await put(ours.client);
        }
        const converted = await conversionsDone(ours.server.url);
        if (i === 0) continue; // the baseline on both sides
        row.converted.push(converted);
        row.ours.push(oursTime);
        row.theirs.push(theirsTime);
        row.mib.push(body.length / 2 ** 20);
      }
      console.error(`round ${round}: ${s.name}`);
    }
  } finally {
    for (const side of [ours, theirs]) {
      side.client.destroy();
      await side.server.stop();
      for (const dir of side.dirs) await Deno.remove(dir, { recursive: true });
    }
  }
}

console.log(`this tree: ${ROOT}; base: ${base}; rounds: ${rounds}; versions 2..n of each series\n`);
console.log(
  "| series | MiB per PUT | this tree PUT s | base PUT s | this tree MiB/s | base MiB/s | time ratio this/base (median, spread) | converted s after the PUT |",
);
console.log("| --- | --- | --- | --- | --- | --- | --- | --- |");
const all: number[] = [];
for (const [name, row] of rows) {
  const ratios = row.ours.map((t, i) => t / row.theirs[i]);
  all.push(...ratios);
  const rate = (times: number[]) => median(row.mib.map((m, i) => m / times[i])).toFixed(1);
  console.log(
    `| ${name} | ${median(row.mib).toFixed(1)} | ${spread(row.ours)} | ${spread(row.theirs)} | ` +
      `${rate(row.ours)} | ${rate(row.theirs)} | ${spread(ratios)} | ${spread(row.converted)} |`,
  );
}
console.log(`\nall PUTs: time ratio this/base ${spread(all)}`);
