import assert from "node:assert/strict";
import { SvcError } from "../lib/errors.ts";
import type { Backend, BucketEntry } from "./backend.ts";
import { BucketRouter, type RouterSettings } from "./bucket-router.ts";
import { FilesystemBackend } from "./fs/filesystem-backend.ts";
import { fakeMeta as meta } from "../testing/object-fixtures.ts";

async function put(backend: Backend, bucket: string, key: string, text: string) {
  const bytes = new TextEncoder().encode(text);
  const staged = await backend.stageObject(bucket, key, new Blob([bytes]).stream());
  await staged.commit(meta(bytes.length));
}

async function text(backend: Backend, bucket: string, key: string): Promise<string | null> {
  const found = await backend.getObject(bucket, key);
  return found ? await new Response(found.body).text() : null;
}

interface Fixture {
  a: FilesystemBackend;
  b: FilesystemBackend;
  down: Set<string>;
  settings: RouterSettings;
  router: BucketRouter;
  [Symbol.asyncDispose](): Promise<void>;
}

async function fixture(policies: RouterSettings["policies"] = {}): Promise<Fixture> {
  const dirs = [await Deno.makeTempDir(), await Deno.makeTempDir()];
  const a = await FilesystemBackend.open(dirs[0]);
  const b = await FilesystemBackend.open(dirs[1]);
  const down = new Set<string>();
  const settings: RouterSettings = {
    policies,
    listTimeoutMs: 1000,
    listCooldownMs: 60_000,
    listFreshMs: 0,
  };
  const router = new BucketRouter(
    [
      { name: "a", backend: a, available: () => !down.has("a") },
      { name: "b", backend: b, available: () => !down.has("b") },
    ],
    "a",
    () => settings,
  );
  return {
    a,
    b,
    down,
    settings,
    router,
    async [Symbol.asyncDispose]() {
      for (const dir of dirs) await Deno.remove(dir, { recursive: true });
    },
  };
}

Deno.test("router: policies route by backend and alias; errors name the virtual bucket", async () => {
  await using f = await fixture({
    logs: { backend: "b", alias: "real-logs" },
    pinned: { backend: "b" },
  });
  await f.router.createBucket("logs");
  assert.ok(await f.b.headBucket("real-logs"));
  assert.equal(await f.a.headBucket("logs"), null);
  await put(f.router, "logs", "x.txt", "hello");
  assert.equal(await text(f.b, "real-logs", "x.txt"), "hello");
  assert.equal((await f.router.headBucket("logs"))?.name, "logs");
  await assert.rejects(
    () => put(f.router, "pinned", "k", "v"),
    (err: SvcError) =>
      err.code === "NoSuchBucket" && err.details.BucketName === "pinned" &&
      !err.message.includes("real-"),
  );
  await f.b.createBucket("real-x");
  const router2 = new BucketRouter(
    [{ name: "b", backend: f.b, available: () => true }],
    "b",
    () => ({ ...f.settings, policies: { x: { alias: "real-x" } } }),
  );
  await assert.rejects(
    () => router2.getObject("x", "missing").then((v) => v ?? Promise.reject(new Error("null"))),
    /null/,
  );
  await assert.rejects(
    () => router2.deleteBucket("nope"),
    (err: SvcError) => err.code === "NoSuchBucket" && err.details.BucketName === "nope",
  );
});

Deno.test("router: unrouted buckets are found by HEAD, default first; unknown ones go to the default", async () => {
  await using f = await fixture();
  await f.b.createBucket("only-on-b");
  await f.a.createBucket("on-both");
  await f.b.createBucket("on-both");
  await put(f.router, "only-on-b", "k", "from router");
  assert.equal(await text(f.b, "only-on-b", "k"), "from router");
  await put(f.router, "on-both", "k", "default wins");
  assert.equal(await text(f.a, "on-both", "k"), "default wins");
  assert.equal(await text(f.b, "on-both", "k"), null);
  await f.router.createBucket("brand-new");
  assert.ok(await f.a.headBucket("brand-new"));
  assert.equal(await f.b.headBucket("brand-new"), null);
});

Deno.test("router: a backend error pins the bucket instead of falling through", async () => {
  await using f = await fixture();
  await f.b.createBucket("data");
  const failing: Backend = Object.create(f.a);
  failing.headBucket = () => Promise.reject(new SvcError("InternalError", "backend broke"));
  failing.stageObject = () => Promise.reject(new SvcError("InternalError", "backend broke"));
  const router = new BucketRouter(
    [
      { name: "a", backend: failing, available: () => true },
      { name: "b", backend: f.b, available: () => true },
    ],
    "a",
    () => f.settings,
  );
  await assert.rejects(() => put(router, "data", "k", "v"), /backend broke/);
  assert.equal(await text(f.b, "data", "k"), null);
});

Deno.test("router: an unavailable backend answers 503 for its buckets and never loses them to another", async () => {
  await using f = await fixture({ routed: { backend: "b" } });
  await f.b.createBucket("routed");
  await f.b.createBucket("unrouted");
  f.down.add("b");
  for (const bucket of ["routed", "unrouted"]) {
    await assert.rejects(
      () => f.router.headObject(bucket, "k"),
      (err: SvcError) => err.status === 503 && err.code === "ServiceUnavailable",
    );
  }
  await assert.rejects(
    () => f.router.createBucket("unrouted"),
    (err: SvcError) => err.status === 503,
  );
  assert.equal(await f.a.headBucket("unrouted"), null);
  f.down.delete("b");
  assert.equal(await f.router.headObject("routed", "k"), null);
});

Deno.test("router: ListBuckets merges backends, maps aliases, hides routed-away names", async () => {
  await using f = await fixture({
    mirror: { backend: "b", alias: "mirror-real" },
    elsewhere: { backend: "b" },
  });
  await f.a.createBucket("alpha");
  await f.b.createBucket("beta");
  await f.b.createBucket("mirror-real");
  await f.a.createBucket("elsewhere"); // a stray bucket of the same name on the default backend
  await f.b.createBucket("elsewhere");
  await f.a.createBucket("beta"); // the default backend wins a duplicate name
  const names = (await f.router.listBuckets()).map((entry: BucketEntry) => entry.name);
  assert.deepEqual(names, ["alpha", "beta", "elsewhere", "mirror"]);
});

Deno.test("router: ListBuckets shows placeholders for a failing backend, cools down, recovers", async () => {
  let now = 1_000_000;
  await using f = await fixture({ pinned: { backend: "b" } });
  await f.a.createBucket("alpha");
  await f.b.createBucket("beta");
  let failing = false;
  let calls = 0;
  const flaky: Backend = Object.create(f.b);
  flaky.listBuckets = () => {
    calls++;
    return failing ? Promise.reject(new Error("connection refused")) : f.b.listBuckets();
  };
  const { BucketLister } = await import("./bucket-lister.ts");
  const lister = new BucketLister(
    [{ name: "a", backend: f.a }, { name: "b", backend: flaky }],
    "a",
    () => ({ ...f.settings, listCooldownMs: 30_000 }),
    () => now,
  );
  assert.deepEqual((await lister.list()).map((e) => e.name), ["alpha", "beta"]);
  failing = true;
  const during = await lister.list();
  assert.deepEqual(during.map((e) => e.name), ["alpha", "beta", "pinned"]);
  assert.equal(calls, 2);
  now += 10_000;
  await lister.list();
  assert.equal(calls, 2, "no call during the cooldown");
  failing = false;
  await f.b.createBucket("gamma");
  now += 30_000;
  assert.deepEqual((await lister.list()).map((e) => e.name), ["alpha", "beta", "gamma"]);
  assert.equal(calls, 3);
});

Deno.test("router: ListBuckets is reused while fresh; create and delete invalidate", async () => {
  await using f = await fixture();
  f.settings.listFreshMs = 60_000;
  await f.router.createBucket("one");
  assert.deepEqual((await f.router.listBuckets()).map((e) => e.name), ["one"]);
  await f.a.createBucket("behind-our-back");
  assert.deepEqual((await f.router.listBuckets()).map((e) => e.name), ["one"]);
  await f.router.createBucket("two");
  assert.deepEqual(
    (await f.router.listBuckets()).map((e) => e.name),
    ["behind-our-back", "one", "two"],
  );
});

Deno.test("router: createBucketOn / deleteBucketOn target one backend and refresh the listing", async () => {
  await using f = await fixture();
  f.settings.listFreshMs = 60_000;
  assert.deepEqual(await f.router.listBuckets(), []);
  await f.router.createBucketOn("b", "on-b");
  assert.equal(await f.a.headBucket("on-b"), null);
  assert.ok(await f.b.headBucket("on-b"));
  assert.deepEqual((await f.router.listBuckets()).map((e) => e.name), ["on-b"]);
  await assert.rejects(
    f.router.createBucketOn("b", "on-b"),
    (err: SvcError) => err.code === "BucketAlreadyOwnedByYou",
  );
  f.down.add("b");
  await assert.rejects(
    f.router.createBucketOn("b", "other"),
    (err: SvcError) => err.code === "ServiceUnavailable",
  );
  f.down.delete("b");
  await f.router.deleteBucketOn("b", "on-b");
  assert.equal(await f.b.headBucket("on-b"), null);
  assert.deepEqual(await f.router.listBuckets(), []);
});
