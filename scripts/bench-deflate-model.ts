/**
 * CPU cost of the deflate model (issue 28): expands and contracts corpus archives with the token
 * form code of this tree, and with `--save DIR` / `--compare DIR` keeps or checks the expanded
 * forms byte for byte (the model is part of the storage format: a speed change must not change
 * one byte). Measure with `/usr/bin/time -f %U` (CPU time; wall time means nothing on a shared
 * machine):
 *
 *   /usr/bin/time -f %U deno run -A scripts/bench-deflate-model.ts [--save DIR|--compare DIR] FILE...
 */
import { Buffer } from "node:buffer";
import { cpuUsage } from "node:process";
import { contractFile, expandFile, stopModelThreads } from "../src/delta/archive/token-files.ts";

const args = [...Deno.args];
let save: string | undefined;
let compare: string | undefined;
for (const flag of ["--save", "--compare"]) {
  const at = args.indexOf(flag);
  if (at >= 0) {
    if (flag === "--save") save = args[at + 1];
    else compare = args[at + 1];
    args.splice(at, 2);
  }
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
