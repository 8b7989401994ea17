import assert from "node:assert/strict";
import { AuditRing } from "../../observability/audit-ring.ts";
import type { LogLevel } from "../../observability/log-level.ts";
import { LogRing } from "../../observability/log-ring.ts";
import { opsAdminApp } from "../../../tests/helpers/ops-admin-app.ts";
import { logRoutes, type LogRoutesDeps } from "./log-routes.ts";

function line(message: string, level: LogLevel = "info", target = "svc::s3", fields = {}) {
  return { time: new Date().toISOString(), level, target, message, fields };
}

function appWith(deps: LogRoutesDeps) {
  return opsAdminApp((app) => app.route("/_/api/admin", logRoutes(deps)));
}

/** The app on a real port, so the SSE tail is read with fetch over TCP. */
/**
 * A server over the routes, and `get` for its streams. Disposing aborts every stream the test
 * opened first: a graceful shutdown waits for open responses, so a test failing mid-stream would
 * otherwise hang there instead of failing.
 */
function serve(deps: LogRoutesDeps) {
  const app = appWith(deps);
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, app.fetch);
  const url = `http://127.0.0.1:${server.addr.port}/_/api/admin`;
  const clients = new AbortController();
  const get = (path: string, init: RequestInit = {}) =>
    fetch(`${url}${path}`, {
      ...init,
      signal: init.signal ? AbortSignal.any([init.signal, clients.signal]) : clients.signal,
    });
  return {
    url,
    server,
    get,
    [Symbol.asyncDispose]: async () => {
      clients.abort();
      await server.shutdown();
    },
  };
}

/** Reads the SSE body until `done(text so far)` holds or `ms` pass; returns the text. */
async function readUntil(
  reader: ReadableStreamDefaultReader<Uint8Array>,
  done: (text: string) => boolean,
  ms: number,
  sofar = "",
): Promise<string> {
  const decoder = new TextDecoder();
  let text = sofar;
  const deadline = Date.now() + ms;
  while (!done(text)) {
    const left = deadline - Date.now();
    if (left <= 0) throw new Error(`timed out after ${ms} ms; got:\n${text}`);
    let timer: ReturnType<typeof setTimeout> | undefined;
    const timeout = new Promise<"timeout">((r) => timer = setTimeout(() => r("timeout"), left));
    const next = await Promise.race([reader.read(), timeout]);
    clearTimeout(timer);
    if (next === "timeout") throw new Error(`timed out after ${ms} ms; got:\n${text}`);
    if (next.done) break;
    text += decoder.decode(next.value, { stream: true });
  }
  return text;
}

async function waitFor(condition: () => boolean, ms: number, what: string): Promise<void> {
  const deadline = Date.now() + ms;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

/** The `data:` JSON of each event named `event`. */
function eventsOf(text: string, event = "log"): Record<string, unknown>[] {
  return text.split("\n\n")
    .filter((block) => block.split("\n").includes(`event: ${event}`))
    .map((block) => JSON.parse(block.split("\n").find((l) => l.startsWith("data: "))!.slice(6)));
}

Deno.test("GET /audit: newest first, limit clamped, bad limit is 400", async () => {
  const auditRing = new AuditRing({ capacity: 10 });
  auditRing.record("auth_failure", { ip: "10.0.0.1" });
  auditRing.record("config_changed", { secret_access_key: "s3cr3t" }, "info");
  auditRing.record("lockout", { ip: "10.0.0.2" });
  const app = appWith({ logRing: new LogRing(), auditRing });

  const all = await (await app.request("/_/api/admin/audit")).json();
  assert.deepEqual(all.entries.map((e: { event: string }) => e.event), [
    "lockout",
    "config_changed",
    "auth_failure",
  ]);
  assert.equal(all.entries[1].fields.secret_access_key, "[redacted]");
  assert.ok(!JSON.stringify(all).includes("s3cr3t"));

  const two = await (await app.request("/_/api/admin/audit?limit=2")).json();
  assert.deepEqual(two.entries.map((e: { id: number }) => e.id), [3, 2]);
  const zero = await (await app.request("/_/api/admin/audit?limit=0")).json();
  assert.equal(zero.entries.length, 1, "limit below 1 is clamped to 1");
  const huge = await (await app.request("/_/api/admin/audit?limit=99999")).json();
  assert.equal(huge.entries.length, 3);

  const bad = await app.request("/_/api/admin/audit?limit=ten");
  assert.equal(bad.status, 400);
  const body = await bad.json();
  assert.equal(body.error, "bad_request");
  assert.match(body.message, /"ten"/);
});

Deno.test("GET /logs: level, target, q and limit filters; bad level is 400", async () => {
  const logRing = new LogRing({ minLevel: "debug", capacity: 50 });
  logRing.push(line("PUT done", "info", "svc::s3", { bucket: "photos" }));
  logRing.push(line("signature mismatch", "warn", "svc::auth", { ip: "10.0.0.1" }));
  logRing.push(line("sweep failed", "error", "svc::runtime", { error: "EIO" }));
  logRing.push(line("listing", "debug", "svc::s3::list", { bucket: "Photos" }));
  const app = appWith({ logRing, auditRing: new AuditRing() });
  const messages = async (query: string) => {
    const response = await app.request(`/_/api/admin/logs${query}`);
    assert.equal(response.status, 200);
    return (await response.json()).entries.map((e: { message: string }) => e.message);
  };
  assert.deepEqual(await messages(""), [
    "listing",
    "sweep failed",
    "signature mismatch",
    "PUT done",
  ]);
  assert.deepEqual(await messages("?level=warn"), ["sweep failed", "signature mismatch"]);
  assert.deepEqual(await messages("?level=WARNING"), ["sweep failed", "signature mismatch"]);
  assert.deepEqual(await messages("?target=svc::s3"), ["listing", "PUT done"]);
  assert.deepEqual(await messages("?q=photos"), ["listing", "PUT done"]);
  assert.deepEqual(await messages("?level=info&target=svc::s3"), ["PUT done"]);
  assert.deepEqual(await messages("?limit=1"), ["listing"]);
  assert.deepEqual(await messages("?limit=-5"), ["listing"]);

  for (const query of ["?level=loud", "?level=off", "?limit=1.5", `?q=${"x".repeat(300)}`]) {
    const response = await app.request(`/_/api/admin/logs${query}`);
    assert.equal(response.status, 400, query);
    assert.equal((await response.json()).error, "bad_request", query);
  }
});

Deno.test("GET /logs/stream: a pushed line arrives within a second; disconnect unsubscribes", async () => {
  const logRing = new LogRing();
  await using svc = serve({ logRing, auditRing: new AuditRing() });
  const abort = new AbortController();
  const response = await svc.get(`/logs/stream?level=warn&target=svc::auth`, {
    signal: abort.signal,
  });
  assert.equal(response.status, 200);
  assert.match(response.headers.get("content-type")!, /^text\/event-stream/);
  assert.equal(response.headers.get("cache-control"), "no-cache, no-store");
  const reader = response.body!.getReader();
  await readUntil(reader, (t) => t.includes(": connected"), 1000);
  assert.equal(logRing.subscriberCount, 1);

  logRing.push(line("filtered out: info", "info", "svc::auth"));
  logRing.push(line("filtered out: other target", "warn", "svc::s3"));
  const pushed = logRing.push(
    line("lockout of 10.0.0.9", "warn", "svc::auth", { ip: "10.0.0.9" }),
  )!;
  const started = Date.now();
  const text = await readUntil(reader, (t) => t.includes("lockout of"), 1000);
  assert.ok(Date.now() - started < 1000);
  assert.ok(text.includes(`id: ${pushed.id}\nevent: log\n`), text);
  const events = eventsOf(text);
  assert.equal(events.length, 1, "only the matching line is sent");
  assert.equal(events[0].message, "lockout of 10.0.0.9");
  assert.deepEqual(events[0].fields, { ip: "10.0.0.9" });

  abort.abort();
  await reader.cancel().catch(() => {});
  await waitFor(() => logRing.subscriberCount === 0, 2000, "the subscription to be removed");
});

Deno.test("GET /logs/stream: heartbeat comments while idle", async () => {
  const logRing = new LogRing();
  await using svc = serve({ logRing, auditRing: new AuditRing(), stream: { heartbeatMs: 50 } });
  const response = await svc.get(`/logs/stream`);
  const reader = response.body!.getReader();
  const text = await readUntil(reader, (t) => t.split(": heartbeat\n\n").length > 2, 2000);
  assert.ok(text.startsWith(": connected\n\n"));
  await reader.cancel();
  await waitFor(() => logRing.subscriberCount === 0, 2000, "the subscription to be removed");
});

Deno.test("GET /logs/stream: Last-Event-ID resumes from the backlog, then tails", async () => {
  const logRing = new LogRing();
  for (let i = 1; i <= 4; i++) logRing.push(line(`m${i}`));
  await using svc = serve({ logRing, auditRing: new AuditRing() });
  const response = await svc.get(`/logs/stream`, { headers: { "last-event-id": "2" } });
  const reader = response.body!.getReader();
  let text = await readUntil(reader, (t) => t.includes('"m4"'), 1000);
  logRing.push(line("m5"));
  text = await readUntil(reader, (t) => t.includes('"m5"'), 1000, text);
  assert.deepEqual(eventsOf(text).map((e) => e.message), ["m3", "m4", "m5"]);
  await reader.cancel();
  await waitFor(() => logRing.subscriberCount === 0, 2000, "the subscription to be removed");

  const app = appWith({ logRing, auditRing: new AuditRing() });
  const bad = await app.request("/_/api/admin/logs/stream", { headers: { "last-event-id": "x" } });
  assert.equal(bad.status, 400);
  const badLevel = await app.request("/_/api/admin/logs/stream?level=nope");
  assert.equal(badLevel.status, 400);
  assert.equal((await badLevel.json()).error, "bad_request");
  assert.equal(logRing.subscriberCount, 0, "a refused stream never subscribes");
});

/**
 * Pushes 4 KiB lines a few per turn of the event loop, as a busy server logs them (fewer per
 * turn than the ring queues per subscriber, so a client that reads keeps up), until `count`
 * lines or `stop()`. Returns how many were pushed.
 */
async function pushSlowly(ring: LogRing, count: number, stop = () => false): Promise<number> {
  const payload = "x".repeat(4096);
  let pushed = 0;
  while (pushed < count && !stop()) {
    for (let i = 0; i < 4 && pushed < count; i++) {
      ring.push(line(`line ${++pushed}`, "info", "svc::s3", { payload }));
    }
    await new Promise((r) => setTimeout(r, 0));
  }
  return pushed;
}

const SLOW_STREAM = { queueEvents: 4, stallMs: 300 };
/** The control's stream: the same queue, a stall limit no reading client reaches on a busy host. */
const READ_STREAM = { queueEvents: 4, stallMs: 5000 };

Deno.test("GET /logs/stream: a client that reads keeps up with a steady stream", async () => {
  // The control for the next test: the same pushing, a client that reads, nothing dropped.
  const logRing = new LogRing({ maxQueue: 16 });
  await using svc = serve({ logRing, auditRing: new AuditRing(), stream: READ_STREAM });
  const response = await svc.get(`/logs/stream`);
  const reader = response.body!.getReader();
  // Until the event holding line 400 has ended (a read may stop inside it).
  const ended = (t: string) => t.includes('"line 400"') && /"line 400"[^\n]*\n\n/.test(t);
  const reading = readUntil(reader, ended, 20_000);
  await pushSlowly(logRing, 400);
  const text = await reading;
  assert.equal(eventsOf(text).length, 400);
  assert.equal(eventsOf(text, "dropped").length, 0);
  await reader.cancel();
  await waitFor(() => logRing.subscriberCount === 0, 2000, "the subscription to be removed");
});

Deno.test("GET /logs/stream: a reader that never reads is dropped with a final event", async () => {
  const logRing = new LogRing({ maxQueue: 16 });
  await using svc = serve({ logRing, auditRing: new AuditRing(), stream: SLOW_STREAM });
  const response = await svc.get(`/logs/stream`);
  assert.equal(response.status, 200);
  await waitFor(() => logRing.subscriberCount === 1, 1000, "the subscription");
  // The client reads nothing: socket buffers fill, then the stream's queue, then the ring's
  // per-subscriber queue. The stream must end instead of buffering the rest.
  const total = 20_000; // 80 MiB if it were all buffered
  const pushed = await pushSlowly(logRing, total, () => logRing.subscriberCount === 0);
  assert.equal(logRing.subscriberCount, 0, `still subscribed after ${pushed} lines`);
  assert.ok(pushed < total, "dropped long before everything was pushed");
  assert.ok(pushed > 16, `dropped after ${pushed} lines: more than a burst`);

  // What the server had queued or sent is bounded: reading it now ends with the final event.
  const text = await new Response(response.body).text();
  const delivered = eventsOf(text).length;
  assert.ok(delivered < pushed, `delivered ${delivered} of ${pushed}`);
  assert.ok(text.length < 32 * 1024 * 1024, `read ${text.length} bytes`);
  const [final] = eventsOf(text, "dropped");
  assert.equal(final?.reason, "slow_reader", text.slice(-300));
  assert.ok(text.trimEnd().endsWith("}"), "the dropped event is the last one");
});

Deno.test("GET /logs/stream: a reader that falls behind while reading is dropped", async () => {
  // Through app.request (no socket): the client reads only what the test pulls.
  const logRing = new LogRing({ maxQueue: 8 });
  const app = appWith({ logRing, auditRing: new AuditRing(), stream: { queueEvents: 2 } });
  const response = await app.request("/_/api/admin/logs/stream");
  const reader = response.body!.getReader();
  await readUntil(reader, (t) => t.includes(": connected"), 1000);
  for (let i = 1; i <= 100; i++) logRing.push(line(`burst ${i}`));
  const text = await readUntil(reader, (t) => t.includes("event: dropped"), 2000);
  const [final] = eventsOf(text, "dropped");
  assert.equal(final.reason, "slow_reader");
  assert.ok((final.dropped as number) > 0);
  assert.equal(logRing.subscriberCount, 0);
  const rest = await reader.read();
  assert.equal(rest.done, true, "the stream ends after the dropped event");
});
