/**
 * Listing cost against the size of the listed subtree (issue 11, "a listing grows with the
 * subtree, not the page"). Three buckets of `--keys` keys each, all under the prefix `x/`:
 *
 * - `ds`:  many deltaspaces with one artifact each, `x/1.0.<n>/app.zip` (stored as
 *          `reference.bin` + `app.zip.delta` in every deltaspace);
 * - `ver`: one deltaspace with many versions, `x/app-1.0.<n>.zip` (one `reference.bin`, a
 *          `.delta` per version);
 * - `txt`: plain keys, `x/file-<n>.txt`.
 *
 * The layout is built once under `--dir` (reused when it exists): a template server stores real
 * objects over HTTP (real xdelta3 deltas), then their files and metadata attributes are cloned
 * under the other names, so the tree is exactly what svc writes (same bytes per object), without
 * running the codec a million times. Then the real server is started on it and pages are timed
 * over HTTP: ListObjectsV2 prefix=x/ with max-keys 1 and 1000, the first page and a middle page
 * (continuation token), with and without delimiter `/`. Prints a Markdown table.
 *
 *   node_modules/.bin/deno run -A scripts/bench/listing.ts [--keys 100000] [--dir /tmp/svc-bench-listing]
 *     [--rounds 5] [--shapes ds,ver,txt] [--svc /path/to/other/checkout]
 *
 * `--svc` times the server of another checkout (e.g. `git archive <commit>` unpacked, with a
 * node_modules symlink) on the same data: the "before" column.
 */
import { peakRss, startProcess } from "./lib.ts";
import { getXattr, setXattr } from "../../src/native/xattr.ts";

const arg = (name: string, fallback: string) => {
  const i = Deno.args.indexOf(name);
  return i >= 0 ? Deno.args[i + 1] : fallback;
};
const keys = Number(arg("--keys", "100000"));
const baseDir = arg("--dir", "/tmp/svc-bench-listing");
const rounds = Number(arg("--rounds", "5"));
const shapes = arg("--shapes", "ds,ver,txt").split(",");
const ROOT = new URL("../../", import.meta.url).pathname;
/** The checkout whose main.ts is timed (another one measures "before"); templates use ours. */
const SVC_ROOT = arg("--svc", ROOT).replace(/\/?$/, "/");
const META = "user.svc.meta";
const BUCKET_XATTR = "user.svc.bucket";

const dataDir = `${baseDir}/${keys}`;

/** A small zip-like body: eligible for a delta by name, compresses well against its sibling. */
function artifact(version: number): Uint8Array<ArrayBuffer> {
  const text = `PK\u0003\u0004 app build ${version} `.repeat(400) + `end ${version}`;
  return new TextEncoder().encode(text);
}

interface StoredFile {
  bytes: Uint8Array;
  meta: Uint8Array;
}

function readStored(path: string): StoredFile {
  const meta = getXattr(path, META);
  if (!meta) throw new Error(`No metadata on "${path}": the template layout changed`);
  return { bytes: Deno.readFileSync(path), meta };
}

function writeStored(path: string, file: StoredFile) {
  Deno.writeFileSync(path, file.bytes);
  setXattr(path, META, file.meta);
}

/** Stores a few real objects through a template server and returns their files. */
async function template(): Promise<Record<string, StoredFile>> {
  const dir = await Deno.makeTempDir({ prefix: "svc-bench-listing-template-" });
  const server = await startProcess([`${ROOT}main.ts`, "--listen", "127.0.0.1:0"], {
    SVC_DATA_DIR: dir,
    SVC_AUTHENTICATION: "none",
    SVC_LOG_LEVEL: "info",
  }, dir);
  try {
    const put = async (path: string, body?: Uint8Array<ArrayBuffer>) => {
      const res = await fetch(`${server.url}/${path}`, { method: "PUT", body });
      if (res.status !== 200) throw new Error(`PUT ${path}: ${res.status} ${await res.text()}`);
      await res.body?.cancel();
    };
    await put("tpl");
    await put("tpl/d/1.0.0/app.zip", artifact(0));
    await put("tpl/v/app-1.0.0.zip", artifact(0));
    await put("tpl/v/app-1.0.1.zip", artifact(1));
    await put("tpl/t/file-0.txt", new TextEncoder().encode("plain text body\n"));
  } finally {
    await server.stop();
  }
  const at = (name: string) => readStored(`${dir}/tpl/${name}`);
  const files = {
    dsReference: at("d/1.0.0/reference.bin"),
    dsDelta: at("d/1.0.0/app.zip.delta"),
    verReference: at("v/reference.bin"),
    verDelta: at("v/app-1.0.1.zip.delta"),
    txt: at("t/file-0.txt"),
  };
  await Deno.remove(dir, { recursive: true });
  return files;
}

function makeBucket(name: string): string {
  const path = `${dataDir}/${name}`;
  Deno.mkdirSync(`${path}/x`, { recursive: true });
  setXattr(path, BUCKET_XATTR, new TextEncoder().encode(JSON.stringify({ created: Date.now() })));
  return `${path}/x`;
}

async function build(): Promise<void> {
  if (await Deno.stat(`${dataDir}/.complete`).catch(() => null)) return;
  await Deno.remove(dataDir, { recursive: true }).catch(() => {});
  const started = performance.now();
  const files = await template();
  const ds = makeBucket("ds");
  for (let n = 0; n < keys; n++) {
    Deno.mkdirSync(`${ds}/1.0.${n}`);
    writeStored(`${ds}/1.0.${n}/reference.bin`, files.dsReference);
    writeStored(`${ds}/1.0.${n}/app.zip.delta`, files.dsDelta);
  }
  const ver = makeBucket("ver");
  writeStored(`${ver}/reference.bin`, files.verReference);
  for (let n = 0; n < keys; n++) writeStored(`${ver}/app-1.0.${n}.zip.delta`, files.verDelta);
  const txt = makeBucket("txt");
  for (let n = 0; n < keys; n++) writeStored(`${txt}/file-${n}.txt`, files.txt);
  await Deno.writeTextFile(`${dataDir}/.complete`, "");
  console.error(
    `built ${keys} keys per bucket in ${((performance.now() - started) / 1000).toFixed(0)} s`,
  );
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)];
}

async function main() {
  await build();
  const server = await startProcess([`${SVC_ROOT}main.ts`, "--listen", "127.0.0.1:0"], {
    SVC_DATA_DIR: dataDir,
    SVC_AUTHENTICATION: "none",
    SVC_LOG_LEVEL: "info",
  }, dataDir);
  const rows: string[] = [];
  try {
    const list = async (bucket: string, query: Record<string, string>) => {
      const params = new URLSearchParams({ "list-type": "2", prefix: "x/", ...query });
      const started = performance.now();
      const res = await fetch(`${server.url}/${bucket}?${params}`);
      const text = await res.text();
      const ms = performance.now() - started;
      if (res.status !== 200) throw new Error(`${bucket} ${params}: ${res.status} ${text}`);
      const count = (text.match(/<Key>/g) ?? []).length +
        (text.match(/<CommonPrefixes>/g) ?? []).length;
      const token = /<NextContinuationToken>([^<]*)</.exec(text)?.[1];
      return { ms, count, token };
    };
    const middleKey: Record<string, string> = {
      ds: `x/1.0.${Math.floor(keys / 2)}/app.zip`,
      ver: `x/app-1.0.${Math.floor(keys / 2)}.zip`,
      txt: `x/file-${Math.floor(keys / 2)}.txt`,
    };
    for (const bucket of shapes) {
      for (const delimiter of [undefined, "/"]) {
        const base: Record<string, string> = delimiter ? { delimiter } : {};
        // The continuation token of a page that ends at the middle key.
        const { token } = await list(bucket, {
          ...base,
          "start-after": middleKey[bucket],
          "max-keys": "1",
        });
        if (!token) throw new Error(`${bucket}: no continuation token in the middle`);
        const cases: Array<[string, Record<string, string>]> = [
          ["first page, max-keys 1", { ...base, "max-keys": "1" }],
          ["first page, max-keys 1000", { ...base, "max-keys": "1000" }],
          ["middle page (token), max-keys 1000", {
            ...base,
            "max-keys": "1000",
            "continuation-token": token,
          }],
        ];
        for (const [name, query] of cases) {
          const times: number[] = [];
          let count = 0;
          for (let r = 0; r < rounds; r++) {
            const result = await list(bucket, query);
            times.push(result.ms);
            count = result.count;
          }
          rows.push(
            `| ${bucket} | ${keys} | ${delimiter ? "`/`" : "none"} | ${name} | ${count} | ` +
              `${median(times).toFixed(1)} | ${Math.min(...times).toFixed(1)}–${
                Math.max(...times).toFixed(1)
              } |`,
          );
          console.error(rows.at(-1));
        }
      }
    }
    const rss = await peakRss(server.pid);
    console.log(
      "| bucket | keys | delimiter | page | entries | median ms | spread ms |\n" +
        "| ------ | ---- | --------- | ---- | ------- | --------- | --------- |",
    );
    for (const row of rows) console.log(row);
    console.log(`\nserver peak RSS (VmHWM): ${(rss / 2 ** 20).toFixed(0)} MiB`);
  } finally {
    await server.stop();
  }
}

await main();
