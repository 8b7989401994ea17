/**
 * Memory of replay detection at a sustained write rate: drives the ReplayStore directly with the
 * entries a stream of signed writes leaves behind, for as long as they stay remembered, and
 * reports the V8 heap they hold. Usage:
 *
 *   deno run -A --v8-flags=--expose-gc scripts/bench/replay-memory.ts [rate/s] [seconds] [mix]
 *
 * Defaults: 2,000 writes/s remembered for 300 s (the default clock skew: how long a signature
 * verifies) = 600,000 entries. `mix` is `put` (every answer a PutObject's: status and ETag, no
 * body) or `mixed` (1 in 10 a DeleteObjects answer with a 300-byte body, 1 in 10 not idempotent).
 */
import { ReplayStore } from "../../src/auth/replay/replay.ts";

const rate = Number(Deno.args[0] ?? 2000);
const seconds = Number(Deno.args[1] ?? 300);
const mix = Deno.args[2] ?? "put";
const entries = rate * seconds;

const gc = (globalThis as { gc?: () => void }).gc;
if (!gc) throw new Error("run with --v8-flags=--expose-gc");

function hex(bytes: number): string {
  const raw = crypto.getRandomValues(new Uint8Array(bytes));
  return Array.from(raw, (b) => b.toString(16).padStart(2, "0")).join("");
}

function heapUsed(): number {
  gc!();
  gc!();
  return Deno.memoryUsage().heapUsed;
}

const xmlBody = new TextEncoder().encode(
  `<?xml version="1.0" encoding="UTF-8"?><DeleteResult>${
    "<Deleted><Key>some/key.txt</Key></Deleted>".repeat(7)
  }</DeleteResult>`,
);

const store = new ReplayStore({ maxEntries: entries + 1 });
const before = heapUsed();
const rssBefore = Deno.memoryUsage().rss;
const started = performance.now();
// Requests arrive over `seconds`: time advances 1/rate ms per entry, nothing expires yet.
for (let i = 0; i < entries; i++) {
  const now = i * (1000 / rate);
  const claim = store.claim(hex(32), now, now + seconds * 1000 + 1000);
  const kind = mix === "mixed" ? i % 10 : 9;
  if (kind === 0) store.settle(claim, null);
  else if (kind === 1) {
    store.settle(claim, {
      status: 200,
      headers: "content-type\napplication/xml",
      body: xmlBody.slice(),
    });
  } else {
    // As the guard builds it: Headers.forEach pairs joined into one flat string.
    const headers = ["etag", `"${hex(16)}"`].join("\n");
    store.settle(claim, { status: 200, headers, body: null });
  }
}
const fillMs = performance.now() - started;
const after = heapUsed();
const rssAfter = Deno.memoryUsage().rss;
const perEntry = (after - before) / entries;
console.log(JSON.stringify({
  rate,
  seconds,
  mix,
  entries: store.size,
  heapMiB: +((after - before) / 2 ** 20).toFixed(1),
  bytesPerEntry: Math.round(perEntry),
  rssGrowthMiB: +((rssAfter - rssBefore) / 2 ** 20).toFixed(1),
  claimAndSettleMicros: +((fillMs * 1000) / entries).toFixed(2),
}));
// Expiry gives it all back: one claim past the window prunes every entry.
store.claim(hex(32), entries * (1000 / rate) + seconds * 1000 + 2000, Infinity);
console.log(
  JSON.stringify({
    afterExpiry: store.size,
    heapMiB: +((heapUsed() - before) / 2 ** 20).toFixed(1),
  }),
);
