/**
 * Lifecycle run cost against a plain listing, and its memory against the bucket size (issue 17:
 * "memory must not grow with bucket size, except retain-newest's bounded candidate set").
 *
 * In one process: a filesystem backend in a temp dir is filled with `--keys` small objects (staged
 * and committed directly with their metadata, so filling is fast), all 40 days old. Then, each
 * timed: listing every page once through the object service (the baseline), an expiry preview
 * (the whole walk and every decision, no writes), the expiry run (deletes every object), and, on
 * a refill, a retain-newest preview (ranks every object). VmHWM (peak RSS) is read after each
 * phase; the phases run in order of expected memory so each peak belongs to its phase or an
 * earlier one.
 *
 *   node_modules/.bin/deno run -A scripts/bench/lifecycle.ts [--keys 20000] [--batch 1000]
 */
import { detachedRuleEnv } from "../../src/testing/rule-env-fixtures.ts";
import { buildConfig } from "../../src/config/load.ts";
import { ObjectService } from "../../src/objects/object-service.ts";
import { terminateHashWorkers } from "../../src/body/body-digest.ts";
import { FilesystemBackend } from "../../src/storage/fs/filesystem-backend.ts";
import { metaFor } from "../../src/testing/object-fixtures.ts";
import { ManualClock } from "../../src/jobs/clock.ts";
import { lifecycleDriver } from "../../src/jobs/lifecycle/lifecycle-driver.ts";
import { RunRecorder } from "../../src/jobs/rules/run-recorder.ts";

const arg = (name: string, fallback: string) => {
  const i = Deno.args.indexOf(name);
  return i >= 0 ? Deno.args[i + 1] : fallback;
};
const keys = Number(arg("--keys", "20000"));
const batch = Number(arg("--batch", "1000"));
const DAY = 86_400_000;

async function vmHwmMiB(): Promise<number> {
  const status = await Deno.readTextFile("/proc/self/status");
  return Number(/VmHWM:\s+(\d+)/.exec(status)![1]) / 1024;
}

const dir = await Deno.makeTempDir({ prefix: "svc-bench-lifecycle-" });
const clock = new ManualClock(Date.now());
const backend = await FilesystemBackend.open(dir);
const objects = new ObjectService(backend, () => ({ maxObjectSize: 1 << 30 }), () => clock.now());
const env = detachedRuleEnv(objects, clock);
const driver = lifecycleDriver(env);

async function fill() {
  const body = new TextEncoder().encode("lifecycle bench object");
  const meta = metaFor(body, { lastModified: clock.now() - 40 * DAY });
  for (let i = 0; i < keys; i++) {
    const key = `logs/${String(i).padStart(8, "0")}.log`;
    const staged = await backend.stageObject("b", key, new Blob([body]).stream());
    await staged.commit({ ...meta, lastModified: meta.lastModified + i });
  }
}

function rule(action: unknown, extra: Record<string, unknown> = {}) {
  return buildConfig({
    access: { authentication: "none" },
    storage: {
      lifecycle: {
        enabled: true,
        rules: [{ name: "r", enabled: true, bucket: "b", batch_size: batch, action, ...extra }],
      },
    },
  }, { env: {} }).config.storage.lifecycle.rules![0];
}

async function run(action: unknown, extra: Record<string, unknown>, dryRun: boolean) {
  const recorder = new RunRecorder(100, () => clock.now());
  const configured = rule(action, extra);
  const started = performance.now();
  const outcome = await driver.run(configured, {
    trigger: dryRun ? "preview" : "run-now",
    dryRun,
    signal: new AbortController().signal,
    clock,
    recorder,
    state: {},
    saveState: () => Promise.resolve(),
  });
  if (outcome.status !== "succeeded") throw new Error(`run ${outcome.status}: ${outcome.error}`);
  return { seconds: (performance.now() - started) / 1000, counters: recorder.counters };
}

async function listAll(): Promise<number> {
  const started = performance.now();
  let startAfter: string | undefined;
  let seen = 0;
  for (;;) {
    const page = await objects.listObjects("b", { prefix: "", startAfter, maxKeys: batch });
    seen += page.objects.length;
    if (!page.isTruncated || page.nextStartAfter === undefined) break;
    startAfter = page.nextStartAfter;
  }
  if (seen !== keys) throw new Error(`listed ${seen} of ${keys}`);
  return (performance.now() - started) / 1000;
}

try {
  await objects.createBucket("b");
  await fill();
  const rows: string[] = [];
  const row = async (phase: string, seconds: number, listSeconds: number) =>
    rows.push(
      `| ${phase} | ${seconds.toFixed(2)} | ${(seconds / listSeconds).toFixed(2)} | ${
        (await vmHwmMiB()).toFixed(0)
      } |`,
    );
  const listSeconds = await listAll();
  await row("list every page once (baseline)", listSeconds, listSeconds);
  const preview = await run("delete", { expire_after: "30d" }, true);
  if (preview.counters.objects_affected !== keys) throw new Error("preview missed objects");
  await row("expiry preview (walk + decide)", preview.seconds, listSeconds);
  const expired = await run("delete", { expire_after: "30d" }, false);
  if (expired.counters.objects_affected !== keys) throw new Error("run missed objects");
  await row("expiry run (delete all)", expired.seconds, listSeconds);
  await fill();
  const retain = await run({ type: "retain-newest", count: 10 }, {}, true);
  if (retain.counters.objects_affected !== keys - 10) throw new Error("retain missed objects");
  await row("retain-newest preview (rank all)", retain.seconds, listSeconds);
  console.log(`keys ${keys}, batch ${batch}`);
  console.log("| phase | seconds | × listing | VmHWM MiB after |");
  console.log("|---|---|---|---|");
  for (const line of rows) console.log(line);
} finally {
  terminateHashWorkers();
  await Deno.remove(dir, { recursive: true });
}
