/**
 * Memory of the admin log tail (`GET /logs/stream`) with clients that never read: a server
 * process runs the real log routes over a real LogRing on Deno.serve; N raw TCP clients send the
 * request and then read nothing; the server logs `lines` lines of 1 KiB (a few per event-loop
 * turn, as a busy server would) and reports its peak RSS (VmHWM) and how many subscriptions are
 * left. The same run with 0 clients is the baseline: the difference is what the stuck readers
 * cost, which must stay bounded (socket buffers + 64 queued events + the ring's 256 per
 * subscriber) however many lines are logged.
 *
 *   deno run -A scripts/bench/sse-slow-readers.ts [clients=50] [lines=200000]
 */
import { AuditRing } from "../../src/observability/audit-ring.ts";
import { LogRing } from "../../src/observability/log-ring.ts";
import { logRoutes } from "../../src/admin/ops/log-routes.ts";
import { Hono } from "hono";

const SELF = new URL(import.meta.url).pathname;
const ROOT = new URL("../../", import.meta.url).pathname;

function vm(field: "VmHWM" | "VmRSS"): number {
  const status = Deno.readTextFileSync("/proc/self/status");
  return Number(new RegExp(`${field}:\\s+(\\d+) kB`).exec(status)![1]) * 1024;
}

async function serverMode(lines: number) {
  const logRing = new LogRing();
  const app = new Hono();
  app.route("/", logRoutes({ logRing, auditRing: new AuditRing() }) as unknown as Hono);
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, app.fetch);
  console.log(JSON.stringify({ port: server.addr.port }));
  // Wait for the parent's "go" (its clients are connected).
  const reader = Deno.stdin.readable.getReader();
  await reader.read();
  const subscribedAtStart = logRing.subscriberCount;
  const payload = "x".repeat(1024);
  const started = performance.now();
  for (let pushed = 0; pushed < lines;) {
    for (let i = 0; i < 4 && pushed < lines; i++) {
      logRing.push({
        time: new Date().toISOString(),
        level: "info",
        target: "svc::bench",
        message: `line ${++pushed}`,
        fields: { payload },
      });
    }
    await new Promise((r) => setTimeout(r, 0));
  }
  const seconds = (performance.now() - started) / 1000;
  console.log(JSON.stringify({
    subscribedAtStart,
    subscribedAtEnd: logRing.subscriberCount,
    seconds: Math.round(seconds * 10) / 10,
    hwm: vm("VmHWM"),
    rss: vm("VmRSS"),
  }));
  Deno.exit(0);
}

async function run(clients: number, lines: number) {
  const child = new Deno.Command(`${ROOT}node_modules/.bin/deno`, {
    args: ["run", "-A", SELF, "--server", String(lines)],
    stdin: "piped",
    stdout: "piped",
    stderr: "inherit",
    env: { DENO_NO_UPDATE_CHECK: "1" },
  }).spawn();
  const out = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  let buffered = "";
  const nextLine = async (): Promise<string> => {
    while (!buffered.includes("\n")) {
      const { value, done } = await out.read();
      if (done) throw new Error("server exited");
      buffered += value;
    }
    const index = buffered.indexOf("\n");
    const line = buffered.slice(0, index);
    buffered = buffered.slice(index + 1);
    return line;
  };
  const { port } = JSON.parse(await nextLine());
  const conns: Deno.Conn[] = [];
  const request = new TextEncoder().encode(
    `GET /logs/stream HTTP/1.1\r\nhost: 127.0.0.1\r\naccept: text/event-stream\r\n\r\n`,
  );
  for (let i = 0; i < clients; i++) {
    const conn = await Deno.connect({ hostname: "127.0.0.1", port });
    await conn.write(request);
    conns.push(conn); // never read
  }
  await new Promise((r) => setTimeout(r, 300));
  const writer = child.stdin.getWriter();
  await writer.write(new TextEncoder().encode("go\n"));
  const result = JSON.parse(await nextLine());
  for (const conn of conns) conn.close();
  await writer.close().catch(() => {});
  await out.cancel();
  await child.status;
  return { clients, lines, ...result };
}

if (Deno.args[0] === "--server") {
  await serverMode(Number(Deno.args[1]));
} else {
  const clients = Number(Deno.args[0] ?? 50);
  const lines = Number(Deno.args[1] ?? 200_000);
  const MiB = 1024 * 1024;
  for (const n of [0, clients]) {
    const r = await run(n, lines);
    console.log(
      `clients ${r.clients}: ${r.lines} lines in ${r.seconds} s, subscribed ${r.subscribedAtStart}` +
        ` → ${r.subscribedAtEnd}, VmHWM ${(r.hwm / MiB).toFixed(1)} MiB, VmRSS ${
          (r.rss / MiB).toFixed(1)
        } MiB`,
    );
  }
}
