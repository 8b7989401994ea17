import assert from "node:assert/strict";
import type { Backend, BucketEntry } from "../storage/backend.ts";
import { ObservedBackend } from "../storage/observed-backend.ts";
import {
  type BackendCheckOptions,
  createReadiness,
  Readiness,
  type ReadinessSettings,
  readyResponse,
} from "./readiness.ts";

const BUCKETS: BucketEntry[] = [{ name: "first", created: new Date(0) }, {
  name: "second",
  created: new Date(0),
}];

type Behaviour<T> = (call: number) => Promise<T>;

const up = (): Promise<BucketEntry[]> => Promise.resolve(BUCKETS);
const down = (): Promise<never> => Promise.reject(new Error("connection refused"));
const hang = (): Promise<never> => new Promise<never>(() => {});

/** A backend whose listBuckets/headBucket follow swappable behaviours and count calls. */
class FakeBackend implements Backend {
  readonly kind = "s3" as const;
  list: Behaviour<BucketEntry[]> = up;
  head: Behaviour<BucketEntry | null> = () => Promise.resolve(BUCKETS[0]);
  listCalls = 0;
  headCalls: string[] = [];

  listBuckets(): Promise<BucketEntry[]> {
    return this.list(++this.listCalls);
  }
  headBucket(bucket: string): Promise<BucketEntry | null> {
    this.headCalls.push(bucket);
    return this.head(this.headCalls.length);
  }
  createBucket(): Promise<void> {
    return Promise.reject(new Error("unused"));
  }
  deleteBucket(): Promise<void> {
    return Promise.reject(new Error("unused"));
  }
  headObject(): Promise<null> {
    return Promise.reject(new Error("unused"));
  }
  getObject(): Promise<null> {
    return Promise.reject(new Error("unused"));
  }
  stageObject(): Promise<never> {
    return Promise.reject(new Error("unused"));
  }
  updateObjectMeta(): Promise<never> {
    return Promise.reject(new Error("unused"));
  }
  deleteObject(): Promise<boolean> {
    return Promise.reject(new Error("unused"));
  }
  listObjects(): Promise<never> {
    return Promise.reject(new Error("unused"));
  }
}

function readiness(
  backend: Backend,
  settings: Partial<ReadinessSettings> = {},
  extra: Partial<BackendCheckOptions> = {},
): Readiness {
  const current: ReadinessSettings = {
    timeoutSecs: 0.05,
    retries: 2,
    cacheTtlSecs: 0,
    ...settings,
  };
  return createReadiness({ backend, settings: () => current, backoffMs: 5, ...extra });
}

// deno-lint-ignore no-explicit-any
const backendOf = (body: object): Record<string, any> => (body as any).checks.backend;

Deno.test("ready: backend up answers 200 with latency", async () => {
  const fake = new FakeBackend();
  const result = await readiness(fake).check();
  assert.equal(result.ready, true);
  assert.equal(result.body.status, "ready");
  const backend = backendOf(result.body);
  assert.equal(backend.status, "ok");
  assert.equal(typeof backend.latency_ms, "number");
  assert.equal(backend.attempts, 1);
  assert.equal(fake.listCalls, 1);

  const response = readyResponse(result);
  assert.equal(response.status, 200);
  assert.equal(response.headers.get("cache-control"), "no-store");
  assert.match(response.headers.get("content-type") ?? "", /application\/json/);
  assert.deepEqual(await response.json(), result.body);
});

Deno.test("ready: backend down answers 503 after exactly 1 + retries attempts", async () => {
  for (const retries of [0, 2, 4]) {
    const fake = new FakeBackend();
    fake.list = down;
    const result = await readiness(fake, { retries }).check();
    assert.equal(result.ready, false);
    assert.equal(result.body.status, "not_ready");
    assert.deepEqual(backendOf(result.body), {
      status: "error",
      error: "connection refused",
      attempts: 1 + retries,
    });
    assert.equal(fake.listCalls, 1 + retries);
    assert.deepEqual(fake.headCalls, [], "no headBucket with TTL 0");
    const response = readyResponse(result);
    assert.equal(response.status, 503);
    assert.equal(response.headers.get("cache-control"), "no-store");
    await response.body?.cancel();
  }
});

Deno.test("ready: a hanging backend is abandoned after each timeout", async () => {
  const fake = new FakeBackend();
  fake.list = hang;
  const started = performance.now();
  const result = await readiness(fake, { timeoutSecs: 0.1, retries: 2 }).check();
  const elapsed = performance.now() - started;
  assert.equal(result.ready, false);
  assert.equal(fake.listCalls, 3);
  assert.match(backendOf(result.body).error, /listBuckets timed out after 100 ms/);
  // 3 × 100 ms of timeouts plus 2 × 5 ms of backoff, with scheduling slack.
  assert.ok(elapsed >= 290, `too fast: ${elapsed} ms`);
  assert.ok(elapsed < 1000, `too slow: ${elapsed} ms`);
});

Deno.test("ready: a late rejection of an abandoned call is not unhandled", async () => {
  const unhandled: unknown[] = [];
  const onUnhandled = (event: PromiseRejectionEvent) => {
    unhandled.push(event.reason);
    event.preventDefault();
  };
  globalThis.addEventListener("unhandledrejection", onUnhandled);
  try {
    const fake = new FakeBackend();
    const late: Promise<unknown>[] = [];
    fake.list = () => {
      const call = new Promise<never>((_, reject) =>
        setTimeout(() => reject(new Error("late failure")), 60)
      );
      late.push(call.catch(() => {}));
      return call;
    };
    const result = await readiness(fake, { timeoutSecs: 0.02, retries: 1 }).check();
    assert.equal(result.ready, false);
    assert.equal(fake.listCalls, 2);
    assert.match(backendOf(result.body).error, /timed out/);
    await Promise.all(late);
    await new Promise((resolve) => setTimeout(resolve, 20));
    assert.deepEqual(unhandled, []);
  } finally {
    globalThis.removeEventListener("unhandledrejection", onUnhandled);
  }
});

Deno.test("ready: an answer after the timeout does not count", async () => {
  const fake = new FakeBackend();
  const timers: Promise<void>[] = [];
  fake.list = () =>
    new Promise((resolve) => {
      timers.push(new Promise((done) => setTimeout(() => (resolve(BUCKETS), done()), 60)));
    });
  const result = await readiness(fake, { timeoutSecs: 0.02, retries: 0 }).check();
  assert.equal(result.ready, false);
  await Promise.all(timers);
});

Deno.test("ready: recovers on a later attempt and on a later call", async () => {
  const fake = new FakeBackend();
  fake.list = (call) => call < 3 ? down() : up();
  const check = readiness(fake, { retries: 2 });
  const result = await check.check();
  assert.equal(result.ready, true);
  assert.equal(backendOf(result.body).attempts, 3);

  const later = new FakeBackend();
  later.list = (call) => call <= 2 ? down() : up();
  const probe = readiness(later, { retries: 1 });
  assert.equal((await probe.check()).ready, false);
  assert.equal((await probe.check()).ready, true);
  assert.equal(later.listCalls, 3);
});

Deno.test("ready: a synchronous throw from the backend is an error, not a crash", async () => {
  const fake = new FakeBackend();
  fake.list = () => {
    throw new Error("sync boom");
  };
  const result = await readiness(fake, { retries: 0 }).check();
  assert.equal(result.ready, false);
  assert.equal(backendOf(result.body).error, "sync boom");
});

Deno.test("ready: TTL > 0, list fails, headBucket of the first known bucket succeeds", async () => {
  const fake = new FakeBackend();
  const check = readiness(fake, { cacheTtlSecs: 5, retries: 1 });
  assert.equal((await check.check()).ready, true, "a successful list learns a bucket name");
  fake.list = down;
  fake.head = () => Promise.resolve(null); // "absent" is still an answer
  const result = await check.check();
  assert.equal(result.ready, true);
  assert.deepEqual(fake.headCalls, ["first"]);
  const backend = backendOf(result.body);
  assert.equal(backend.status, "ok");
  assert.equal(backend.probe, "head_bucket");
  assert.equal(backend.attempts, 2);
  assert.equal(backend.list_error, "connection refused");
});

Deno.test("ready: TTL > 0 with no bucket known skips headBucket", async () => {
  const fake = new FakeBackend();
  fake.list = down;
  const result = await readiness(fake, { cacheTtlSecs: 5 }).check();
  assert.equal(result.ready, false);
  assert.deepEqual(fake.headCalls, []);
});

Deno.test("ready: TTL 5, list and head fail, a call succeeded 1 s ago → stale ok", async () => {
  const fake = new FakeBackend();
  let now = 100_000;
  const observed = new ObservedBackend(fake, () => now);
  const check = readiness(observed, { cacheTtlSecs: 5 }, { now: () => now });
  assert.equal((await check.check()).ready, true);
  assert.equal(observed.lastSuccessAt(), 100_000);

  fake.list = down;
  fake.head = down;
  now = 101_000;
  const result = await check.check();
  assert.equal(result.ready, true);
  assert.equal(result.body.status, "ready");
  assert.deepEqual(fake.headCalls, ["first"]);
  assert.deepEqual(backendOf(result.body), {
    status: "stale_ok",
    last_success_age_ms: 1000,
    attempts: 3,
    list_error: "connection refused",
  });
  assert.equal(readyResponse(result).status, 200);

  now = 105_001;
  const expired = await check.check();
  assert.equal(expired.ready, false, "older than the TTL");
  assert.equal(backendOf(expired.body).last_success_age_ms, 5001);
});

Deno.test("ready: TTL 0 ignores a recent success and never tries headBucket", async () => {
  const fake = new FakeBackend();
  const now = 50_000;
  const check = readiness(fake, { cacheTtlSecs: 0 }, {
    now: () => now,
    lastSuccessAt: () => now - 1000,
  });
  assert.equal((await check.check()).ready, true, "a bucket name is known from here on");
  fake.list = down;
  const result = await check.check();
  assert.equal(result.ready, false);
  assert.deepEqual(fake.headCalls, [], "headBucket would have answered");
  assert.equal(backendOf(result.body).last_success_age_ms, 1000);
  assert.equal(readyResponse(result).status, 503);
});

Deno.test("ready: attempts are spaced by the backoff", async () => {
  const fake = new FakeBackend();
  const at: number[] = [];
  fake.list = () => (at.push(performance.now()), down());
  const check = readiness(fake, { retries: 2 }, { backoffMs: 40 });
  await check.check();
  assert.equal(at.length, 3);
  for (let i = 1; i < at.length; i++) {
    assert.ok(at[i] - at[i - 1] >= 35, `gap ${at[i] - at[i - 1]} ms`);
  }
});

Deno.test("ready: settings are read on every check", async () => {
  const fake = new FakeBackend();
  fake.list = down;
  const settings: ReadinessSettings = { timeoutSecs: 0.05, retries: 0, cacheTtlSecs: 0 };
  const check = createReadiness({ backend: fake, settings: () => settings, backoffMs: 1 });
  await check.check();
  assert.equal(fake.listCalls, 1);
  settings.retries = 3;
  await check.check();
  assert.equal(fake.listCalls, 5);
});

Deno.test("ready: concurrent checks share one in-flight probe", async () => {
  const fake = new FakeBackend();
  let release!: () => void;
  const gate = new Promise<void>((resolve) => release = resolve);
  fake.list = () => gate.then(() => BUCKETS);
  const check = readiness(fake, { timeoutSecs: 5 });
  const pending = Array.from({ length: 10 }, () => check.check());
  await new Promise((resolve) => setTimeout(resolve, 10));
  assert.equal(fake.listCalls, 1);
  release();
  const results = await Promise.all(pending);
  assert.ok(results.every((result) => result.ready));
  assert.equal(fake.listCalls, 1);

  await check.check();
  assert.equal(fake.listCalls, 2, "a check after the run finished probes again");
});

Deno.test("ready: every check must pass; a throwing check is reported, not thrown", async () => {
  const fake = new FakeBackend();
  const check = createReadiness({
    backend: fake,
    settings: () => ({ timeoutSecs: 1, retries: 0, cacheTtlSecs: 0 }),
    extraChecks: [{
      name: "config_db",
      run: () => Promise.reject(new Error("db locked")),
    }],
  });
  const result = await check.check();
  assert.equal(result.ready, false);
  assert.equal(backendOf(result.body).status, "ok");
  assert.deepEqual(result.body.checks.config_db, { status: "error", error: "db locked" });
});
