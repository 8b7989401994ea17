/**
 * Large-PUT throughput of svc against the bare Deno file server, each measured on a freshly
 * started process after `sync`, alternating, so neither pays for the other's (or an earlier
 * round's) disk writeback. Complements throughput.ts, whose back-to-back 1 GiB writes and
 * overwrites make the PUT ratio swing with the kernel's writeback.
 *
 *   node_modules/.bin/deno run -A scripts/bench/put-fresh.ts [--size-mib 1024] [--pairs 3]
 */
import { fmt, GiB, MiB, rawPut, startProcess, timed } from "./lib.ts";

const arg = (name: string, fallback: number) => {
  const i = Deno.args.indexOf(name);
  return i >= 0 ? Number(Deno.args[i + 1]) : fallback;
};
const sizeBytes = arg("--size-mib", 1024) * MiB;
const pairs = arg("--pairs", 3);
const ROOT = new URL("../../", import.meta.url).pathname;

async function sync(): Promise<void> {
  await new Deno.Command("sync").output();
}

/** MiB/s of one PUT of `sizeBytes` into a freshly started server. */
async function measure(kind: "bare" | "svc"): Promise<number> {
  const dir = await Deno.makeTempDir({ prefix: `bench-${kind}-` });
  const server = kind === "svc"
    ? await startProcess([`${ROOT}main.ts`, "--listen", "127.0.0.1:0"], {
      SVC_DATA_DIR: dir,
      SVC_AUTHENTICATION: "none",
      SVC_MAX_OBJECT_SIZE: String(4 * GiB),
      SVC_LOG_LEVEL: "info",
    }, dir)
    : await startProcess([`${ROOT}scripts/bench/bare-server.ts`, dir]);
  try {
    const base = kind === "svc" ? `${server.url}/bench` : server.url;
    if (kind === "svc") await fetch(base, { method: "PUT" }).then((r) => r.body?.cancel());
    await sync();
    const { seconds, value } = await timed(() => rawPut(`${base}/object`, sizeBytes));
    if (value.status !== 200) throw new Error(`${kind} PUT ${value.status}: ${value.response}`);
    return sizeBytes / MiB / seconds;
  } finally {
    await server.stop();
    await Deno.remove(dir, { recursive: true });
    await sync();
  }
}

console.log(`| pair | bare Deno.serve (MiB/s) | svc (MiB/s) | svc / bare |`);
console.log(`|---|---|---|---|`);
for (let i = 1; i <= pairs; i++) {
  const bare = await measure("bare");
  const svc = await measure("svc");
  console.log(`| ${i} | ${fmt(bare)} | ${fmt(svc)} | ${fmt(svc / bare, 2)} |`);
}
