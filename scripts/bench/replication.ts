/**
 * Full reconcile of a replication rule with nothing to copy, against listing both sides once
 * (issue 17: ≤ 2× the listing time, peak RSS ≤ 200 MB). Two filesystem backends behind the real
 * bucket router and object service: `src` on one, `dst` on the other, each holding the same
 * `--keys` keys in `--dirs` directories (`d<i>/k<j>.txt`, 64 bytes each). The trees are built by
 * storing one real object and cloning its file and metadata attribute under every name (what
 * svc writes, without a fsync per key), in a child process, so this process's peak RSS is the
 * measured work only.
 *
 * Each round times, in this order and alternating which goes first: a flat listing of both
 * buckets (ListObjects pages of 1000, what "listing both sides once" costs), and a reconcile run
 * of a `newer-wins` rule (directory-scoped delimiter listings, `dir_concurrency` 4, transfers 4;
 * every key is planned and skipped: the copies have the source's time). Prints each round's
 * ratio and the peak RSS (VmHWM).
 *
 *   node_modules/.bin/deno run -A scripts/bench/replication.ts [--keys 100000] [--dirs 100]
 *     [--rounds 3] [--dir /tmp/svc-bench-replication] [--only list|reconcile [--alloc-profile]]
 *
 * `--alloc-profile` (with `--only`) prints where that phase's garbage comes from (bytes allocated
 * per listed key, by function; alloc-profile.ts).
 */
import { detachedRuleEnv } from "../../src/testing/rule-env-fixtures.ts";
import { buildConfig } from "../../src/config/load.ts";
import type { ReplicationRule } from "../../src/config/schema/schema-jobs.ts";
import { systemClock } from "../../src/jobs/clock.ts";
import { reconcileRun } from "../../src/jobs/replication/reconcile-run.ts";
import { RunRecorder } from "../../src/jobs/rules/run-recorder.ts";
import { ObjectService } from "../../src/objects/object-service.ts";
import { BucketRouter } from "../../src/storage/bucket-router.ts";
import { FilesystemBackend } from "../../src/storage/fs/filesystem-backend.ts";
import { metaFor } from "../../src/testing/object-fixtures.ts";
import { getXattr, setXattr } from "../../src/native/xattr.ts";
import { fmt, peakRss } from "./lib.ts";
import { startAllocProfile } from "./alloc-profile.ts";

const arg = (name: string, fallback: string) => {
  const i = Deno.args.indexOf(name);
  return i >= 0 ? Deno.args[i + 1] : fallback;
};
const keys = Number(arg("--keys", "100000"));
const dirs = Number(arg("--dirs", "100"));
const rounds = Number(arg("--rounds", "3"));
const root = arg("--dir", "/tmp/svc-bench-replication");
/** `list` or `reconcile`: time only that (its peak RSS alone). */
const only = arg("--only", "");
const META = "user.svc.meta";

/** Builds `<root>/<side>/<bucket>` with every key (child process: `--build`). */
async function build(): Promise<void> {
  for (const [side, bucket] of [["a", "src"], ["b", "dst"]]) {
    const backend = await FilesystemBackend.open(`${root}/${side}`);
    await backend.createBucket(bucket);
    const bytes = new TextEncoder().encode("x".repeat(64));
    const staged = await backend.stageObject(bucket, "template.txt", ReadableStream.from([bytes]));
    await staged.commit(metaFor(bytes, { lastModified: Date.UTC(2026, 0, 1) }));
    const template = `${root}/${side}/${bucket}/template.txt`;
    const meta = getXattr(template, META)!;
    const perDir = Math.ceil(keys / dirs);
    for (let d = 0, n = 0; d < dirs && n < keys; d++) {
      const dir = `${root}/${side}/${bucket}/d${String(d).padStart(4, "0")}`;
      Deno.mkdirSync(dir, { recursive: true });
      for (let k = 0; k < perDir && n < keys; k++, n++) {
        const path = `${dir}/k${String(k).padStart(6, "0")}.txt`;
        Deno.writeFileSync(path, bytes);
        setXattr(path, META, meta);
      }
    }
    Deno.removeSync(template);
  }
  await Deno.writeTextFile(`${root}/built`, `${keys} ${dirs}`);
}

if (Deno.args.includes("--build")) {
  await build();
  Deno.exit(0);
}

const marker = await Deno.readTextFile(`${root}/built`).catch(() => "");
if (marker !== `${keys} ${dirs}`) {
  await Deno.remove(root, { recursive: true }).catch(() => {});
  const started = performance.now();
  const child = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", new URL(import.meta.url).pathname, ...Deno.args, "--build"],
  }).output();
  if (!child.success) throw new Error(new TextDecoder().decode(child.stderr));
  console.log(`built ${keys} keys × 2 in ${fmt((performance.now() - started) / 1000)} s`);
}

const baselineRss = await peakRss(Deno.pid);
const a = await FilesystemBackend.open(`${root}/a`);
const b = await FilesystemBackend.open(`${root}/b`);
const router = new BucketRouter(
  [
    { name: "a", backend: a, available: () => true },
    { name: "b", backend: b, available: () => true },
  ],
  "a",
  () => ({
    policies: { src: { backend: "a" }, dst: { backend: "b" } },
    listTimeoutMs: 10_000,
    listCooldownMs: 1000,
    listFreshMs: 0,
  }),
);
const objects = new ObjectService(router, () => ({ maxObjectSize: 1 << 30 }));
const config = buildConfig({
  access: { authentication: "none" },
  storage: { replication: { dir_concurrency: Number(arg("--dir-concurrency", "4")) } },
}, { env: {} }).config;
const env = detachedRuleEnv(objects, systemClock, { config });
const rule: ReplicationRule = {
  name: "bench",
  enabled: true,
  source: { bucket: "src", prefix: "" },
  destination: { bucket: "dst" },
  interval: "24h",
  batch_size: Number(arg("--batch", "1000")),
  replicate_deletes: false,
  conflict: "newer-wins",
  include_globs: [],
  exclude_globs: [],
};

async function listBoth(): Promise<number> {
  let seen = 0;
  for (const bucket of ["src", "dst"]) {
    let startAfter: string | undefined;
    for (;;) {
      const page = await objects.listObjects(bucket, { prefix: "", startAfter, maxKeys: 1000 });
      seen += page.objects.length;
      if (!page.isTruncated) break;
      startAfter = page.nextStartAfter;
    }
  }
  return seen;
}

async function reconcile(): Promise<number> {
  const recorder = new RunRecorder(100, Date.now);
  const outcome = await reconcileRun(rule, env, {
    trigger: "run-now",
    dryRun: false,
    signal: new AbortController().signal,
    clock: systemClock,
    recorder,
    state: {},
    saveState: () => Promise.resolve(),
  });
  const c = recorder.counters;
  if (outcome.status !== "succeeded" || c.objects_affected !== 0 || c.objects_skipped !== keys) {
    throw new Error(`Unexpected run: ${JSON.stringify({ outcome, counters: c })}`);
  }
  return c.objects_scanned;
}

async function time(work: () => Promise<number>): Promise<number> {
  const started = performance.now();
  await work();
  return (performance.now() - started) / 1000;
}

console.log(`| round | list both sides (s) | reconcile (s) | ratio |`);
console.log(`|---|---|---|---|`);
const ratios: number[] = [];
for (let round = 1; round <= rounds; round++) {
  let listing: number;
  let walk: number;
  if (only !== "") {
    const profile = Deno.args.includes("--alloc-profile") ? await startAllocProfile() : undefined;
    const seconds = await time(only === "list" ? listBoth : reconcile);
    if (profile) console.log(`\n${await profile.stop(keys * 2)} (unit: a listed key)\n`);
    console.log(`| ${round} | ${only} only | ${fmt(seconds, 2)} s | |`);
    continue;
  }
  if (round % 2 === 1) {
    listing = await time(listBoth);
    walk = await time(reconcile);
  } else {
    walk = await time(reconcile);
    listing = await time(listBoth);
  }
  ratios.push(walk / listing);
  console.log(`| ${round} | ${fmt(listing, 2)} | ${fmt(walk, 2)} | ${fmt(walk / listing, 2)} |`);
}
const rss = await peakRss(Deno.pid);
if (Deno.args.includes("--memory")) console.log(Deno.memoryUsage());
console.log(
  `\n${keys} keys in ${dirs} directories; ratio ${fmt(Math.min(...ratios), 2)}–${
    fmt(Math.max(...ratios), 2)
  }; peak RSS ${fmt(rss / 1024 / 1024)} MB (${fmt(baselineRss / 1024 / 1024)} MB before any work)`,
);
