/**
 * Ordered commits of one stored name: a write replaces only the object it HEADed, stamped after
 * it; a refused commit retries the same staged bytes; a name that keeps changing answers SlowDown
 * and is never committed without a condition.
 */
import assert from "node:assert/strict";
import { SvcError } from "../../lib/mod.ts";
import { FilesystemBackend } from "../../storage/fs/filesystem-backend.ts";
import type { Backend, ObjectInfo, ObjectMeta, WriteCondition } from "../../storage/mod.ts";
import { metaFor } from "../../testing/object-fixtures.ts";
import { commitOrdered, commitStreamed, pauseAfter } from "./ordered-commit.ts";
import { writtenAtOf } from "./stored-order.ts";

const utf8 = new TextEncoder();
const KEY = "dumps/big.sql";

async function bodyOf(backend: Backend, key: string): Promise<string> {
  const found = await backend.getObject("b", key);
  assert.ok(found, `${key} exists`);
  return await new Response(found.body).text();
}

async function commitText(backend: Backend, text: string, writtenAt: number) {
  const bytes = utf8.encode(text);
  const staged = await backend.stageObject("b", KEY, new Blob([bytes]).stream());
  return await staged.commit({ ...metaFor(bytes), writtenAt: String(writtenAt) } as ObjectMeta);
}

Deno.test("ordered commit: a streamed write that lost a race commits its one staged body after the winner", async () => {
  const dir = await Deno.makeTempDir({ prefix: "svc-ordered-" });
  try {
    const fs = await FilesystemBackend.open(dir);
    await fs.createBucket("b");
    await commitText(fs, "first", 1_000);
    const bytes = utf8.encode("streamed once");
    const staged = await fs.stageObject("b", KEY, new Blob([bytes]).stream());
    // Another instance commits under the name right after this writer's HEAD, stamped far ahead.
    const later = Date.now() + 60_000;
    let heads = 0;
    const racing: Pick<Backend, "headObject"> = {
      async headObject(bucket, key) {
        const info = await fs.headObject(bucket, key);
        if (++heads === 1) await commitText(fs, "theirs", later);
        return info;
      },
    };
    const conditions: (WriteCondition | undefined)[] = [];
    const counted = {
      ...staged,
      commit: (meta: ObjectMeta, condition?: WriteCondition) => {
        conditions.push(condition);
        return staged.commit(meta, condition);
      },
    };
    const info = await commitStreamed(racing, "b", KEY, counted, metaFor(bytes), true);
    assert.equal(heads, 2, "refused once, looked up again");
    assert.equal(conditions.length, 2);
    assert.ok(conditions.every((c) => c !== undefined && "ifMatch" in c), "always If-Match");
    assert.equal(await bodyOf(fs, KEY), "streamed once", "the staged body, sent once, is stored");
    assert.ok(writtenAtOf(info) > later, "stamped after the object it replaced");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("ordered commit: a key never stored as a delta commits at once, stamped now", async () => {
  let heads = 0;
  const inner = { headObject: () => (heads++, Promise.resolve(null)) };
  const metas: ObjectMeta[] = [];
  const staged = {
    size: 1,
    commit: (meta: ObjectMeta, condition?: WriteCondition) => {
      assert.equal(condition, undefined);
      metas.push(meta);
      return Promise.resolve({ key: "a.jpg", storedSize: 1, meta });
    },
    abort: () => Promise.resolve(),
  };
  const before = Date.now();
  await commitStreamed(inner, "b", "a.jpg", staged, metaFor(utf8.encode("x")), false);
  assert.equal(heads, 0);
  assert.ok(Number((metas[0] as { writtenAt?: string }).writtenAt) >= before);
});

/** A name that another writer replaces between every HEAD and commit of this one. */
function busyName(versioned = true) {
  let version = 0;
  const conditions: (WriteCondition | undefined)[] = [];
  const inner = {
    headObject: (): Promise<ObjectInfo> =>
      Promise.resolve({
        key: KEY,
        storedSize: 1,
        meta: { ...metaFor(utf8.encode("x")), writtenAt: String(Date.now()) } as ObjectMeta,
        ...(versioned ? { version: `v${++version}` } : {}),
      }),
  };
  const commit = (meta: ObjectMeta, condition?: WriteCondition): Promise<ObjectInfo> => {
    conditions.push(condition);
    if (!condition) return Promise.resolve({ key: KEY, storedSize: 1, meta });
    return Promise.reject(new SvcError("PreconditionFailed", "If-Match did not hold"));
  };
  return { inner, commit, conditions };
}

Deno.test("ordered commit: a name that keeps changing answers SlowDown, never commits unconditionally", async () => {
  const { inner, commit, conditions } = busyName();
  const started = Date.now();
  await assert.rejects(
    commitOrdered(inner, "b", KEY, metaFor(utf8.encode("x")), commit, { deadlineMs: 300 }),
    (err) => err instanceof SvcError && err.code === "SlowDown" && err.status === 503,
  );
  const took = Date.now() - started;
  assert.ok(took <= 1_000, `bounded (${took} ms)`);
  assert.ok(conditions.length >= 3, `retried with back-off (${conditions.length} tries)`);
  assert.ok(conditions.every((c) => c !== undefined), "every try was conditional");
});

Deno.test("ordered commit: a backend without version tokens commits over an object as before", async () => {
  const { inner, commit, conditions } = busyName(false);
  await commitOrdered(inner, "b", KEY, metaFor(utf8.encode("x")), commit);
  assert.deepEqual(conditions, [undefined]);
});

Deno.test("ordered commit: back-off doubles from 20 ms to at most 500 ms, with jitter", () => {
  for (let attempt = 1; attempt <= 12; attempt++) {
    const base = Math.min(500, 20 * 2 ** (attempt - 1));
    const pause = pauseAfter(attempt);
    assert.ok(pause >= base / 2 && pause <= base, `attempt ${attempt}: ${pause}`);
  }
});

Deno.test("ordered commit: a write stored again keeps its source's stamp and never replaces a newer one", async () => {
  const dir = await Deno.makeTempDir({ prefix: "svc-ordered-" });
  try {
    const fs = await FilesystemBackend.open(dir);
    await fs.createBucket("b");
    const source = await commitText(fs, "the source write", 5_000);
    const again = (text: string, stillStored = true) => {
      const bytes = utf8.encode(text);
      return commitOrdered(fs, "b", KEY, metaFor(bytes), async (meta, condition) => {
        const staged = await fs.stageObject("b", KEY, new Blob([bytes]).stream());
        return await staged.commit(meta, condition);
      }, { sameWrite: { source, stillStored: () => Promise.resolve(stillStored) } });
    };
    // The name holds a newer write than the source (here: the source itself is not older).
    await assert.rejects(
      again("converted"),
      (err) => (err as SvcError).code === "PreconditionFailed",
    );
    assert.equal(await bodyOf(fs, KEY), "the source write");

    // An older write under the name is replaced, with the source's stamp, not a new one.
    await commitText(fs, "an older write", 1_000);
    const { info } = await again("converted");
    assert.equal(writtenAtOf(info), 5_000);
    assert.equal(await bodyOf(fs, KEY), "converted");

    // The source was deleted meanwhile: nothing is committed.
    await commitText(fs, "an older write", 1_000);
    await assert.rejects(
      again("late", false),
      (err) => (err as SvcError).code === "PreconditionFailed",
    );
    assert.equal(await bodyOf(fs, KEY), "an older write");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
