/**
 * CPU cost of the deflate model (issue 28): expands and contracts corpus archives with the token
 * form code of this tree, and with `--save DIR` / `--compare DIR` keeps or checks the expanded
 * forms byte for byte (the model is part of the storage format: a speed change must not change
 * one byte). Measure with `/usr/bin/time -f %U` (CPU time; wall time means nothing on a shared
 * machine):
 *
 *   /usr/bin/time -f %U deno run -A scripts/bench-deflate-model.ts [--save DIR|--compare DIR] FILE...
 *
 * `--model SETS` times the model alone instead (next()/accept() over a .tgz's content, or a tar's,
 * with the parameter sets given, e.g. 0,1,2; `--runs N`, default 5), and with `--against FILE`
 * (another tree's deflate-model.ts) that model too, alternating, in the same process: MB/s of
 * content per CPU second, median (min-max), and the ratio of the medians.
 *
 *   deno run -A scripts/bench-deflate-model.ts --model 0,1,2 [--against ../main/src/…/deflate-model.ts] FILE
 */
import { Buffer } from "node:buffer";
import { cpuUsage } from "node:process";
import { gunzipSync } from "node:zlib";
import { contractFile, expandFile, stopModelThreads } from "../src/delta/archive/token-files.ts";
import * as model from "../src/delta/archive/model/deflate-model.ts";

const args = [...Deno.args];
const save = option("--save");
const compare = option("--compare");
const sets = option("--model");
const against = option("--against");
const runs = Number(option("--runs") ?? 5);
if (sets !== undefined) {
  await benchModel(sets.split(",").map(Number));
  Deno.exit(0);
}
const dir = Deno.makeTempDirSync();
let failed = false;
try {
  for (const file of args) {
    const format = file.endsWith(".zip") || file.endsWith(".jar") ? "zip" : "gzip";
    const name = file.split("/").pop()!;
    const started = cpuUsage().user;
    const t0 = performance.now();
    const result = await expandFile(format, file, `${dir}/x`);
    const expanded = cpuUsage().user;
    const t1 = performance.now();
    await contractFile(`${dir}/x`, `${dir}/out`);
    const contracted = cpuUsage().user;
    const t2 = performance.now();
    const same = equal(Deno.readFileSync(file), Deno.readFileSync(`${dir}/out`));
    const form = Deno.readFileSync(`${dir}/x`);
    let formCheck = "";
    if (save !== undefined) Deno.writeFileSync(`${save}/${name}.form`, form);
    if (compare !== undefined) {
      const before = Deno.readFileSync(`${compare}/${name}.form`);
      formCheck = equal(before, form) ? " form identical" : " FORM DIFFERS";
      if (!equal(before, form)) failed = true;
    }
    if (!result.ok || !same) failed = true;
    console.log(
      `${name}: form ${form.length} bytes, expand ${ms(expanded - started)} ms CPU ` +
        `(${Math.round(t1 - t0)} ms wall), contract ${ms(contracted - expanded)} ms CPU ` +
        `(${Math.round(t2 - t1)} ms wall), rebuild ${same ? "exact" : "DIFFERS"}` +
        formCheck,
    );
  }
} finally {
  stopModelThreads();
  Deno.removeSync(dir, { recursive: true });
}
if (failed) Deno.exit(1);

function equal(a: Uint8Array, b: Uint8Array): boolean {
  return Buffer.compare(a, b) === 0;
}

function ms(micros: number): string {
  return (micros / 1000).toFixed(0);
}

function option(flag: string): string | undefined {
  const at = args.indexOf(flag);
  if (at < 0) return undefined;
  const value = args[at + 1];
  args.splice(at, 2);
  return value;
}

/** The model alone on each file's content: this tree's, and `--against`'s, alternating. */
async function benchModel(setIds: number[]): Promise<void> {
  type Model = typeof model;
  const sides: [string, Model][] = [["this tree", model]];
  if (against !== undefined) {
    const url = new URL(against, `file://${Deno.cwd()}/`).href;
    sides.unshift(["against", await import(url) as Model]);
  }
  for (const file of args) {
    const raw = Deno.readFileSync(file);
    const data = file.endsWith(".tar") ? raw : new Uint8Array(gunzipSync(raw));
    console.log(`${file.split("/").pop()}: ${(data.length / 1e6).toFixed(1)} MB of content`);
    for (const set of setIds) {
      const rates: number[][] = sides.map(() => []);
      for (let r = 0; r < runs; r++) {
        sides.forEach(([, m], side) => {
          const started = cpuUsage().user;
          const run = new m.DeflateModel(data, m.MODEL_PARAMS[set]);
          while (run.next()) run.accept();
          rates[side].push(data.length / (cpuUsage().user - started));
        });
      }
      const medians = rates.map(median);
      const cells = sides.map(([name], side) =>
        `${name} ${medians[side].toFixed(1)} (${Math.min(...rates[side]).toFixed(1)}-` +
        `${Math.max(...rates[side]).toFixed(1)}) MB/s`
      );
      const ratio = sides.length > 1 ? `, ratio ${(medians[1] / medians[0]).toFixed(2)}` : "";
      console.log(`  set ${set}: ${cells.join(", ")}${ratio}`);
    }
  }
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[sorted.length >> 1];
}
