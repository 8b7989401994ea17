import assert from "node:assert/strict";
import { SvcError } from "../lib/errors.ts";
import type {
  Backend,
  BucketEntry,
  ListPage,
  ObjectBody,
  ObjectInfo,
  ObjectMeta,
  StagedObject,
} from "./backend.ts";
import { ObservedBackend } from "./observed-backend.ts";
import { randomBytes } from "../testing/object-fixtures.ts";

const META: ObjectMeta = {
  size: 3,
  etag: "e",
  md5: "m",
  sha256: "s",
  contentType: "application/octet-stream",
  userMeta: {},
  headers: {},
  lastModified: 1,
  storage: "passthrough",
};
const INFO: ObjectInfo = { key: "k", storedSize: 3, meta: META };

/** A backend whose every method answers from `answers`, or throws when `fail` is set. */
class ScriptedBackend implements Backend {
  readonly kind = "filesystem" as const;
  fail = false;
  stagedBody?: ReadableStream<Uint8Array>;
  getBody?: ObjectBody;
  committed = 0;

  #answer<T>(value: T): Promise<T> {
    return this.fail ? Promise.reject(new SvcError("InternalError", "disk gone")) : (
      Promise.resolve(value)
    );
  }
  listBuckets(): Promise<BucketEntry[]> {
    return this.#answer([{ name: "b", created: new Date(0) }]);
  }
  headBucket(): Promise<BucketEntry | null> {
    return this.#answer(null);
  }
  createBucket(): Promise<void> {
    return this.#answer(undefined);
  }
  deleteBucket(): Promise<void> {
    return this.#answer(undefined);
  }
  headObject(): Promise<ObjectInfo | null> {
    return this.#answer(null);
  }
  getObject(): Promise<ObjectBody | null> {
    return this.#answer(this.getBody ?? null);
  }
  async stageObject(
    _bucket: string,
    _key: string,
    body: ReadableStream<Uint8Array>,
  ): Promise<StagedObject> {
    this.stagedBody = body;
    const bytes = new Uint8Array(await new Response(body).arrayBuffer());
    return await this.#answer({
      size: bytes.length,
      commit: () => {
        this.committed++;
        return this.#answer(INFO);
      },
      abort: () => this.#answer(undefined),
    });
  }
  updateObjectMeta(): Promise<ObjectInfo | null> {
    return this.#answer(null);
  }
  deleteObject(): Promise<boolean> {
    return this.#answer(false);
  }
  listObjects(): Promise<ListPage> {
    return this.#answer({ objects: [], commonPrefixes: [], isTruncated: false });
  }
}

function clock(start = 1_000) {
  const state = { t: start };
  return { state, now: () => state.t };
}

Deno.test("ObservedBackend: null before any call, records only successful calls", async () => {
  const inner = new ScriptedBackend();
  const { state, now } = clock();
  const observed = new ObservedBackend(inner, now);
  assert.equal(observed.kind, "filesystem");
  assert.equal(observed.lastSuccessAt(), null);

  inner.fail = true;
  await assert.rejects(observed.listBuckets(), (err: SvcError) => err.code === "InternalError");
  assert.equal(observed.lastSuccessAt(), null);

  inner.fail = false;
  assert.deepEqual(await observed.listBuckets(), [{ name: "b", created: new Date(0) }]);
  assert.equal(observed.lastSuccessAt(), 1_000);

  state.t = 2_000;
  inner.fail = true;
  await assert.rejects(observed.headObject("b", "k"));
  assert.equal(observed.lastSuccessAt(), 1_000, "a failure keeps the previous success time");
});

Deno.test("ObservedBackend: absent answers (null, false) count as success", async () => {
  const inner = new ScriptedBackend();
  const { state, now } = clock();
  const observed = new ObservedBackend(inner, now);
  assert.equal(await observed.headBucket("nope"), null);
  assert.equal(observed.lastSuccessAt(), 1_000);
  state.t = 1_500;
  assert.equal(await observed.headObject("b", "nope"), null);
  assert.equal(observed.lastSuccessAt(), 1_500);
  state.t = 1_600;
  assert.equal(await observed.deleteObject("b", "nope"), false);
  assert.equal(observed.lastSuccessAt(), 1_600);
  state.t = 1_700;
  assert.equal(await observed.getObject("b", "nope"), null);
  assert.equal(observed.lastSuccessAt(), 1_700);
});

Deno.test("ObservedBackend: delegates arguments and results of every method", async () => {
  const calls: unknown[][] = [];
  const inner = new ScriptedBackend();
  const spy = new Proxy(inner, {
    get(target, prop, receiver) {
      const value = Reflect.get(target, prop, receiver);
      if (typeof value !== "function") return value;
      return (...args: unknown[]) => {
        calls.push([prop, ...args]);
        return value.apply(target, args);
      };
    },
  });
  const observed = new ObservedBackend(spy);
  const options = { prefix: "p/", maxKeys: 5, delimiter: "/" };
  await observed.createBucket("b1");
  await observed.deleteBucket("b2");
  await observed.getObject("b3", "k3", { start: 1, end: 2 });
  await observed.listObjects("b4", options);
  assert.deepEqual(calls, [
    ["createBucket", "b1"],
    ["deleteBucket", "b2"],
    ["getObject", "b3", "k3", { start: 1, end: 2 }],
    ["listObjects", "b4", options],
  ]);
});

Deno.test("ObservedBackend: getObject passes the body through untouched", async () => {
  const inner = new ScriptedBackend();
  const bytes = randomBytes(200_000);
  let pulled = false;
  const body = new ReadableStream<Uint8Array>({
    pull(controller) {
      pulled = true;
      controller.enqueue(bytes.slice(0, 100_000));
      controller.enqueue(bytes.slice(100_000));
      controller.close();
    },
  }, { highWaterMark: 0 });
  inner.getBody = { info: INFO, body };
  const { now } = clock(5_000);
  const observed = new ObservedBackend(inner, now);

  const got = await observed.getObject("b", "k");
  assert.ok(got);
  assert.equal(observed.lastSuccessAt(), 5_000, "success counted before the body is read");
  assert.equal(pulled, false, "no read-ahead");
  assert.equal(got.body, body, "the same stream object");
  assert.equal(got.info, INFO);
  const read = new Uint8Array(await new Response(got.body).arrayBuffer());
  assert.deepEqual(read, bytes);
});

Deno.test("ObservedBackend: stageObject passes the body through; commit is observed", async () => {
  const inner = new ScriptedBackend();
  const { state, now } = clock();
  const observed = new ObservedBackend(inner, now);
  const bytes = randomBytes(70_000);
  const body = new Response(bytes).body!;

  const staged = await observed.stageObject("b", "k", body);
  assert.equal(inner.stagedBody, body, "the same stream object reaches the inner backend");
  assert.equal(staged.size, 70_000);
  assert.equal(observed.lastSuccessAt(), 1_000);

  state.t = 3_000;
  inner.fail = true;
  await assert.rejects(staged.commit(META));
  assert.equal(observed.lastSuccessAt(), 1_000);
  inner.fail = false;
  assert.equal(await staged.commit(META), INFO);
  assert.equal(inner.committed, 2);
  assert.equal(observed.lastSuccessAt(), 3_000);
  state.t = 4_000;
  await staged.abort();
  assert.equal(observed.lastSuccessAt(), 4_000);
});
