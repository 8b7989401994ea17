/**
 * Issue 28: what svc saves on real artifacts. Uploads every series of the corpus
 * (scripts/bench/corpus/) through the S3 API into a fresh server, in two layouts, and reports per
 * series and layout: raw bytes, stored bytes, the ratio, PUT MiB/s, cold and warm GET MiB/s, with a
 * passthrough bucket (`compression: false`) holding the same bytes as the reference, the server's
 * peak RSS, and the one-core recompression limit (node:zlib gzip) measured in the same run.
 *
 * Layouts, one bucket per series and layout (so series never share a baseline):
 *   flat      builds/<pkg>-<v>.<ext>        one deltaspace for the whole series
 *   folders   releases/<v>/<pkg>.<ext>      one folder per version
 *   plain     builds/<pkg>-<v>.<ext>        in a `compression: false` bucket (passthrough)
 *
 * Stored bytes: file sizes plus xattr names and values under the bucket's folder in the data dir
 * (svc keeps object metadata in xattrs), and beside it the usage API's `stored_bytes`
 * (`/_/stats?bucket=`). Cold GET: the server restarted on the same data dir (its baseline and
 * rebuilt-object caches start empty; the OS page cache is not dropped), every version read once,
 * the newest first (reported alone, and the older ones alone). Newest GET after PUT: the newest
 * version read once by the server that stored it, before the restart (the read pattern of
 * artifacts: a release is read most right after it is published). Warm GET: the same reads again
 * (rebuilt-object cache, sized to hold a series). Every GET is
 * checked byte-identical by sha256 against the corpus. Each round uses a fresh data dir.
 * Own level-9 limit: one core recompressing the series' newest version's deflate content (ownLimit)
 * as MiB of archive output a second, and the older versions' cold GET over it; also without the
 * first version (the group's baseline, which an archive series keeps as the archive's own bytes):
 * the versions rebuilt from deltas.
 * Archives are converted to deltas in the background by default (docs/DELTA.md): PUT MiB/s is what
 * the client waited for, "stored as deltas MiB/s" the series' bytes over the time until its last
 * conversion ended (the next series starts after that); stored bytes are measured once all ended.
 *
 *   node_modules/.bin/deno run -A scripts/bench/savings.ts [--rounds 3] [--corpus DIR]
 *     [--series typescript.tar,ts-cache.img] [--tree DIR | --server-cmd "svc serve"]
 *     [--bucket-setting deltaspace=parent]... [--env SVC_X=y]... [--json out.json] [--work /tmp]
 */
import { GetObjectCommand, PutObjectCommand, type S3Client } from "@aws-sdk/client-s3";
import { CreateBucketCommand } from "@aws-sdk/client-s3";
import { createHash } from "node:crypto";
import { deflateRawSync, gunzipSync, gzipSync } from "node:zlib";
import { unzipSync } from "fflate";
import { buildCorpus, defaultCorpusDir, readSums } from "./corpus/build.ts";
import { corpusSeries, type Series } from "./corpus/series.ts";
import { MiB, peakRss } from "./lib.ts";
import {
  adminCookie,
  bytesOnDisk,
  configYaml,
  conversionsDone,
  s3Client,
  type Server,
  type ServerSpec,
  startServer,
  usageStored,
} from "./savings-server.ts";

const ROOT = new URL("../../", import.meta.url).pathname.replace(/\/$/, "");
const args = Deno.args;
const arg = (name: string, fallback: string) => {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : fallback;
};
const rounds = Number(arg("--rounds", "3"));
const corpusDir = arg("--corpus", defaultCorpusDir());
const work = arg("--work", "/tmp");
const only = arg("--series", "");
const settings: Record<string, string> = {};
args.forEach((a, i) => {
  if (a !== "--bucket-setting") return;
  const [k, ...v] = args[i + 1].split("=");
  settings[k] = v.join("=");
});
const spec: ServerSpec = {
  tree: args.includes("--server-cmd") ? undefined : arg("--tree", ROOT),
  command: args.includes("--server-cmd") ? arg("--server-cmd", "") : undefined,
  env: {
    SVC_CACHE_MB: "1024",
    // Large enough for one layout of the largest series (6 x 110 MiB), so warm means warm.
    SVC_REBUILT_CACHE_MB: "1024",
  },
};
// Server environment, e.g. `--env SVC_STORAGE_COMPRESSION=off` (repeatable).
args.forEach((a, i) => {
  if (a !== "--env") return;
  const [k, ...v] = args[i + 1].split("=");
  spec.env![k] = v.join("=");
});

const LAYOUTS = ["flat", "folders", "plain"] as const;
type Layout = typeof LAYOUTS[number];
const slug = (s: Series, layout: Layout) =>
  `${s.name.replace(/[^a-z0-9]+/g, "-")}-${layout}`.slice(0, 63);
const keyOf = (s: Series, layout: Layout, i: number) =>
  layout === "folders"
    ? `releases/${s.versions[i]}/${s.pkg}.${s.ext}`
    : `builds/${s.pkg}-${s.versions[i]}.${s.ext}`;

interface Cell {
  raw: number;
  stored: number[];
  xattrs: number[];
  usage: number[];
  deltas: number[];
  put: number[];
  /** The series over the time until its last background conversion ended. */
  converted: number[];
  cold: number[];
  warm: number[];
  /** First GET of the newest version after the restart, and of the older versions. */
  newest: number[];
  older: number[];
  /** The older versions but the first (the group's baseline): the ones rebuilt from deltas. */
  olderDeltas?: number[];
  /** GET of the newest version right after the series' PUTs (before the restart). */
  fresh: number[];
}

const series = corpusSeries(corpusDir).filter((s) => !only || only.split(",").includes(s.name));
const cells = new Map<string, Cell>();
const rss = { put: [] as number[], get: [] as number[] };
const gzip = { l6: [] as number[], l9: [] as number[], l9out: [] as number[] };
let settingsNote = Object.keys(settings).length
  ? Object.entries(settings).map(([k, v]) => `${k}: ${v}`).join(", ")
  : "none";

async function put(client: S3Client, bucket: string, key: string, file: string) {
  const body = await Deno.readFile(file);
  await client.send(
    new PutObjectCommand({ Bucket: bucket, Key: key, Body: body, ContentLength: body.length }),
  );
}

async function getChecked(client: S3Client, bucket: string, key: string, sha256: string) {
  const out = await client.send(new GetObjectCommand({ Bucket: bucket, Key: key }));
  const hash = createHash("sha256");
  for await (const chunk of out.Body as AsyncIterable<Uint8Array>) hash.update(chunk);
  const got = hash.digest("hex");
  if (got !== sha256) throw new Error(`GET ${bucket}/${key}: sha256 ${got}, want ${sha256}`);
}

async function seconds(work: () => Promise<void>): Promise<number> {
  const start = performance.now();
  await work();
  return (performance.now() - start) / 1000;
}

/** One-core recompression limit: gzip of the largest tar in memory, input MiB/s. */
/**
 * One core's recompression speed on the largest tar's bytes (or the largest tgz's content): MiB
 * of input a second at levels 6 and 9, and at level 9 MiB of output a second, the rate at which
 * an exact rebuild of a level-9 archive could at best produce it by recompressing.
 */
function recompression(file: string) {
  const raw = Deno.readFileSync(file);
  const bytes = file.endsWith(".tgz") ? gunzipSync(raw) : raw;
  for (const [level, into] of [[6, gzip.l6], [9, gzip.l9]] as const) {
    const start = performance.now();
    const out = gzipSync(bytes, { level });
    const seconds = (performance.now() - start) / 1000;
    into.push(bytes.length / MiB / seconds);
    if (level === 9) gzip.l9out.push(out.length / MiB / seconds);
  }
}

/**
 * One core's level-9 recompression limit for an archive series' own content: its newest version's
 * deflate streams (the tgz's one, each zip member) inflated, then compressed again with
 * node:zlib at level 9, as MiB of archive output a second (median of three runs). An older
 * version's exact rebuild is compared with this rate of the same kind of content.
 */
function ownLimit(file: string): number | undefined {
  const raw = Deno.readFileSync(file);
  let contents: Uint8Array[];
  if (file.endsWith(".tgz")) contents = [gunzipSync(raw)];
  else if (file.endsWith(".zip") || file.endsWith(".jar")) {
    contents = Object.values(unzipSync(raw)).filter((member) => member.length > 0);
  } else return undefined;
  const runs: number[] = [];
  for (let run = 0; run < 3; run++) {
    let out = 0;
    const start = performance.now();
    for (const content of contents) out += deflateRawSync(content, { level: 9 }).length;
    runs.push(out / MiB / ((performance.now() - start) / 1000));
  }
  return median(runs);
}

async function start(dataDir: string, configDir: string, names: string[][]): Promise<Server> {
  const [compressed, plain] = names;
  const config = `${configDir}/svc.yaml`;
  await Deno.writeTextFile(config, configYaml(compressed, plain, settings));
  try {
    return await startServer(spec, dataDir, config);
  } catch (err) {
    if (!Object.keys(settings).length) throw err;
    // A server that does not know a setting refuses its config: run without it, and say so.
    console.error(`bucket settings refused, running without them: ${(err as Error).message}`);
    settingsNote += " (REFUSED by this server: measured without them)";
    for (const k of Object.keys(settings)) delete settings[k];
    await Deno.writeTextFile(config, configYaml(compressed, plain, settings));
    return await startServer(spec, dataDir, config);
  }
}

async function round(index: number) {
  const sums = await readSums(corpusDir);
  const sha = (file: string) => sums.get(file.slice(corpusDir.length + 1))!.sha256;
  const dataDir = await Deno.makeTempDir({ dir: work, prefix: "svc-savings-data-" });
  const configDir = await Deno.makeTempDir({ dir: work, prefix: "svc-savings-conf-" });
  const names = [
    series.flatMap((s) => [slug(s, "flat"), slug(s, "folders")]),
    series.map((s) => slug(s, "plain")),
  ];
  let server = await start(dataDir, configDir, names);
  try {
    let client = s3Client(server.url);
    for (const bucket of names.flat()) {
      await client.send(new CreateBucketCommand({ Bucket: bucket }));
    }
    const largest = (ext: string) =>
      series.filter((s) => s.ext === ext).flatMap((s) => s.files)
        .sort((a, b) => Deno.statSync(b).size - Deno.statSync(a).size)[0];
    const sample = largest("tar") ?? largest("tgz");
    if (sample) recompression(sample);
    for (const s of series) {
      const raw = s.files.reduce((sum, f) => sum + Deno.statSync(f).size, 0);
      for (const layout of LAYOUTS) {
        const id = `${s.name}|${layout}`;
        const cell = cells.get(id) ?? {
          raw,
          stored: [],
          xattrs: [],
          usage: [],
          deltas: [],
          put: [],
          converted: [],
          cold: [],
          warm: [],
          newest: [],
          older: [],
          fresh: [],
        };
        cells.set(id, cell);
        const bucket = slug(s, layout);
        const t = await seconds(async () => {
          for (let i = 0; i < s.files.length; i++) {
            await put(client, bucket, keyOf(s, layout, i), s.files[i]);
          }
        });
        cell.put.push(raw / MiB / t);
        cell.converted.push(raw / MiB / (t + await conversionsDone(server.url)));
      }
      console.error(`round ${index}: ${s.name} stored`);
    }
    rss.put.push(await peakRss(server.pid));
    // The newest version of each series, read while the server that stored it still runs.
    for (const s of series) {
      const last = s.files.length - 1;
      for (const layout of LAYOUTS) {
        const t = await seconds(() =>
          getChecked(client, slug(s, layout), keyOf(s, layout, last), sha(s.files[last]))
        );
        cells.get(`${s.name}|${layout}`)!.fresh.push(Deno.statSync(s.files[last]).size / MiB / t);
      }
    }
    const cookie = await adminCookie(server.url);
    for (const s of series) {
      for (const layout of LAYOUTS) {
        const cell = cells.get(`${s.name}|${layout}`)!;
        const disk = await bytesOnDisk(`${dataDir}/${slug(s, layout)}`);
        cell.stored.push(disk.files + disk.xattrs);
        cell.xattrs.push(disk.xattrs);
        cell.deltas.push(disk.deltas);
        cell.usage.push(await usageStored(server.url, cookie, slug(s, layout)));
      }
    }
    await server.stop();
    server = await start(dataDir, configDir, names);
    client = s3Client(server.url);
    for (const s of series) {
      for (const layout of LAYOUTS) {
        const cell = cells.get(`${s.name}|${layout}`)!;
        const bucket = slug(s, layout);
        const read = (i: number) =>
          getChecked(client, bucket, keyOf(s, layout, i), sha(s.files[i]));
        const last = s.files.length - 1;
        const lastSize = Deno.statSync(s.files[last]).size;
        // Cold: the newest version first (the one artifacts are mostly read at), then the others.
        const newest = await seconds(() => read(last));
        // Each older version timed alone: the first is the group's baseline, stored as the
        // archive's own bytes (read as they are), the others are deltas (rebuilt).
        const times: number[] = [];
        for (let i = 0; i < last; i++) times.push(await seconds(() => read(i)));
        const older = times.reduce((a, b) => a + b, 0);
        const firstSize = Deno.statSync(s.files[0]).size;
        const warm = await seconds(async () => {
          for (let i = 0; i < s.files.length; i++) await read(i);
        });
        cell.newest.push(lastSize / MiB / newest);
        cell.older.push((cell.raw - lastSize) / MiB / older);
        (cell.olderDeltas ??= []).push(
          (cell.raw - lastSize - firstSize) / MiB / (older - times[0]),
        );
        cell.cold.push(cell.raw / MiB / (newest + older));
        cell.warm.push(cell.raw / MiB / warm);
      }
    }
    rss.get.push(await peakRss(server.pid));
  } finally {
    await server.stop();
    await Deno.remove(dataDir, { recursive: true });
    await Deno.remove(configDir, { recursive: true });
  }
}

function median(values: number[]): number {
  const sorted = values.filter((v) => !Number.isNaN(v)).sort((a, b) => a - b);
  if (!sorted.length) return NaN;
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

/** "median (min-max)" with `digits`, or just the value when all rounds agree. */
function spread(values: number[], digits = 1): string {
  const m = median(values);
  const min = Math.min(...values), max = Math.max(...values);
  if (Number.isNaN(m)) return "n/a";
  if (min.toFixed(digits) === max.toFixed(digits)) return m.toFixed(digits);
  return `${m.toFixed(digits)} (${min.toFixed(digits)}-${max.toFixed(digits)})`;
}

await buildCorpus(corpusDir);
for (let r = 1; r <= rounds; r++) await round(r);

const mib = (b: number) => (b / MiB).toFixed(1);
const limits = new Map(series.map((s) => [s.name, ownLimit(s.files[s.files.length - 1])]));
console.log(
  `server: ${spec.command ?? spec.tree}; env: ${JSON.stringify(spec.env)}; ` +
    `bucket settings: ${settingsNote}; ` +
    `rounds: ${rounds}; MiB/s are MiB of logical data per second, median (min-max)\n`,
);
console.log(
  "| series | layout | raw MiB | stored MiB (disk+xattr) | usage API MiB | ratio | deltas | " +
    "PUT MiB/s | stored as deltas MiB/s | newest GET after PUT MiB/s | cold GET MiB/s | " +
    "newest cold GET MiB/s | " +
    "older cold GET MiB/s | older but the first, cold MiB/s | own level-9 limit MiB/s | " +
    "older cold / limit | older but the first / limit | warm GET MiB/s |",
);
console.log(
  "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- " +
    "| --- | --- |",
);
for (const s of series) {
  for (const layout of LAYOUTS) {
    const c = cells.get(`${s.name}|${layout}`)!;
    const stored = median(c.stored);
    const limit = limits.get(s.name);
    const ratio = c.stored.map((b) => c.raw / b);
    console.log(
      `| ${s.name} | ${layout} | ${mib(c.raw)} | ${mib(stored)} | ${mib(median(c.usage))} | ` +
        `${spread(ratio, 2)}x | ${median(c.deltas)}/${s.files.length} | ${spread(c.put)} | ` +
        `${spread(c.converted ?? [])} | ` +
        `${spread(c.fresh ?? [])} | ${spread(c.cold)} | ${spread(c.newest ?? [])} | ` +
        `${spread(c.older ?? [])} | ${spread(c.olderDeltas ?? [])} | ` +
        `${limit ? limit.toFixed(1) : "-"} | ` +
        `${limit && layout !== "plain" ? (median(c.older ?? []) / limit).toFixed(2) : "-"} | ` +
        `${
          limit && layout !== "plain" ? (median(c.olderDeltas ?? []) / limit).toFixed(2) : "-"
        } | ` +
        `${spread(c.warm)} |`,
    );
  }
}
console.log(
  `\nserver peak RSS (VmHWM, MB): after the PUTs ${spread(rss.put.map((b) => b / 1e6), 0)}, ` +
    `restarted server after the GETs ${spread(rss.get.map((b) => b / 1e6), 0)}`,
);
console.log(
  `one-core recompression limit (node:zlib gzipSync of the largest tar or tgz content, input MiB/s): ` +
    `level 6 ${spread(gzip.l6)}, level 9 ${spread(gzip.l9)} ` +
    `(level 9 output: ${spread(gzip.l9out)} MiB/s)`,
);
const jsonPath = arg("--json", "");
if (jsonPath) {
  await Deno.writeTextFile(
    jsonPath,
    JSON.stringify({ settings: settingsNote, cells: Object.fromEntries(cells), rss, gzip }),
  );
}
