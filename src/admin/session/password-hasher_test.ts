import assert from "node:assert/strict";
import { HASH_A } from "../../../tests/helpers/config-db.ts";
import { AdminError } from "../admin-error.ts";
import { WorkerPasswordHasher } from "./password-hasher.ts";

Deno.test("hash and compare run on the worker", async () => {
  const hasher = new WorkerPasswordHasher();
  try {
    const hash = await hasher.hash("correct horse", 4);
    assert.match(hash, /^\$2b\$04\$[./A-Za-z0-9]{53}$/);
    assert.equal(await hasher.compare("correct horse", hash), true);
    assert.equal(await hasher.compare("correct horsE", hash), false);
    assert.equal(await hasher.compare("a", HASH_A), true);
    assert.equal(hasher.running, true);
    assert.equal(await hasher.compare("a", "not a hash"), false);
  } finally {
    hasher.terminate();
  }
});

Deno.test("a full queue answers 429 instead of growing", async () => {
  const hasher = new WorkerPasswordHasher({ maxQueued: 2 });
  try {
    const first = hasher.hash("one", 6);
    const second = hasher.hash("two", 6);
    await assert.rejects(hasher.hash("three", 4), (err) => {
      assert.ok(err instanceof AdminError);
      assert.equal(err.status, 429);
      return true;
    });
    await Promise.all([first, second]);
    assert.match(await hasher.hash("four", 4), /^\$2b\$04\$/);
  } finally {
    hasher.terminate();
  }
});

Deno.test("the worker ends when idle and comes back for the next call", async () => {
  const hasher = new WorkerPasswordHasher({ idleMs: 20 });
  try {
    assert.equal(await hasher.compare("a", HASH_A), true);
    assert.equal(hasher.running, true);
    await new Promise((resolve) => setTimeout(resolve, 80));
    assert.equal(hasher.running, false);
    assert.equal(await hasher.compare("b", HASH_A), false);
    assert.equal(hasher.running, true);
  } finally {
    hasher.terminate();
  }
});

Deno.test("terminate fails the calls in flight", async () => {
  const hasher = new WorkerPasswordHasher();
  const pending = hasher.hash("slow", 10);
  hasher.terminate();
  await assert.rejects(pending, /password worker was stopped/);
  assert.equal(hasher.running, false);
});
