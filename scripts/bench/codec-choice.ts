/**
 * Issue 28, item 4: which delta codec and flags. On version pairs of the savings corpus
 * (scripts/bench/corpus/), each codec variant encodes the newer release against the older one and
 * decodes it back (checked byte-identical with cmp); reported per kind of file: delta bytes
 * (summed over the pairs) and the ratio, encode and decode MiB/s of target data (wall time and per
 * CPU-second of the codec process), and the codec process's peak RSS (`/usr/bin/time`, max over
 * pairs), median and spread over rounds.
 *
 * The target goes in through a pipe and the delta comes out on stdout, as svc runs the codecs
 * (src/delta/codec/); decode reads the delta on stdin and writes a file (decodeToFile).
 *
 *   node_modules/.bin/deno run -A scripts/bench/codec-choice.ts [--rounds 3] [--kinds tar,zip,img]
 *     [--against previous|first] [--variants xdelta3,xdelta3-B,zstd-3,zstd-9,zstd-19]
 *     [--corpus DIR] [--json out.json]
 *
 * Kinds `tgz-tokens`, `zip-tokens`, `jar-tokens`: the archives of that kind expanded into their
 * token form first (src/delta/archive/, what svc encodes for an archive), then paired the same
 * way.
 */
import { buildCorpus, defaultCorpusDir } from "./corpus/build.ts";
import { corpusSeries } from "./corpus/series.ts";
import { windowLog } from "../../src/delta/codec/zstd-codec.ts";
import { MiB } from "./lib.ts";
import { expandArchive } from "../../src/delta/archive/archive-codec.ts";

const arg = (name: string, fallback: string) => {
  const i = Deno.args.indexOf(name);
  return i >= 0 ? Deno.args[i + 1] : fallback;
};
const rounds = Number(arg("--rounds", "3"));
const kinds = arg("--kinds", "tar,zip,img").split(",");
const against = arg("--against", "previous");
const corpusDir = arg("--corpus", defaultCorpusDir());

interface Variant {
  name: string;
  encode(ref: string, refBytes: number, targetBytes: number): string;
  decode(ref: string): string;
}

const XDELTA_DECODE = (ref: string) => `xdelta3 -d -s "${ref}" -c`;
const zstd = (level: number): Variant => ({
  name: `zstd-${level}`,
  encode: (ref, refBytes, targetBytes) =>
    `zstd -q --single-thread -${level} --long=${windowLog(refBytes, targetBytes)} ` +
    `--patch-from="${ref}" -c --stream-size=${targetBytes}`,
  decode: (ref) => `zstd -d -q --long=31 --patch-from="${ref}" -c`,
});
const VARIANTS: Variant[] = [
  {
    name: "xdelta3",
    encode: (ref) => `xdelta3 -e -D -W 1048576 -s "${ref}" -c`,
    decode: XDELTA_DECODE,
  },
  {
    // The source window (default 64 MiB) sized to the whole baseline, in whole MiB.
    name: "xdelta3-B",
    encode: (ref, refBytes) =>
      `xdelta3 -e -D -W 1048576 -B ${Math.max(1, Math.ceil(refBytes / MiB)) * MiB} -s "${ref}" -c`,
    decode: XDELTA_DECODE,
  },
  zstd(3),
  zstd(9),
  zstd(19),
];
const wanted = arg("--variants", VARIANTS.map((v) => v.name).join(",")).split(",");
const variants = VARIANTS.filter((v) => wanted.includes(v.name));

interface Timed {
  wall: number;
  cpu: number;
  rssKiB: number;
}

/** Runs `cmd` (stdin from `input`, stdout to `output`) under /usr/bin/time. */
async function timedRun(cmd: string, input: string, output: string): Promise<Timed> {
  const script = `cat "${input}" | /usr/bin/time -f "%e %U %S %M" -o "${output}.time" ${cmd} ` +
    `> "${output}"`;
  const out = await new Deno.Command("sh", { args: ["-c", script], stderr: "piped" }).output();
  if (!out.success) {
    throw new Error(`${cmd} failed: ${new TextDecoder().decode(out.stderr)}`);
  }
  const text = await Deno.readTextFile(`${output}.time`);
  const [wall, user, sys, rss] = text.trim().split("\n").at(-1)!.split(" ").map(Number);
  return { wall, cpu: user + sys, rssKiB: rss };
}

async function same(a: string, b: string): Promise<boolean> {
  return (await new Deno.Command("cmp", { args: ["-s", a, b] }).output()).success;
}

interface Row {
  deltaBytes: number[];
  targetBytes: number;
  encWall: number[];
  encCpu: number[];
  decWall: number[];
  decCpu: number[];
  encRss: number[];
  decRss: number[];
}

await buildCorpus(corpusDir);
const pairs: { kind: string; ref: string; target: string }[] = [];
const work = await Deno.makeTempDir({ prefix: "svc-codec-choice-" });
/** The token form of an archive, in the work dir (what svc encodes for it). */
async function tokenForm(path: string, ext: string): Promise<string> {
  const out = `${work}/${path.split("/").at(-1)}.tokens`;
  const result = await expandArchive(ext === "tgz" ? "gzip" : "zip", path, out);
  if (!result.ok) throw new Error(`${path} has no token form: ${result.reason}`);
  return out;
}
for (const s of corpusSeries(corpusDir)) {
  const tokens = kinds.includes(`${s.ext}-tokens`);
  if (!kinds.includes(s.ext) && !tokens) continue;
  const kind = tokens ? `${s.ext}-tokens` : s.ext;
  const files = tokens ? [] : s.files;
  for (const f of tokens ? s.files : []) files.push(await tokenForm(f, s.ext));
  for (let i = 1; i < files.length; i++) {
    pairs.push({ kind, ref: files[against === "first" ? 0 : i - 1], target: files[i] });
  }
}
const rows = new Map<string, Row>();
try {
  for (let round = 0; round < rounds; round++) {
    // Per round: sums over the pairs of one kind.
    const acc = new Map<string, Omit<Row, "deltaBytes"> & { delta: number }>();
    for (const p of pairs) {
      const refBytes = (await Deno.stat(p.ref)).size;
      const targetBytes = (await Deno.stat(p.target)).size;
      for (const v of variants) {
        const id = `${p.kind}|${v.name}`;
        const a = acc.get(id) ?? {
          delta: 0,
          targetBytes: 0,
          encWall: [0],
          encCpu: [0],
          decWall: [0],
          decCpu: [0],
          encRss: [0],
          decRss: [0],
        };
        acc.set(id, a);
        const delta = `${work}/delta`, back = `${work}/back`;
        const enc = await timedRun(v.encode(p.ref, refBytes, targetBytes), p.target, delta);
        const dec = await timedRun(v.decode(p.ref), delta, back);
        if (!(await same(back, p.target))) throw new Error(`${v.name}: ${p.target} differs`);
        a.delta += (await Deno.stat(delta)).size;
        a.targetBytes += targetBytes;
        a.encWall[0] += enc.wall;
        a.encCpu[0] += enc.cpu;
        a.decWall[0] += dec.wall;
        a.decCpu[0] += dec.cpu;
        a.encRss[0] = Math.max(a.encRss[0], enc.rssKiB);
        a.decRss[0] = Math.max(a.decRss[0], dec.rssKiB);
      }
    }
    for (const [id, a] of acc) {
      const row = rows.get(id) ?? {
        deltaBytes: [],
        targetBytes: a.targetBytes,
        encWall: [],
        encCpu: [],
        decWall: [],
        decCpu: [],
        encRss: [],
        decRss: [],
      };
      rows.set(id, row);
      row.deltaBytes.push(a.delta);
      row.encWall.push(a.encWall[0]);
      row.encCpu.push(a.encCpu[0]);
      row.decWall.push(a.decWall[0]);
      row.decCpu.push(a.decCpu[0]);
      row.encRss.push(a.encRss[0]);
      row.decRss.push(a.decRss[0]);
    }
    console.error(`round ${round + 1} done`);
  }
} finally {
  await Deno.remove(work, { recursive: true });
}

function median(values: number[]): number {
  const s = [...values].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

/** "median (min-max)" of `values` mapped through `f` (a rate: min and max swap sides). */
function spread(values: number[], f: (v: number) => number, digits = 1): string {
  // /usr/bin/time counts CPU in 10 ms ticks: a sum under 50 ms is too short to divide by.
  if (values.some((v) => v < 0.05)) return "(too fast to time)";
  const mapped = values.map(f);
  const lo = Math.min(...mapped).toFixed(digits), hi = Math.max(...mapped).toFixed(digits);
  const m = median(mapped).toFixed(digits);
  return lo === hi ? m : `${m} (${lo}-${hi})`;
}

console.log(
  `pairs: each release against the ${against === "first" ? "series' first" : "previous"} one; ` +
    `rounds: ${rounds}; MiB/s of target data, median (min-max); RSS: max over pairs, MB\n`,
);
console.log(
  "| kind (pairs, target MiB) | variant | delta KiB | target/delta | encode MiB/s | " +
    "encode MiB/CPU-s | decode MiB/s | decode MiB/CPU-s | encode RSS MB | decode RSS MB |",
);
console.log("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |");
for (const kind of kinds) {
  const n = pairs.filter((p) => p.kind === kind).length;
  for (const v of variants) {
    const r = rows.get(`${kind}|${v.name}`);
    if (!r) continue;
    const mib = r.targetBytes / MiB;
    console.log(
      `| ${kind} (${n}, ${mib.toFixed(0)}) | ${v.name} | ` +
        `${(median(r.deltaBytes) / 1024).toFixed(1)} | ` +
        `${(r.targetBytes / median(r.deltaBytes)).toFixed(0)}x | ` +
        `${spread(r.encWall, (s) => mib / s)} | ${spread(r.encCpu, (s) => mib / s)} | ` +
        `${spread(r.decWall, (s) => mib / s)} | ${spread(r.decCpu, (s) => mib / s)} | ` +
        `${spread(r.encRss, (k) => k * 1024 / 1e6, 0)} | ${
          spread(r.decRss, (k) => k * 1024 / 1e6, 0)
        } |`,
    );
  }
}
const jsonPath = arg("--json", "");
if (jsonPath) await Deno.writeTextFile(jsonPath, JSON.stringify(Object.fromEntries(rows)));
