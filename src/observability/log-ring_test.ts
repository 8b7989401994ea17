import assert from "node:assert/strict";
import {
  fieldTreatment,
  type LogEntry,
  LogRing,
  maskKey,
  REDACTED,
  redactFields,
  Ring,
} from "./log-ring.ts";
import type { LogLevel } from "./log-level.ts";

function line(
  message: string,
  level: LogLevel = "info",
  target = "svc::s3",
  fields: Record<string, unknown> = {},
): Omit<LogEntry, "id"> {
  return { time: "2024-01-01T00:00:00.000Z", level, target, message, fields };
}

/** Lets queued microtasks (subscriber deliveries) run. */
const settle = () => new Promise((resolve) => setTimeout(resolve, 0));

Deno.test("ring: keeps the newest capacity items, newest first", () => {
  const ring = new Ring<number>(3);
  assert.deepEqual([...ring.newestFirst()], []);
  for (let i = 1; i <= 5; i++) ring.push(i);
  assert.equal(ring.size, 3);
  assert.deepEqual([...ring.newestFirst()], [5, 4, 3]);
  assert.throws(() => new Ring(0), RangeError);
});

Deno.test("log ring: capacity bound, monotonic ids, newest first", () => {
  const ring = new LogRing({ capacity: 3 });
  for (let i = 1; i <= 5; i++) ring.push(line(`m${i}`));
  assert.equal(ring.size, 3);
  const entries = ring.query();
  assert.deepEqual(entries.map((e) => e.message), ["m5", "m4", "m3"]);
  assert.deepEqual(entries.map((e) => e.id), [5, 4, 3]);
});

Deno.test("log ring: drops lines below its minimum level", () => {
  const ring = new LogRing({ minLevel: "warn" });
  assert.equal(ring.push(line("i", "info")), null);
  assert.equal(ring.push(line("d", "debug")), null);
  assert.ok(ring.push(line("w", "warn")));
  assert.ok(ring.push(line("e", "error")));
  assert.deepEqual(ring.query().map((e) => e.message), ["e", "w"]);
  assert.equal(new LogRing().minLevel, "info", "default minimum is info");
  assert.equal(new LogRing().capacity, 2000, "default capacity is 2000");
});

Deno.test("log ring: query by minimum level, target prefix, text and limit", () => {
  const ring = new LogRing({ minLevel: "debug" });
  ring.push(line("PUT done", "info", "svc::s3", { bucket: "photos" }));
  ring.push(line("sig mismatch", "warn", "svc::auth", { ip: "10.0.0.1" }));
  ring.push(line("sweep failed", "error", "svc::runtime", { error: "EIO" }));
  ring.push(line("listing", "debug", "svc::s3::list", { bucket: "Docs" }));
  ring.push(line("x", "info", "svc::s3x"));

  assert.deepEqual(ring.query({ level: "warn" }).map((e) => e.message), [
    "sweep failed",
    "sig mismatch",
  ]);
  assert.deepEqual(ring.query({ target: "svc::s3" }).map((e) => e.target), [
    "svc::s3x",
    "svc::s3::list",
    "svc::s3",
  ]);
  assert.deepEqual(
    ring.query({ q: "DOCS" }).map((e) => e.message),
    ["listing"],
    "fields, any case",
  );
  assert.deepEqual(ring.query({ q: "Mismatch" }).map((e) => e.message), ["sig mismatch"]);
  assert.deepEqual(ring.query({ target: "svc::s3", level: "info", q: "photos" }).length, 1);
  assert.deepEqual(ring.query({ limit: 2 }).map((e) => e.message), ["x", "listing"]);
  assert.deepEqual(ring.query({ limit: 0 }), []);
  assert.deepEqual(ring.query({ after: 3 }).map((e) => e.id), [5, 4]);
});

Deno.test("log ring: subscribers get matching entries in order until they unsubscribe", async () => {
  const ring = new LogRing();
  const got: string[] = [];
  const unsubscribe = ring.subscribe({ level: "warn", target: "svc::auth" }, (entry) => {
    got.push(entry.message);
  });
  assert.equal(ring.subscriberCount, 1);
  ring.push(line("before-filter", "info", "svc::auth"));
  ring.push(line("a", "warn", "svc::auth"));
  ring.push(line("other target", "error", "svc::s3"));
  ring.push(line("b", "error", "svc::auth"));
  await settle();
  assert.deepEqual(got, ["a", "b"]);
  ring.push(line("queued, not yet delivered", "warn", "svc::auth"));
  unsubscribe();
  assert.equal(ring.subscriberCount, 0);
  ring.push(line("c", "warn", "svc::auth"));
  await settle();
  assert.deepEqual(got, ["a", "b"]);
});

Deno.test("log ring: a slow subscriber's queue is bounded and reports drops", async () => {
  const ring = new LogRing({ maxQueue: 3 });
  const got: Array<[string, number]> = [];
  let release!: () => void;
  const gate = new Promise<void>((resolve) => release = resolve);
  ring.subscribe({}, async (entry, dropped) => {
    got.push([entry.message, dropped]);
    if (entry.message === "m1") await gate;
  });
  ring.push(line("m1"));
  await settle(); // m1 delivered; the subscriber is now stuck on it
  for (let i = 2; i <= 10; i++) ring.push(line(`m${i}`));
  await settle();
  assert.deepEqual(got, [["m1", 0]], "nothing more while the subscriber is busy");
  release();
  await settle();
  assert.deepEqual(got, [["m1", 0], ["m8", 6], ["m9", 0], ["m10", 0]]);
  assert.equal(ring.size, 10, "the ring itself is unaffected");
});

Deno.test("log ring: a throwing subscriber is removed", async () => {
  const ring = new LogRing();
  let calls = 0;
  ring.subscribe({}, () => {
    calls++;
    throw new Error("client went away");
  });
  ring.push(line("a"));
  await settle();
  ring.push(line("b"));
  await settle();
  assert.equal(calls, 1);
  assert.equal(ring.subscriberCount, 0);
});

Deno.test("redaction: secrets redacted, access keys masked, nested too", () => {
  const out = redactFields({
    secret: "s",
    secret_access_key: "wJalr",
    secretAccessKey: "wJalr",
    password: "hunter2",
    Authorization: "AWS4-HMAC-SHA256 Credential=…",
    token: "t",
    session_token: "t",
    key: "k",
    api_key: "k",
    access_key: "AKIAIOSFODNN7EXAMPLE",
    accessKeyId: "AKIAIOSFODNN7EXAMPLE",
    object_key: "photos/cat.jpg",
    bucket: "b",
    nested: { user: { password: "p", name: "ann" } },
    list: [{ token: "t", n: 1 }],
    nothing: undefined,
    empty: null,
  });
  assert.deepEqual(out, {
    secret: REDACTED,
    secret_access_key: REDACTED,
    secretAccessKey: REDACTED,
    password: REDACTED,
    Authorization: REDACTED,
    token: REDACTED,
    session_token: REDACTED,
    key: REDACTED,
    api_key: REDACTED,
    access_key: "AKIA****",
    accessKeyId: "AKIA****",
    object_key: "photos/cat.jpg",
    bucket: "b",
    nested: { user: { password: REDACTED, name: "ann" } },
    list: [{ token: REDACTED, n: 1 }],
    empty: null,
  });
  assert.equal(fieldTreatment("X-Amz-Security-Token"), "redact");
  assert.equal(fieldTreatment("ip"), "show");
  assert.equal(maskKey("AKIA"), "****");
  assert.equal(maskKey("AKIA****"), "AKIA****", "masking twice is harmless");
});

Deno.test("redaction: values become JSON-safe", () => {
  const cycle: Record<string, unknown> = {};
  cycle.self = cycle;
  const out = redactFields({
    error: new TypeError("boom"),
    big: 10n,
    nan: NaN,
    when: new Date(0),
    bytes: new Uint8Array(3),
    cycle,
  });
  assert.equal(out.error, "TypeError: boom");
  assert.equal(out.big, "10");
  assert.equal(out.nan, "NaN");
  assert.equal(out.when, "1970-01-01T00:00:00.000Z");
  assert.equal(out.bytes, "<3 bytes>");
  assert.doesNotThrow(() => JSON.stringify(out));
});
