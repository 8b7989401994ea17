/**
 * Where a delta PUT's time goes, robust to a shared box whose load drifts: each round PUTs the
 * synthetic 100 MiB target (delta against the base) and then runs the xdelta3 CLI on the same
 * pair right after, and reports their ratio together with the CPU seconds of the server itself
 * and of its xdelta3 children (from /proc/<pid>/stat) and xdelta3's busy share of the PUT's wall
 * time. Uses the inputs `scripts/bench/delta.ts` prepared under its `--cache` directory.
 *
 *   node_modules/.bin/deno run -A scripts/bench/delta-put-profile.ts [--root <svc tree>/]
 *     [--cache /tmp/svc-bench-delta] [--rounds 5]
 */
import { rawPutFile } from "./delta-inputs.ts";

const arg = (name: string, fallback: string) => {
  const i = Deno.args.indexOf(name);
  return i >= 0 ? Deno.args[i + 1] : fallback;
};
const root = arg("--root", new URL("../../", import.meta.url).pathname);
const rounds = Number(arg("--rounds", "5"));
const dir = `${arg("--cache", "/tmp/svc-bench-delta")}/synthetic`;
const base = `${dir}/synthetic-100m-base.img`;
const target = `${dir}/synthetic-100m-target.img`;

const dataDir = await Deno.makeTempDir({ prefix: "svc-bench-put-profile-" });
const server = new Deno.Command(`${root}node_modules/.bin/deno`, {
  args: ["run", "-A", `${root}main.ts`, "--listen", "127.0.0.1:0"],
  env: {
    SVC_DATA_DIR: dataDir,
    SVC_AUTHENTICATION: "none",
    SVC_MAX_OBJECT_SIZE: String(4 * 2 ** 30),
    SVC_CACHE_MB: "1024",
    DENO_NO_UPDATE_CHECK: "1",
  },
  stdout: "piped",
  stderr: "null",
}).spawn();
const lines = server.stdout.pipeThrough(new TextDecoderStream()).getReader();
let seen = "";
let port = 0;
while (!port) {
  const { value, done } = await lines.read();
  if (done) throw new Error(`server exited before listening: ${seen}`);
  seen += value;
  port = Number(/127\.0\.0\.1:(\d+)/.exec(seen)?.[1] ?? 0);
}
(async () => {
  while (!(await lines.read()).done) { /* drain */ }
})();

/** CPU seconds of the server (all threads) and of its reaped children (xdelta3). */
function cpu(): { self: number; children: number } {
  const fields = Deno.readTextFileSync(`/proc/${server.pid}/stat`).split(") ")[1].split(" ");
  const ticks = (i: number) => Number(fields[i]) / 100;
  return { self: ticks(11) + ticks(12), children: ticks(13) + ticks(14) };
}

const url = `http://127.0.0.1:${port}/bench`;
try {
  await (await fetch(url, { method: "PUT" })).body?.cancel();
  await rawPutFile(`${url}/x/v1.img`, base);
  const ratios: number[] = [];
  for (let i = 0; i < rounds; i++) {
    await new Deno.Command("sync").output();
    const before = cpu();
    const t0 = performance.now();
    await rawPutFile(`${url}/x/v2.img`, target);
    const put = (performance.now() - t0) / 1000;
    const after = cpu();
    await new Deno.Command("sync").output();
    const t1 = performance.now();
    await new Deno.Command("xdelta3", {
      args: ["-e", "-D", "-W", "1048576", "-f", "-s", base, target, `${dataDir}/cli.vcd`],
    }).output();
    const cli = (performance.now() - t1) / 1000;
    ratios.push(put / cli);
    const codec = after.children - before.children;
    console.log(
      `round ${i}: PUT ${put.toFixed(2)} s, CLI ${cli.toFixed(2)} s, ratio ${
        (put / cli).toFixed(2)
      }; server CPU ${(after.self - before.self).toFixed(2)} s, xdelta3 CPU ${
        codec.toFixed(2)
      } s (busy ${(100 * codec / put).toFixed(0)}% of the PUT)`,
    );
  }
  ratios.sort((a, b) => a - b);
  const load = Deno.readTextFileSync("/proc/loadavg").split(" ").slice(0, 3).join(" ");
  console.log(
    `median ratio ${ratios[Math.floor(ratios.length / 2)].toFixed(2)} (${ratios[0].toFixed(2)}–${
      ratios.at(-1)!.toFixed(2)
    }), load average ${load}`,
  );
} finally {
  server.kill();
  await server.status;
  await Deno.remove(dataDir, { recursive: true });
}
