/**
 * Archive token form (issue 28 item 2): does an xdelta3 delta between the token forms of two
 * versions of a compressed archive approach the delta between their uncompressed contents?
 * Downloads consecutive npm tarballs of one package into a cache outside the repo, and for each
 * consecutive pair measures xdelta3 delta sizes of (a) the raw .tgz, (b) the decompressed .tar,
 * (c) the .tgz token forms, and the same for zips built from the extracted trees (`zip -9 -r`):
 * the raw .zip and its token form. Every token form is contracted back and compared with its
 * original (sha256). Expansion and contraction speeds are CPU MB/s of original bytes (the machine
 * is shared; wall time varies with its load), measured on every input and on `--speed` files.
 *
 * `--pairs old:new,…` adds any archive pairs (a jar's two versions, say): raw, content (`gzip -dc`
 * or `unzip -p`: the members concatenated) and token form deltas.
 *
 *   deno run -A scripts/bench/archive-token-form.ts [--package typescript]
 *     [--versions 5.4.3,5.4.4,5.4.5] [--cache ~/.cache/svc-archive] [--speed big.tgz,big.zip]
 *     [--pairs a-1.0.jar:a-1.1.jar]
 */
import process from "node:process";
import { createHash } from "node:crypto";
import { archiveFormatOf } from "../../src/delta/archive/archive-codec.ts";
import { contractFile, expandFile, stopModelThreads } from "../../src/delta/archive/token-files.ts";

const arg = (name: string, fallback: string) => {
  const i = Deno.args.indexOf(name);
  return i >= 0 ? Deno.args[i + 1] : fallback;
};
const pkg = arg("--package", "typescript");
const versions = arg("--versions", "5.4.3,5.4.4,5.4.5").split(",");
const cache = arg("--cache", `${Deno.env.get("HOME")}/.cache/svc-archive`);
const speedFiles = arg("--speed", "").split(",").filter(Boolean);
const pairs = arg("--pairs", "").split(",").filter(Boolean).map((pair) => pair.split(":"));
await Deno.mkdir(cache, { recursive: true });

async function run(cmd: string, args: string[], cwd?: string): Promise<void> {
  const { code, stderr } = await new Deno.Command(cmd, {
    args,
    cwd,
    stdout: "null",
    stderr: "piped",
  })
    .output();
  if (code !== 0) throw new Error(`${cmd} ${args.join(" ")}: ${new TextDecoder().decode(stderr)}`);
}

function sha256(path: string): string {
  return createHash("sha256").update(Deno.readFileSync(path)).digest("hex");
}

const cpuMs = () => {
  const usage = process.cpuUsage();
  return (usage.user + usage.system) / 1000;
};

const speeds: string[] = [];
/** Expands `path` to `path.svcx`, contracts it back, checks the bytes; records the speeds. */
async function tokenForm(path: string): Promise<string> {
  const format = archiveFormatOf(path) ?? "gzip";
  const size = Deno.statSync(path).size;
  const c0 = cpuMs();
  const expanded = await expandFile(format, path, `${path}.svcx`);
  const c1 = cpuMs();
  if (!expanded.ok) throw new Error(`${path}: ${expanded.reason}`);
  const rebuilt = await contractFile(`${path}.svcx`, `${path}.back`);
  const c2 = cpuMs();
  const exact = rebuilt.sha256 === sha256(path) && sha256(`${path}.back`) === rebuilt.sha256;
  Deno.removeSync(`${path}.back`);
  if (!exact) throw new Error(`${path}: the round trip is not exact`);
  speeds.push(
    `${path.slice(path.lastIndexOf("/") + 1)}: ${mb(size)} -> token form ${
      mb(expanded.expandedSize)
    }` +
      ` (${expanded.deflateStreams} deflate streams), exact; expand ${
        (size / 1e3 / (c1 - c0)).toFixed(1)
      } MB/s, contract ${(size / 1e3 / (c2 - c1)).toFixed(1)} MB/s (CPU)`,
  );
  return `${path}.svcx`;
}

function kb(bytes: number): string {
  return `${(bytes / 1e3).toFixed(1)} KB`;
}

function mb(bytes: number): string {
  return `${(bytes / 1e6).toFixed(2)} MB`;
}

/** Delta size of `target` against `source` with the given xdelta3 flags. */
async function delta(source: string, target: string, flags: string[]): Promise<number> {
  const out = `${target}.xd`;
  await run("xdelta3", ["-e", "-f", ...flags, "-s", source, target, out]);
  const size = (await Deno.stat(out)).size;
  await Deno.remove(out);
  return size;
}

const files: Record<string, string[]> = { tgz: [], tar: [], tgzForm: [], zip: [], zipForm: [] };
for (const version of versions) {
  const tgz = `${cache}/${pkg}-${version}.tgz`;
  try {
    await Deno.stat(tgz);
  } catch {
    const response = await fetch(`https://registry.npmjs.org/${pkg}/-/${pkg}-${version}.tgz`);
    if (!response.ok) throw new Error(`npm answered ${response.status} for ${pkg}@${version}`);
    await Deno.writeFile(tgz, new Uint8Array(await response.arrayBuffer()));
  }
  const tar = `${cache}/${pkg}-${version}.tar`;
  await run("sh", ["-c", `gzip -dc '${tgz}' > '${tar}'`]);
  const tree = `${cache}/${pkg}-${version}-tree`;
  await Deno.remove(tree, { recursive: true }).catch(() => {});
  await Deno.mkdir(tree);
  await run("tar", ["-xf", tar, "-C", tree]);
  const zip = `${cache}/${pkg}-${version}.zip`;
  await Deno.remove(zip).catch(() => {});
  await run("zip", ["-q", "-9", "-r", "-X", zip, "."], tree);
  files.tgz.push(tgz);
  files.tar.push(tar);
  files.tgzForm.push(await tokenForm(tgz));
  files.zip.push(zip);
  files.zipForm.push(await tokenForm(zip));
}
for (const path of speedFiles) Deno.removeSync(await tokenForm(path));

const FLAGS: [string, string[]][] = [
  ["svc (-D -W 1048576)", ["-D", "-W", "1048576"]],
  // -D as svc: without it xdelta3 decompresses gzip inputs itself and recompresses on decode,
  // which is not byte exact (and makes the raw .tgz look deceptively small).
  ["-D -9 -S djw", ["-D", "-9", "-S", "djw"]],
];
const labels: Record<string, string> = {
  tgz: "(a) raw .tgz",
  tar: "(b) .tar (content)",
  tgzForm: "(c) .tgz token form",
  zip: "raw .zip (zip -9)",
  zipForm: ".zip token form",
};
console.log(`# ${pkg} ${versions.join(" -> ")}, xdelta3 delta sizes (target size in brackets)\n`);
console.log(`| pair | input | ${FLAGS.map(([name]) => name).join(" | ")} |`);
console.log(`|---|---|${FLAGS.map(() => "---").join("|")}|`);
for (let i = 1; i < versions.length; i++) {
  for (const [kind, list] of Object.entries(files)) {
    const target = list[i];
    const sizes = [];
    for (const [, flags] of FLAGS) sizes.push(await delta(list[i - 1], target, flags));
    const total = (await Deno.stat(target)).size;
    console.log(
      `| ${versions[i - 1]} -> ${versions[i]} | ${labels[kind]} [${mb(total)}] | ${
        sizes.map((size) => `${kb(size)} (${((100 * size) / total).toFixed(2)}%)`).join(" | ")
      } |`,
    );
  }
}
if (pairs.length > 0) {
  console.log(`\n# Other pairs\n`);
  console.log(`| pair | input | ${FLAGS.map(([name]) => name).join(" | ")} |`);
  console.log(`|---|---|${FLAGS.map(() => "---").join("|")}|`);
}
for (const [from, to] of pairs) {
  const name = (path: string) => path.slice(path.lastIndexOf("/") + 1);
  const scratch = await Deno.makeTempDir({ prefix: "svc-bench-archive-" });
  try {
    const inputs: [string, string, string][] = [["raw", from, to]];
    for (const [i, path] of [from, to].entries()) {
      const copy = `${scratch}/${i}-${name(path)}`;
      await Deno.copyFile(path, copy);
      const content = `${scratch}/${i}.content`;
      const unpack = archiveFormatOf(path) === "zip" ? `unzip -p '${copy}'` : `gzip -dc '${copy}'`;
      await run("sh", ["-c", `${unpack} > '${content}'`]);
      inputs[0][i + 1] = copy;
      (inputs[1] ??= ["content", "", ""])[i + 1] = content;
      (inputs[2] ??= ["token form", "", ""])[i + 1] = await tokenForm(copy);
    }
    for (const [label, source, target] of inputs) {
      const sizes = [];
      for (const [, flags] of FLAGS) sizes.push(await delta(source, target, flags));
      const total = (await Deno.stat(target)).size;
      console.log(
        `| ${name(from)} -> ${name(to)} | ${label} [${mb(total)}] | ${
          sizes.map((size) => `${kb(size)} (${((100 * size) / total).toFixed(2)}%)`).join(" | ")
        } |`,
      );
    }
  } finally {
    await Deno.remove(scratch, { recursive: true });
  }
}
console.log("\n# Round trips (all exact) and speeds\n");
for (const line of speeds) console.log(`- ${line}`);
stopModelThreads(); // its idle helper threads would keep the process up
