/**
 * Load test for issue 12 items 1-2: a normal client's latency while strangers hold 1,000 idle
 * connections and 1,000 slow request bodies (half browser POST forms trickling their fields, half
 * signed PUTs trickling their body), on loopback.
 *
 *   node_modules/.bin/deno run -A scripts/bench/slow-clients.ts [--idle 1000] [--slow 1000]
 *     [--seconds 30] [--workers 4] [--put-share 0.5]
 *
 * Phases, one svc (defaults, sigv4): the normal client alone (baseline), then the same client
 * while the attackers run (started in a subprocess, so their event loop does not delay the
 * client's timers). The normal client does a signed 4 KiB PUT then a GET of it, `--workers`
 * loops. Attackers re-open a connection whenever svc cuts one, so the pressure never drops.
 * Prints a Markdown table: requests, p50, p99, max latency, errors, and what svc closed.
 */
import { AwsClient } from "aws4fetch";
import { DENO, startProcess } from "./lib.ts";
import { signedPutHead as signedRawPutHead } from "../../tests/helpers/raw-http.ts";

const ACCESS_KEY = "AKIABENCHSLOWCLIENTS";
const SECRET_KEY = "bench-secret-key-for-slow-clients-0000";
const ROOT = new URL("../../", import.meta.url).pathname;
const args = Deno.args;
const arg = (name: string, fallback: number) => {
  const i = args.indexOf(name);
  return i >= 0 ? Number(args[i + 1]) : fallback;
};
const encoder = new TextEncoder();
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

// ---- attacker mode (subprocess) -----------------------------------------------------------------

function signedPutHead(url: string, length: number): Promise<string> {
  return signedRawPutHead(url, length, { accessKeyId: ACCESS_KEY, secretAccessKey: SECRET_KEY });
}

function formHead(host: string): string {
  const boundary = "----slowform";
  return [
    "POST /bench HTTP/1.1",
    `host: ${host}`,
    `content-type: multipart/form-data; boundary=${boundary}`,
    "content-length: 100000",
    "",
    `--${boundary}\r\ncontent-disposition: form-data; name="key"\r\n\r\n`,
  ].join("\r\n");
}

/** Keeps one connection of the given kind open, re-opening it whenever svc closes it. */
async function attacker(
  base: string,
  kind: "idle" | "form" | "put",
  index: number,
  stop: () => boolean,
  counts: Record<string, number>,
): Promise<void> {
  const url = new URL(base);
  while (!stop()) {
    let conn: Deno.TcpConn;
    try {
      conn = await Deno.connect({ hostname: url.hostname, port: Number(url.port) });
    } catch {
      counts.connect_failed++;
      await sleep(200);
      continue;
    }
    counts.opened++;
    try {
      if (kind === "form") await conn.write(encoder.encode(formHead(url.host)));
      if (kind === "put") {
        await conn.write(
          encoder.encode(await signedPutHead(`${base}/bench/slow-${index}`, 100_000)),
        );
      }
      // One read stays pending for the connection's life: it ends when svc answers or closes.
      let closed = false;
      (async () => {
        const buffer = new Uint8Array(4096);
        while (
          await conn.read(buffer).catch(() => null) !== null
        ) { /* an answer: wait for the close */ }
        closed = true;
      })();
      // Idle: nothing more. Slow bodies: a byte every second or so, never the whole body.
      while (!stop() && !closed) {
        if (kind !== "idle") await conn.write(encoder.encode("x"));
        await sleep(1000 + Math.random() * 500);
      }
    } catch {
      // svc closed the connection (a write to a closed socket fails): open another one.
    }
    counts.cut++;
    try {
      conn.close();
    } catch { /* gone */ }
  }
}

async function runAttackers(
  base: string,
  idle: number,
  slow: number,
  seconds: number,
  putShare: number,
) {
  const counts = { opened: 0, cut: 0, connect_failed: 0 };
  const until = performance.now() + seconds * 1000;
  const stop = () => performance.now() > until;
  const jobs: Promise<void>[] = [];
  for (let i = 0; i < idle; i++) jobs.push(attacker(base, "idle", i, stop, counts));
  for (let i = 0; i < slow; i++) {
    jobs.push(attacker(base, i < slow * putShare ? "put" : "form", i, stop, counts));
    if (i % 100 === 99) await sleep(50); // ramp up without a SYN storm
  }
  await Promise.all(jobs);
  console.log(JSON.stringify(counts));
}

// ---- normal client ------------------------------------------------------------------------------

interface Latencies {
  samples: number[];
  byMethod: Record<string, number[]>;
  errors: number;
  /** The slowest request: method, ms, seconds into the phase. */
  slowest?: { method: string; ms: number; at: number };
}

async function normalClient(base: string, seconds: number, workers: number): Promise<Latencies> {
  const aws = new AwsClient({
    accessKeyId: ACCESS_KEY,
    secretAccessKey: SECRET_KEY,
    service: "s3",
    region: "us-east-1",
    retries: 0,
  });
  const body = new Uint8Array(4096).fill(7);
  const result: Latencies = { samples: [], byMethod: { PUT: [], GET: [] }, errors: 0 };
  const phaseStart = performance.now();
  const until = phaseStart + seconds * 1000;
  await Promise.all(Array.from({ length: workers }, async (_, w) => {
    for (let i = 0; performance.now() < until; i++) {
      const key = `${base}/bench/normal-${w}-${i}`;
      for (const method of ["PUT", "GET"]) {
        const started = performance.now();
        try {
          const response = await aws.fetch(key, {
            method,
            body: method === "PUT" ? body : undefined,
            signal: AbortSignal.timeout(30_000),
          });
          await response.arrayBuffer();
          if (!response.ok) result.errors++;
        } catch {
          result.errors++;
        }
        const ms = performance.now() - started;
        result.samples.push(ms);
        result.byMethod[method].push(ms);
        if (ms > (result.slowest?.ms ?? 0)) {
          result.slowest = { method, ms, at: (started - phaseStart) / 1000 };
        }
      }
    }
  }));
  return result;
}

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))];
}

function row(name: string, latencies: Latencies, samples = latencies.samples): string {
  const sorted = [...samples].sort((a, b) => a - b);
  const ms = (n: number) => n.toFixed(1);
  return `| ${name} | ${sorted.length} | ${ms(percentile(sorted, 0.5))} | ${
    ms(percentile(sorted, 0.99))
  } | ${ms(sorted.at(-1) ?? NaN)} | ${latencies.errors} |`;
}

if (args[0] === "--attack") {
  await runAttackers(args[1], Number(args[2]), Number(args[3]), Number(args[4]), Number(args[5]));
  Deno.exit(0);
}

const idle = arg("--idle", 1000);
const slow = arg("--slow", 1000);
const seconds = arg("--seconds", 30);
const workers = arg("--workers", 4);
/** Share of the slow bodies that are signed PUTs (the rest are POST forms). */
const putShare = arg("--put-share", 0.5);
const dir = await Deno.makeTempDir({ prefix: "bench-slow-" });
const svc = await startProcess([`${ROOT}main.ts`, "--listen", "127.0.0.1:0"], {
  SVC_DATA_DIR: dir,
  SVC_ACCESS_KEY_ID: ACCESS_KEY,
  SVC_SECRET_ACCESS_KEY: SECRET_KEY,
  SVC_LOG_LEVEL: "info",
}, dir);
try {
  const aws = new AwsClient({
    accessKeyId: ACCESS_KEY,
    secretAccessKey: SECRET_KEY,
    service: "s3",
    region: "us-east-1",
  });
  await (await aws.fetch(`${svc.url}/bench`, { method: "PUT" })).arrayBuffer();
  const baseline = await normalClient(svc.url, Math.min(10, seconds), workers);

  const attack = new Deno.Command(DENO, {
    args: [
      "run",
      "-A",
      import.meta.filename!,
      "--attack",
      svc.url,
      `${idle}`,
      `${slow}`,
      `${seconds + 15}`,
      `${putShare}`,
    ],
    env: { DENO_NO_UPDATE_CHECK: "1" },
    stdout: "piped",
    stderr: "inherit",
  }).spawn();
  await sleep(10_000); // connections opened and slow bodies under way
  const ready = await fetch(`${svc.url}/_/ready`);
  const readyText = `${ready.status} ${await ready.text()}`;
  const underAttack = await normalClient(svc.url, seconds, workers);
  const attackOutput = new TextDecoder().decode((await attack.output()).stdout).trim();

  console.log(
    `\nsvc under ${idle} idle connections + ${slow} slow bodies (${
      slow - Math.ceil(slow * putShare)
    } POST forms, ${Math.ceil(slow * putShare)} signed PUTs), ${workers} normal workers\n`,
  );
  console.log("| phase | requests | p50 ms | p99 ms | max ms | errors |");
  console.log("| ----- | -------- | ------ | ------ | ------ | ------ |");
  console.log(row("alone (baseline)", baseline));
  console.log(row("under attack", underAttack));
  console.log(row("under attack, PUT only", underAttack, underAttack.byMethod.PUT));
  console.log(row("under attack, GET only", underAttack, underAttack.byMethod.GET));
  console.log(`\nslowest under attack: ${JSON.stringify(underAttack.slowest)}`);
  console.log(`attackers: ${attackOutput}`);
  console.log(`/_/ready 10 s into the attack: ${readyText}`);
} finally {
  await svc.stop();
  await Deno.remove(dir, { recursive: true }).catch(() => {});
}
