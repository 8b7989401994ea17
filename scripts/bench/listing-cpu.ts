/**
 * CPU and wall time of complete listings through FilesystemBackend.listObjects, in process, of
 * this checkout or another (`--svc`, e.g. `git archive <commit>` unpacked with a node_modules
 * symlink): the "before" of a listing change measured the same way. CPU time, unlike a server's
 * response time, holds still on a box other sessions load. Uses the trees the listing and
 * replication benches build (run those first):
 *
 *   node_modules/.bin/deno run -A scripts/bench/listing-cpu.ts [--svc /path/to/checkout]
 *     [--listing /tmp/svc-bench-listing/100000] [--replication /tmp/svc-bench-replication]
 */
import process from "node:process";
import { fmt } from "./lib.ts";
import type { ListPage } from "../../src/storage/backend.ts";

const arg = (name: string, fallback: string) => {
  const i = Deno.args.indexOf(name);
  return i >= 0 ? Deno.args[i + 1] : fallback;
};
const ROOT = new URL("../../", import.meta.url).pathname;
const svc = arg("--svc", ROOT).replace(/\/?$/, "/");
const { FilesystemBackend } = await import(`${svc}src/storage/fs/filesystem-backend.ts`);

interface Lister {
  listObjects(bucket: string, options: {
    prefix: string;
    delimiter?: string;
    startAfter?: string;
    maxKeys: number;
  }): Promise<ListPage>;
}

const replication: Lister = await FilesystemBackend.open(
  `${arg("--replication", "/tmp/svc-bench-replication")}/a`,
);
const listing: Lister = await FilesystemBackend.open(
  arg("--listing", "/tmp/svc-bench-listing/100000"),
);

/** Every page of 1000 of one listing; the number of entries. */
async function listAll(backend: Lister, bucket: string, prefix: string, delimiter?: string) {
  let startAfter: string | undefined;
  let entries = 0;
  for (;;) {
    const page = await backend.listObjects(bucket, {
      prefix,
      delimiter,
      startAfter,
      maxKeys: 1000,
    });
    entries += page.objects.length + page.commonPrefixes.length;
    if (!page.isTruncated) return entries;
    startAfter = page.nextStartAfter;
  }
}

const cases: Array<[string, () => Promise<number>]> = [
  ["replication src, flat", () => listAll(replication, "src", "")],
  ["txt, flat", () => listAll(listing, "txt", "x/")],
  ["ver, flat", () => listAll(listing, "ver", "x/")],
  ["ds, delimiter /", () => listAll(listing, "ds", "x/", "/")],
];
console.log(`checkout ${svc}`);
console.log("| listing | entries | wall s | CPU s |\n| ------- | ------- | ------ | ----- |");
for (const [name, run] of cases) {
  await run(); // warm: the page cache and the sorted-directory cache
  const cpu = process.cpuUsage();
  const started = performance.now();
  const entries = await run();
  const wall = (performance.now() - started) / 1000;
  const used = process.cpuUsage(cpu);
  console.log(
    `| ${name} | ${entries} | ${fmt(wall, 2)} | ${fmt((used.user + used.system) / 1e6, 2)} |`,
  );
}
