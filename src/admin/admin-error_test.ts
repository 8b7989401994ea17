import assert from "node:assert/strict";
import { Hono } from "hono";
import { AdminError, jsonBody, renderAdminError } from "./admin-error.ts";
import { JobsError } from "../jobs/jobs-error.ts";
import { jsonDepthOver, MAX_JSON_DEPTH } from "../lib/mod.ts";

function app() {
  const hono = new Hono();
  hono.onError(renderAdminError);
  hono.post("/echo", async (c) => c.json(await jsonBody(c, 64)));
  hono.get("/busy", () => {
    throw new AdminError("too_many_requests", "Slow down", { retry_after_secs: 7 });
  });
  hono.get("/job", () => {
    throw new JobsError("conflict", 'Rule "nightly" is already running');
  });
  hono.get("/boom", () => {
    throw new Error("secret internal detail");
  });
  return hono;
}

Deno.test("admin errors: one JSON shape, the code decides the status", async () => {
  const busy = await app().request("/busy");
  assert.equal(busy.status, 429);
  assert.equal(busy.headers.get("retry-after"), "7");
  assert.deepEqual(await busy.json(), {
    error: "too_many_requests",
    message: "Slow down",
    retry_after_secs: 7,
  });
  // Jobs raise their own error; it answers exactly as the AdminError of the same code would.
  const job = await app().request("/job");
  assert.equal(job.status, 409);
  assert.equal(
    await job.text(),
    '{"error":"conflict","message":"Rule \\"nightly\\" is already running"}',
  );
  const boom = await app().request("/boom");
  assert.equal(boom.status, 500);
  const body = await boom.json();
  assert.equal(body.error, "internal");
  assert.ok(!JSON.stringify(body).includes("secret internal detail"));
});

Deno.test("admin errors: JSON bodies are parsed strictly and bounded even when chunked", async () => {
  const ok = await app().request("/echo", { method: "POST", body: '{"a":1}' });
  assert.deepEqual(await ok.json(), { a: 1 });
  const bad = await app().request("/echo", { method: "POST", body: "{nope" });
  assert.equal(bad.status, 400);
  assert.equal((await bad.json()).error, "bad_request");
  const list = await app().request("/echo", { method: "POST", body: "[1]" });
  assert.equal(list.status, 400);
  // A stream has no Content-Length: the limit still holds while reading.
  const chunked = new ReadableStream<Uint8Array>({
    pull(controller) {
      controller.enqueue(new TextEncoder().encode(`{"x":"${"a".repeat(40)}`));
    },
  });
  const big = await app().request(
    "/echo",
    { method: "POST", body: chunked, duplex: "half" } as RequestInit,
  );
  assert.equal(big.status, 413);
  assert.equal((await big.json()).error, "payload_too_large");
});

Deno.test("admin errors: JSON bodies nested past MAX_JSON_DEPTH are 400 before parsing", async () => {
  const hono = new Hono();
  hono.onError(renderAdminError);
  hono.post("/echo", async (c) => c.json(await jsonBody(c)));
  const nested = (depth: number) => `{"a":`.repeat(depth) + "1" + "}".repeat(depth);
  const atLimit = await hono.request("/echo", { method: "POST", body: nested(MAX_JSON_DEPTH) });
  assert.equal(atLimit.status, 200);
  await atLimit.body?.cancel();
  const over = await hono.request("/echo", { method: "POST", body: nested(MAX_JSON_DEPTH + 1) });
  assert.equal(over.status, 400);
  const error = await over.json();
  assert.equal(error.error, "bad_request");
  assert.equal(error.max_depth, MAX_JSON_DEPTH);
  // Brackets inside strings (escaped quotes included) are text, not nesting.
  const text = `{"s":"${"[{".repeat(200)}\\"${"[".repeat(200)}"}`;
  const inString = await hono.request("/echo", { method: "POST", body: text });
  assert.equal(inString.status, 200);
  assert.equal((await inString.json()).s.length, 601);
});

Deno.test("jsonDepthOver: linear, string-aware, reports the first depth past the bound", () => {
  assert.equal(jsonDepthOver("[[[]]]", 3), 0);
  assert.equal(jsonDepthOver("[[[[]]]]", 3), 4);
  assert.equal(jsonDepthOver('["[[[[", {"a": "}}}\\\\"}]', 2), 0);
  assert.equal(jsonDepthOver("[".repeat(1_000_000)), MAX_JSON_DEPTH + 1);
});

Deno.test("admin errors: a full disk (ENOSPC, SQLITE_FULL) is 507 insufficient_storage", async () => {
  const hono = new Hono();
  hono.onError(renderAdminError);
  const sqliteFull = Object.assign(new Error("SQLITE_FULL: database or disk is full"), {
    code: "SQLITE_FULL",
  });
  const enospc = new Error("write failed", {
    cause: Object.assign(new Error("No space left on device (os error 28)"), { code: "ENOSPC" }),
  });
  hono.get("/db", () => {
    throw sqliteFull;
  });
  hono.get("/fs", () => {
    throw enospc;
  });
  for (const path of ["/db", "/fs"]) {
    const response = await hono.request(path);
    assert.equal(response.status, 507, path);
    const body = await response.json();
    assert.equal(body.error, "insufficient_storage");
    assert.match(body.message, /disk is full/);
  }
});
