/**
 * Assembles the savings corpus (series.ts) into a cache directory outside the repo:
 *
 *   tgz/<pkg>-<v>.tgz   the registry tarball, checked against the registry's sha512 integrity
 *                       and against the sha256/size pinned in series.ts
 *   tar/<pkg>-<v>.tar   the same, gunzipped
 *   zip/<pkg>-<v>.zip   the extracted tree re-packed by Info-ZIP `zip -9 -X` (sorted names, one
 *                       fixed mtime), so consecutive versions differ only where content does
 *   jar/<pkg>-<v>.jar   the same tree through Python's zipfile at deflate level 6 (what `jar`
 *                       uses), META-INF/MANIFEST.MF first, sorted, fixed timestamps
 *   img/ts-cache-<v>.img  five consecutive typescript tars concatenated (series.ts)
 *   SHA256SUMS          sha256 and size of every file above, written by the build
 *
 * Idempotent: a file that exists and matches SHA256SUMS is kept; one that does not is rebuilt.
 *
 *   node_modules/.bin/deno run -A scripts/bench/corpus/build.ts [--dir ~/.cache/svc-corpus]
 *     [--print-pins]
 */
import {
  allReleases,
  corpusSeries,
  IMAGE_PACKAGE,
  IMAGE_RELEASES,
  IMAGE_WINDOW,
  PACKAGES,
  PINS,
} from "./series.ts";
import { createHash } from "node:crypto";

const REGISTRY = "https://registry.npmjs.org";
/** npm's own fixed tarball mtime (1985-10-26T08:15:00Z), used for every re-packed member. */
const FIXED_TOUCH = "1985-10-26 08:15:00 UTC";

export function defaultCorpusDir(): string {
  return `${Deno.env.get("HOME") ?? "/root"}/.cache/svc-corpus`;
}

function arg(name: string, fallback: string): string {
  const i = Deno.args.indexOf(name);
  return i >= 0 ? Deno.args[i + 1] : fallback;
}

async function exists(path: string): Promise<boolean> {
  return await Deno.stat(path).then(() => true, () => false);
}

async function sh(script: string, cwd?: string): Promise<void> {
  const out = await new Deno.Command("sh", {
    args: ["-c", script],
    cwd,
    stdout: "piped",
    stderr: "piped",
  }).output();
  if (!out.success) {
    throw new Error(`"${script}" failed: ${new TextDecoder().decode(out.stderr)}`);
  }
}

export async function sha256File(path: string): Promise<string> {
  const out = await new Deno.Command("sha256sum", { args: [path], stdout: "piped" }).output();
  if (!out.success) throw new Error(`sha256sum "${path}" failed`);
  return new TextDecoder().decode(out.stdout).split(" ")[0];
}

export type Sums = Map<string, { sha256: string; size: number }>;

/** sha256 and size of every corpus file, by path relative to the corpus dir. */
export async function readSums(dir: string): Promise<Sums> {
  const sums: Sums = new Map();
  const text = await Deno.readTextFile(`${dir}/SHA256SUMS`).catch(() => "");
  for (const line of text.split("\n")) {
    const [sha256, size, name] = line.split(" ");
    if (name) sums.set(name, { sha256, size: Number(size) });
  }
  return sums;
}

async function writeSums(dir: string, sums: Sums): Promise<void> {
  const lines = [...sums.entries()].sort(([a], [b]) => a < b ? -1 : 1)
    .map(([name, s]) => `${s.sha256} ${s.size} ${name}`);
  await Deno.writeTextFile(`${dir}/SHA256SUMS.part`, lines.join("\n") + "\n");
  await Deno.rename(`${dir}/SHA256SUMS.part`, `${dir}/SHA256SUMS`);
}

/** Whether `name` (relative to dir) exists with the sum recorded for it. */
async function upToDate(dir: string, name: string, sums: Sums): Promise<boolean> {
  const want = sums.get(name);
  if (!want || !(await exists(`${dir}/${name}`))) return false;
  const { size } = await Deno.stat(`${dir}/${name}`);
  return size === want.size && (await sha256File(`${dir}/${name}`)) === want.sha256;
}

async function record(dir: string, name: string, sums: Sums): Promise<void> {
  const path = `${dir}/${name}`;
  sums.set(name, { sha256: await sha256File(path), size: (await Deno.stat(path)).size });
}

async function download(dir: string, pkg: string, version: string): Promise<void> {
  const meta = await (await fetch(`${REGISTRY}/${pkg}/${version}`)).json();
  const integrity: string = meta.dist.integrity;
  const res = await fetch(meta.dist.tarball);
  if (!res.ok) throw new Error(`GET ${meta.dist.tarball}: ${res.status}`);
  const bytes = new Uint8Array(await res.arrayBuffer());
  const sha512 = createHash("sha512").update(bytes).digest("base64");
  if (integrity !== `sha512-${sha512}`) {
    throw new Error(`${pkg}@${version}: integrity "${integrity}" does not match the download`);
  }
  const pin = PINS[`${pkg}@${version}`];
  const sha256 = createHash("sha256").update(bytes).digest("hex");
  if (pin && (pin.sha256 !== sha256 || pin.size !== bytes.length)) {
    throw new Error(`${pkg}@${version}: sha256 ${sha256} (${bytes.length} B) is not the pin`);
  }
  await Deno.writeFile(`${dir}/tgz/${pkg}-${version}.tgz.part`, bytes);
  await Deno.rename(`${dir}/tgz/${pkg}-${version}.tgz.part`, `${dir}/tgz/${pkg}-${version}.tgz`);
}

/** The zip and jar re-packs of one release, from its extracted tree. */
async function repack(dir: string, pkg: string, version: string): Promise<void> {
  const work = await Deno.makeTempDir({ prefix: "svc-corpus-" });
  try {
    await sh(`tar -xzf "${dir}/tgz/${pkg}-${version}.tgz" -C "${work}"`);
    // Unpacked trees are normally under package/; a few packages use another top folder.
    await sh(`find . -exec touch -h -d "${FIXED_TOUCH}" {} + && chmod -R u+rwX,go+rX .`, work);
    const zip = `${dir}/zip/${pkg}-${version}.zip`;
    await sh(
      `rm -f "${zip}.part" && find . -type f | LC_ALL=C sort | ` +
        `zip -9 -X -q -@ "${zip}.part" && mv "${zip}.part" "${zip}"`,
      work,
    );
    const jar = `${dir}/jar/${pkg}-${version}.jar`;
    const py = await new Deno.Command("python3", {
      args: ["-c", JAR_PY, `${jar}.part`],
      cwd: work,
      stderr: "piped",
    }).output();
    if (!py.success) throw new Error(`jar re-pack failed: ${new TextDecoder().decode(py.stderr)}`);
    await Deno.rename(`${jar}.part`, jar);
  } finally {
    await Deno.remove(work, { recursive: true });
  }
}

/** Python: a jar-like zip of the current directory into argv[1] (deterministic). */
const JAR_PY = [
  "import os, sys, zipfile",
  "names = sorted(os.path.relpath(os.path.join(r, f), '.') for r, _, fs in os.walk('.') for f in fs)",
  "t = (1985, 10, 26, 8, 15, 0)",
  "with zipfile.ZipFile(sys.argv[1], 'w', zipfile.ZIP_DEFLATED, compresslevel=6) as z:",
  "    z.writestr(zipfile.ZipInfo('META-INF/MANIFEST.MF', t), 'Manifest-Version: 1.0\\r\\nCreated-By: svc-corpus\\r\\n\\r\\n', zipfile.ZIP_DEFLATED)",
  "    for n in names:",
  "        i = zipfile.ZipInfo(n, t)",
  "        i.external_attr = (os.stat(n).st_mode & 0o777 | 0o100000) << 16",
  "        with open(n, 'rb') as f: z.writestr(i, f.read(), zipfile.ZIP_DEFLATED, 6)",
].join("\n");

export async function buildCorpus(dir: string): Promise<void> {
  for (const sub of ["tgz", "tar", "zip", "jar", "img"]) {
    await Deno.mkdir(`${dir}/${sub}`, { recursive: true });
  }
  const sums = await readSums(dir);
  for (const { pkg, version } of allReleases()) {
    const tgz = `tgz/${pkg}-${version}.tgz`;
    if (!(await upToDate(dir, tgz, sums))) {
      console.error(`download ${pkg}@${version}`);
      await download(dir, pkg, version);
      await record(dir, tgz, sums);
    }
    const tar = `tar/${pkg}-${version}.tar`;
    if (!(await upToDate(dir, tar, sums))) {
      await sh(
        `gzip -dc "${dir}/${tgz}" > "${dir}/${tar}.part" && mv "${dir}/${tar}.part" ` +
          `"${dir}/${tar}"`,
      );
      await record(dir, tar, sums);
    }
    if (!PACKAGES[pkg]?.includes(version)) continue;
    const zip = `zip/${pkg}-${version}.zip`;
    const jar = `jar/${pkg}-${version}.jar`;
    if (!(await upToDate(dir, zip, sums)) || !(await upToDate(dir, jar, sums))) {
      console.error(`repack ${pkg}@${version}`);
      await repack(dir, pkg, version);
      await record(dir, zip, sums);
      await record(dir, jar, sums);
    }
    await writeSums(dir, sums);
  }
  for (let k = 0; k + IMAGE_WINDOW <= IMAGE_RELEASES.length; k++) {
    const img = `img/ts-cache-${IMAGE_RELEASES[k]}.img`;
    if (await upToDate(dir, img, sums)) continue;
    const parts = IMAGE_RELEASES.slice(k, k + IMAGE_WINDOW)
      .map((v) => `"${dir}/tar/${IMAGE_PACKAGE}-${v}.tar"`).join(" ");
    await sh(`cat ${parts} > "${dir}/${img}.part" && mv "${dir}/${img}.part" "${dir}/${img}"`);
    await record(dir, img, sums);
    await writeSums(dir, sums);
  }
  await writeSums(dir, sums);
  for (const series of corpusSeries(dir)) {
    for (const file of series.files) {
      if (!(await exists(file))) throw new Error(`corpus file "${file}" is missing`);
    }
  }
}

if (import.meta.main) {
  const dir = arg("--dir", defaultCorpusDir());
  await buildCorpus(dir);
  const sums = await readSums(dir);
  if (Deno.args.includes("--print-pins")) {
    for (const { pkg, version } of allReleases()) {
      const s = sums.get(`tgz/${pkg}-${version}.tgz`)!;
      console.log(`  "${pkg}@${version}": { sha256: "${s.sha256}", size: ${s.size} },`);
    }
  }
  const total = (sub: string) =>
    [...sums.entries()].filter(([n]) => n.startsWith(sub)).reduce((a, [, s]) => a + s.size, 0);
  for (const sub of ["tgz", "tar", "zip", "jar", "img"]) {
    console.log(`${sub}: ${(total(sub) / 1048576).toFixed(1)} MiB`);
  }
  console.log(`corpus ready in ${dir}`);
}
