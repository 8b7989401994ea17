/**
 * Inputs and reference measurements for scripts/bench/delta.ts: a real artifact series (npm
 * tarballs, gunzipped to .tar), a synthetic pair with scattered changes, PUTs of files over raw
 * TCP, and the plain xdelta3 CLI on the same pairs as the yardstick.
 */
import { MiB } from "./lib.ts";

async function exists(path: string): Promise<boolean> {
  return await Deno.stat(path).then(() => true, () => false);
}

async function run(cmd: string, args: string[], cwd?: string): Promise<void> {
  const out = await new Deno.Command(cmd, { args, cwd, stdout: "piped", stderr: "piped" }).output();
  if (!out.success) {
    throw new Error(`${cmd} ${args.join(" ")} failed: ${new TextDecoder().decode(out.stderr)}`);
  }
}

/**
 * `<dir>/<pkg>-<version>.tar` for each version: fetched with `npm pack` once and gunzipped
 * (a .tgz is one gzip stream, which no delta can see through; the tar inside is what deltas well).
 */
export async function npmSeries(dir: string, pkg: string, versions: string[]): Promise<string[]> {
  await Deno.mkdir(dir, { recursive: true });
  const paths: string[] = [];
  for (const version of versions) {
    const tar = `${dir}/${pkg}-${version}.tar`;
    if (!(await exists(tar))) {
      const tgz = `${dir}/${pkg}-${version}.tgz`;
      if (!(await exists(tgz))) await run("npm", ["pack", `${pkg}@${version}`, "--silent"], dir);
      await run("sh", ["-c", `gzip -dc "${tgz}" > "${tar}.part" && mv "${tar}.part" "${tar}"`]);
    }
    paths.push(tar);
  }
  return paths;
}

function randomBlock(size: number): Uint8Array {
  const out = new Uint8Array(size);
  for (let i = 0; i < size; i += 65536) crypto.getRandomValues(out.subarray(i, i + 65536));
  return out;
}

/**
 * A random base of `sizeMiB` and a copy with `fraction` of its 4 KiB blocks replaced by random
 * ones at scattered positions: a large artifact rebuilt with a few changed regions.
 */
export async function syntheticPair(
  dir: string,
  sizeMiB: number,
  fraction = 0.01,
): Promise<[string, string]> {
  await Deno.mkdir(dir, { recursive: true });
  const base = `${dir}/synthetic-${sizeMiB}m-base.img`;
  const target = `${dir}/synthetic-${sizeMiB}m-target.img`;
  if ((await exists(base)) && (await exists(target))) return [base, target];
  const block = 4096;
  const blocks = (sizeMiB * MiB) / block;
  const changed = new Set<number>();
  while (changed.size < Math.round(blocks * fraction)) {
    changed.add(Math.floor(Math.random() * blocks));
  }
  const b = await Deno.open(base, { write: true, create: true, truncate: true });
  const t = await Deno.open(target, { write: true, create: true, truncate: true });
  try {
    for (let mib = 0; mib < sizeMiB; mib++) {
      const chunk = randomBlock(MiB);
      await writeAll(b, chunk);
      const first = (mib * MiB) / block;
      for (let i = 0; i < MiB / block; i++) {
        if (changed.has(first + i)) chunk.set(randomBlock(block), i * block);
      }
      await writeAll(t, chunk);
    }
  } finally {
    b.close();
    t.close();
  }
  return [base, target];
}

async function writeAll(w: { write(p: Uint8Array): Promise<number> }, bytes: Uint8Array) {
  for (let offset = 0; offset < bytes.length;) offset += await w.write(bytes.subarray(offset));
}

/** PUT of a file over raw HTTP/1.1 (see lib.ts rawPut for why not fetch). Returns the status. */
export async function rawPutFile(url: string, path: string): Promise<number> {
  const target = new URL(url);
  const { size } = await Deno.stat(path);
  const conn = await Deno.connect({ hostname: target.hostname, port: Number(target.port) });
  const file = await Deno.open(path, { read: true });
  try {
    const head = `PUT ${target.pathname} HTTP/1.1\r\nhost: ${target.host}\r\n` +
      `content-length: ${size}\r\nconnection: close\r\n\r\n`;
    await writeAll(conn, new TextEncoder().encode(head));
    const buffer = new Uint8Array(MiB);
    for (;;) {
      const n = await file.read(buffer);
      if (n === null) break;
      await writeAll(conn, buffer.subarray(0, n));
    }
    const response = await new Response(conn.readable).text();
    const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(response)?.[1]);
    if (status !== 200) throw new Error(`PUT ${url}: ${response}`);
    return status;
  } finally {
    file.close();
    try {
      conn.close();
    } catch { /* closed by the peer */ }
  }
}

/** GET of a whole object, drained; returns seconds and asserts the size. */
export async function timedGet(url: string, size: number): Promise<number> {
  const start = performance.now();
  const res = await fetch(url);
  let total = 0;
  for await (const chunk of res.body!) total += chunk.byteLength;
  const seconds = (performance.now() - start) / 1000;
  if (res.status !== 200 || total !== size) throw new Error(`GET ${url}: ${res.status}, ${total}`);
  return seconds;
}

/** The yardstick: `xdelta3 -e -D -W 1048576 -s ref -c target > out`; seconds and output bytes. */
export async function xdelta3Cli(
  reference: string,
  target: string,
  out: string,
): Promise<{ seconds: number; bytes: number }> {
  const start = performance.now();
  await run("sh", [
    "-c",
    `xdelta3 -e -D -W 1048576 -s "${reference}" -c "${target}" > "${out}"`,
  ]);
  const seconds = (performance.now() - start) / 1000;
  return { seconds, bytes: (await Deno.stat(out)).size };
}

/** Bytes of every file under `dir` (the stored form of one deltaspace). */
export async function bytesUnder(dir: string): Promise<number> {
  let total = 0;
  for await (const entry of Deno.readDir(dir)) {
    if (entry.isFile) total += (await Deno.stat(`${dir}/${entry.name}`)).size;
  }
  return total;
}

/** A sample of a Prometheus series from svc's /_/metrics (the first line that matches). */
export async function metric(baseUrl: string, series: string): Promise<number> {
  const text = await (await fetch(`${baseUrl}/_/metrics`)).text();
  const line = text.split("\n").find((l) => l.startsWith(series + " "));
  return line ? Number(line.slice(series.length + 1)) : NaN;
}
