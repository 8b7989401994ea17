/**
 * Logical listings cost O(page), not O(subtree): the few stored `p.delta` names that could
 * still sort before a page's keys are looked up, not listed through.
 */
import assert from "node:assert/strict";
import type { Backend, ListOptions } from "../storage/backend.ts";
import { FilesystemBackend } from "../storage/fs/filesystem-backend.ts";
import { fakeMeta } from "../testing/object-fixtures.ts";
import { listLogicalPage } from "./delta-list.ts";
import { blockingDeltaNames, isSettled } from "./layout.ts";
import { compareUtf8 } from "../lib/key-order.ts";

function random(seed: number): () => number {
  return () => (seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648;
}

async function put(backend: Backend, key: string, lastModified = 1) {
  const staged = await backend.stageObject("b", key, new Blob(["x"]).stream());
  await staged.commit(fakeMeta(1, { lastModified }));
}

/** The inner backend, counting its listing calls and the stored entries they returned. */
function counting(inner: Backend): { backend: Backend; calls: () => number; listed: string[] } {
  let calls = 0;
  const listed: string[] = [];
  const backend = Object.create(inner) as Backend;
  backend.listObjects = async (bucket: string, options: ListOptions) => {
    calls++;
    const page = await inner.listObjects(bucket, options);
    listed.push(...page.objects.map((o) => o.key));
    return page;
  };
  return { backend, calls: () => calls, listed };
}

async function withStore(fn: (backend: FilesystemBackend) => Promise<void>) {
  const root = await Deno.makeTempDir({ prefix: "svc-delta-list-" });
  try {
    const backend = await FilesystemBackend.open(root);
    await backend.createBucket("b");
    await fn(backend);
  } finally {
    await Deno.remove(root, { recursive: true });
  }
}

Deno.test("blockingDeltaNames: the prefixes of the last name whose .delta sorts after it", () => {
  assert.deepEqual(blockingDeltaNames("x/app-1.0.5.zip.delta"), [
    "x/app",
    "x/app-1",
    "x/app-1.0",
    "x/app-1.0.5.zip.delta",
  ]);
  assert.deepEqual(blockingDeltaNames("x/1.0.5/"), ["x/1", "x/1.0"]);
  // Once they are resolved nothing else can block: every key up to the name is settled.
  const next = random(7);
  const alphabet = ["a", "-", ".", "/", "0", "1", ".delta", "z", "é", "😀"];
  for (let round = 0; round < 2000; round++) {
    const word = () =>
      Array.from(
        { length: 1 + Math.floor(next() * 5) },
        () => alphabet[Math.floor(next() * alphabet.length)],
      ).join("");
    const [key, last] = [word(), word()].sort(compareUtf8);
    const resolved = new Set(blockingDeltaNames(last));
    assert.ok(isSettled(key, last, resolved), `${key} after ${last}`);
  }
});

Deno.test("a page of many deltaspaces reads a page, not the subtree", () =>
  withStore(async (fs) => {
    for (let n = 0; n < 120; n++) {
      await put(fs, `x/1.0.${n}/reference.bin`);
      await put(fs, `x/1.0.${n}/app.zip.delta`);
    }
    const { backend, calls, listed } = counting(fs);
    const page = await listLogicalPage(backend, "b", { prefix: "x/", maxKeys: 5 }, 20);
    assert.deepEqual(page.objects.map((o) => o.key), [
      "x/1.0.0/app.zip",
      "x/1.0.1/app.zip",
      "x/1.0.10/app.zip",
      "x/1.0.100/app.zip",
      "x/1.0.101/app.zip",
    ]);
    assert.equal(page.isTruncated, true);
    // The baselines are never listed (their metadata never read): one inner page of 6 deltas.
    assert.equal(calls(), 1, `${calls()} inner listings for a 5-key page`);
    assert.deepEqual(listed.filter((key) => key.endsWith("/reference.bin")), []);
    assert.ok(listed.length <= 7, `${listed.length} stored entries read for a 5-key page`);
  }));

Deno.test("a blocking x.delta found by lookup is listed in its logical place", () =>
  withStore(async (fs) => {
    for (let n = 0; n < 50; n++) await put(fs, `x/app-1.0.${n}.zip.delta`);
    await put(fs, "x/app.delta"); // logical "x/app": sorts before every "x/app-…"
    await put(fs, "x/app-1.delta", 5); // logical "x/app-1", stored both ways: the later wins
    await put(fs, "x/app-1", 2);
    const { backend, calls } = counting(fs);
    for (const delimiter of [undefined, "/"]) {
      const first = await listLogicalPage(backend, "b", { prefix: "x/", delimiter, maxKeys: 3 }, 4);
      assert.deepEqual(first.objects.map((o) => o.key), ["x/app", "x/app-1", "x/app-1.0.0.zip"]);
      assert.equal(first.objects[1].meta.lastModified, 5);
      const next = await listLogicalPage(backend, "b", {
        prefix: "x/",
        delimiter,
        maxKeys: 2,
        startAfter: first.nextStartAfter,
      }, 4);
      assert.deepEqual(next.objects.map((o) => o.key), ["x/app-1.0.1.zip", "x/app-1.0.10.zip"]);
    }
    assert.ok(calls() <= 8, `${calls()} inner listings`);
  }));
