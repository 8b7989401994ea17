import assert from "node:assert/strict";
import { SvcError } from "../errors.ts";
import type { ObjectMeta } from "./backend.ts";
import { FilesystemBackend } from "./filesystem-backend.ts";
import { getJsonXattr, setJsonXattr, setXattr } from "./xattr.ts";
import { randomBytes } from "./object-fixtures.ts";

const encoder = new TextEncoder();

function metaFor(data: Uint8Array | string, extra: Partial<ObjectMeta> = {}): ObjectMeta {
  return {
    size: typeof data === "string" ? encoder.encode(data).length : data.length,
    etag: "etag",
    md5: "md5",
    sha256: "sha256",
    contentType: "application/octet-stream",
    userMeta: {},
    headers: {},
    lastModified: 1_700_000_000_000,
    storage: "passthrough",
    ...extra,
  };
}

/** A body that records whether anyone read it; pulls only on demand. */
function bodyOf(data: Uint8Array | string) {
  let bytes = typeof data === "string" ? encoder.encode(data) : data;
  const state = { read: false };
  const stream = new ReadableStream<Uint8Array>({
    pull(controller) {
      state.read = true;
      if (bytes.length === 0) return controller.close();
      controller.enqueue(bytes.subarray(0, 100_000));
      bytes = bytes.subarray(100_000);
    },
  }, { highWaterMark: 0 });
  return { stream, state };
}

async function put(backend: FilesystemBackend, key: string, data: Uint8Array | string) {
  const staged = await backend.stageObject("b", key, bodyOf(data).stream);
  try {
    return await staged.commit(metaFor(data));
  } catch (err) {
    await staged.abort(); // what every caller does after a failed commit
    throw err;
  }
}

async function text(backend: FilesystemBackend, key: string): Promise<string | null> {
  const got = await backend.getObject("b", key);
  return got ? await new Response(got.body).text() : null;
}

async function rejectsWith(promise: Promise<unknown>, code: string, message?: RegExp) {
  await assert.rejects(promise, (err) => {
    assert.ok(err instanceof SvcError, `expected SvcError, got ${err}`);
    assert.equal(err.code, code, err.message);
    if (message) assert.match(err.message, message);
    return true;
  });
}

async function withBackend(test: (backend: FilesystemBackend) => Promise<void>) {
  const dir = await Deno.makeTempDir();
  try {
    const backend = await FilesystemBackend.open(`${dir}/data`);
    await backend.createBucket("b");
    await test(backend);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

async function tempFiles(backend: FilesystemBackend): Promise<string[]> {
  return (await Array.fromAsync(Deno.readDir(`${backend.root}/.svc/tmp`))).map((e) => e.name);
}

Deno.test("open creates the root and removes temp files left by a crash", async () => {
  const dir = await Deno.makeTempDir();
  await Deno.mkdir(`${dir}/data/.svc/tmp`, { recursive: true });
  await Deno.writeTextFile(`${dir}/data/.svc/tmp/crashed.put`, "half");
  await Deno.utime(`${dir}/data/.svc/tmp/crashed.put`, new Date(2020, 0), new Date(2020, 0));
  await Deno.writeTextFile(`${dir}/data/.svc/tmp/in-flight.put`, "still being written");
  const backend = await FilesystemBackend.open(`${dir}/data`);
  assert.deepEqual(await tempFiles(backend), ["in-flight.put"]);
  const fresh = await FilesystemBackend.open(`${dir}/fresh/nested`);
  assert.ok((await Deno.stat(`${fresh.root}/.svc/tmp`)).isDirectory);
  await Deno.remove(dir, { recursive: true });
});

Deno.test("bytes and metadata round-trip", () =>
  withBackend(async (backend) => {
    const data = randomBytes(65536 * 5 + 17);
    const meta = metaFor(data, {
      contentType: "image/png",
      userMeta: { owner: "ünïcode" },
      headers: { "cache-control": "no-cache" },
      partsCount: 3,
    });
    const staged = await backend.stageObject("b", "dir/sub/file.bin", bodyOf(data).stream);
    assert.equal(staged.size, data.length);
    const info = await staged.commit(meta);
    assert.deepEqual(info, { key: "dir/sub/file.bin", storedSize: data.length, meta });
    assert.deepEqual(await backend.headObject("b", "dir/sub/file.bin"), info);
    const got = await backend.getObject("b", "dir/sub/file.bin");
    assert.ok(got);
    assert.deepEqual(got.info, info);
    assert.deepEqual(new Uint8Array(await new Response(got.body).arrayBuffer()), data);
    assert.deepEqual(await tempFiles(backend), []);
    assert.equal(await put(backend, "empty", "").then((i) => i.storedSize), 0);
    assert.equal(await text(backend, "empty"), "");
  }));

Deno.test("range reads return exactly the requested bytes", () =>
  withBackend(async (backend) => {
    const data = randomBytes(600_000);
    await put(backend, "r", data);
    for (const [start, end] of [[0, 0], [1, 262_144], [262_143, 599_999], [599_999, 599_999]]) {
      const got = await backend.getObject("b", "r", { start, end });
      assert.ok(got);
      const bytes = new Uint8Array(await new Response(got.body).arrayBuffer());
      assert.deepEqual(bytes, data.subarray(start, end + 1), `${start}-${end}`);
    }
    await rejectsWith(backend.getObject("b", "r", { start: 5, end: 600_000 }), "InvalidRange");
    // A cancelled body must close its file (the resource sanitizer checks).
    const got = await backend.getObject("b", "r", { start: 10, end: 500_000 });
    await got?.body.cancel();
  }));

Deno.test("a failed or aborted upload leaves neither object nor temp file", () =>
  withBackend(async (backend) => {
    const staged = await backend.stageObject("b", "k", bodyOf("data").stream);
    assert.equal((await tempFiles(backend)).length, 1);
    await staged.abort();
    assert.deepEqual(await tempFiles(backend), []);
    assert.equal(await backend.headObject("b", "k"), null);

    const controller = new AbortController();
    const stalled = new ReadableStream<Uint8Array>({
      pull(c) {
        c.enqueue(new Uint8Array(1000));
        controller.abort(new Error("client disconnected"));
        return new Promise(() => {});
      },
    });
    await assert.rejects(
      backend.stageObject("b", "k", stalled, controller.signal),
      /client disconnected/,
    );
    const broken = new ReadableStream<Uint8Array>({
      pull: (c) => c.error(new Error("connection reset")),
    });
    await assert.rejects(backend.stageObject("b", "k", broken), /connection reset/);
    assert.deepEqual(await tempFiles(backend), []);
    assert.equal(await backend.headObject("b", "k"), null);
  }));

Deno.test("a commit replaces the previous object in one step", () =>
  withBackend(async (backend) => {
    await put(backend, "k", "version one");
    const staged = await backend.stageObject("b", "k", bodyOf("version two!").stream);
    // Staged but not committed: readers still see version one.
    assert.equal(await text(backend, "k"), "version one");
    const reading = await backend.getObject("b", "k");
    await staged.commit(metaFor("version two!"));
    assert.equal(await new Response(reading?.body).text(), "version one");
    assert.equal((await backend.headObject("b", "k"))?.meta.size, 12);
    assert.equal(await text(backend, "k"), "version two!");
    assert.deepEqual(await tempFiles(backend), []);
  }));

Deno.test("refusals happen before the body is read", () =>
  withBackend(async (backend) => {
    await put(backend, "a", "file a");
    const cases: Array<[string, string, string]> = [
      ["missing", "k", "NoSuchBucket"],
      ["b", "../escape", "InvalidObjectName"],
      ["b", "a/b", "ObjectPathConflict"],
    ];
    for (const [bucket, key, code] of cases) {
      const body = bodyOf("x");
      await rejectsWith(backend.stageObject(bucket, key, body.stream), code);
      assert.equal(body.state.read, false, `${key}: body was read`);
    }
    await rejectsWith(
      backend.stageObject("b", "d/", bodyOf("bytes").stream),
      "InvalidRequest",
      /"d\/" ends in "\/"/,
    );
  }));

Deno.test("a file and a directory of the same name conflict without losing either", () =>
  withBackend(async (backend) => {
    await put(backend, "a", "file a");
    await rejectsWith(put(backend, "a/b", "x"), "ObjectPathConflict", /"a\/b".*existing key "a"/);
    await rejectsWith(put(backend, "a/b/c/d", "x"), "ObjectPathConflict", /existing key "a"/);
    await rejectsWith(put(backend, "a/", ""), "ObjectPathConflict", /"a\/".*"a"/);
    await put(backend, "p/q/r", "deep");
    await rejectsWith(put(backend, "p", "x"), "ObjectPathConflict", /"p".*existing key "p\/q\/r"/);
    await rejectsWith(put(backend, "p/q", "x"), "ObjectPathConflict", /"p\/q\/r"/);
    assert.equal(await text(backend, "a"), "file a");
    assert.equal(await text(backend, "p/q/r"), "deep");
    // A marker and keys below it coexist; a file of the marker's name does not.
    await put(backend, "m/", "");
    await put(backend, "m/child", "c");
    await rejectsWith(put(backend, "m", "x"), "ObjectPathConflict", /existing key "m\/"/);
    assert.equal((await backend.headObject("b", "m/"))?.storedSize, 0);
    assert.equal(await text(backend, "m/"), "");
    assert.equal(await text(backend, "m/child"), "c");
    assert.equal(await backend.headObject("b", "m"), null);
    assert.deepEqual(await tempFiles(backend), []);
  }));

Deno.test("a conflict that appears after staging fails the commit; abort cleans up", () =>
  withBackend(async (backend) => {
    const deep = await backend.stageObject("b", "c/d", bodyOf("deep").stream);
    await put(backend, "c", "file c"); // wins the race
    await rejectsWith(deep.commit(metaFor("deep")), "ObjectPathConflict", /existing key "c"/);
    await deep.abort();
    const flat = await backend.stageObject("b", "e", bodyOf("flat").stream);
    await put(backend, "e/f", "below");
    await rejectsWith(flat.commit(metaFor("flat")), "ObjectPathConflict", /"e\/f"/);
    await flat.abort();
    assert.equal(await text(backend, "c"), "file c");
    assert.equal(await text(backend, "e/f"), "below");
    assert.deepEqual(await tempFiles(backend), []);
  }));

Deno.test("a stale directory without objects gives way to a file", () =>
  withBackend(async (backend) => {
    await Deno.mkdir(`${backend.root}/b/s/t/u`, { recursive: true });
    await put(backend, "s", "file s");
    assert.equal(await text(backend, "s"), "file s");
    // A stray file that is not an object is never deleted to make room.
    await Deno.mkdir(`${backend.root}/b/v`);
    await Deno.writeTextFile(`${backend.root}/b/v/stray`, "not mine");
    await rejectsWith(put(backend, "v", "x"), "ObjectPathConflict", /not objects/);
    assert.equal(await Deno.readTextFile(`${backend.root}/b/v/stray`), "not mine");
  }));

Deno.test("reads treat non-objects and impossible keys as absent", () =>
  withBackend(async (backend) => {
    await Deno.mkdir(`${backend.root}/other`);
    await Deno.writeTextFile(`${backend.root}/other/secret`, "secret");
    setJsonXattr(`${backend.root}/other/secret`, "user.svc.meta", metaFor("secret"));
    await Deno.writeTextFile(`${backend.root}/b/plain`, "no metadata");
    await put(backend, "f", "file");
    for (const key of ["../other/secret", "plain", "f/below", "nope/deeper", "f/", "a//b"]) {
      assert.equal(await backend.headObject("b", key), null, key);
      assert.equal(await backend.getObject("b", key), null, key);
      assert.equal(await backend.deleteObject("b", key), false, key);
    }
    assert.equal(await Deno.readTextFile(`${backend.root}/b/plain`), "no metadata");
    for (const bucket of ["missing", "..", ".svc", ""]) {
      await rejectsWith(backend.headObject(bucket, "k"), "NoSuchBucket");
      await rejectsWith(backend.getObject(bucket, "k"), "NoSuchBucket");
      await rejectsWith(backend.deleteObject(bucket, "k"), "NoSuchBucket");
      await rejectsWith(backend.listObjects(bucket, { prefix: "", maxKeys: 5 }), "NoSuchBucket");
    }
    await assert.rejects(put(backend, "x".repeat(300), "y"), /longer than 255 bytes/);
    // Corrupt metadata is an error, not an absence.
    await Deno.writeFile(`${backend.root}/b/corrupt`, new Uint8Array());
    setXattr(`${backend.root}/b/corrupt`, "user.svc.meta", encoder.encode("{not json"));
    await assert.rejects(backend.headObject("b", "corrupt"), SyntaxError);
  }));

Deno.test("delete removes the object and now-empty parents, keeping markers", () =>
  withBackend(async (backend) => {
    await put(backend, "p/q/r/s", "deep");
    await put(backend, "p/", "");
    await put(backend, "keep/x", "x");
    await put(backend, "keep/y", "y");
    assert.equal(await backend.deleteObject("b", "p/q/r/s"), true);
    assert.equal(await backend.deleteObject("b", "p/q/r/s"), false);
    const bucketDir = `${backend.root}/b`;
    await assert.rejects(Deno.lstat(`${bucketDir}/p/q`), Deno.errors.NotFound);
    assert.ok((await Deno.lstat(`${bucketDir}/p`)).isDirectory, "marker p/ must stay");
    assert.equal(await backend.deleteObject("b", "p/"), true);
    await assert.rejects(Deno.lstat(`${bucketDir}/p`), Deno.errors.NotFound);
    assert.equal(await backend.deleteObject("b", "keep/x"), true);
    assert.equal(await text(backend, "keep/y"), "y");
    // Deleting a marker that still has children only removes the marker.
    await put(backend, "m/", "");
    await put(backend, "m/c", "c");
    assert.equal(await backend.deleteObject("b", "m/"), true);
    assert.equal(await backend.headObject("b", "m/"), null);
    assert.equal(await text(backend, "m/c"), "c");
    assert.equal(await backend.deleteObject("b", "m/c"), true);
    assert.deepEqual(await Array.fromAsync(Deno.readDir(`${bucketDir}`), (e) => e.name), [
      "keep",
    ]);
  }));

Deno.test("buckets: create, list, head, delete", async () => {
  const dir = await Deno.makeTempDir();
  const backend = await FilesystemBackend.open(dir);
  const before = Date.now();
  await backend.createBucket("zeta");
  await backend.createBucket("alpha");
  await Deno.mkdir(`${dir}/handmade`);
  await Deno.mkdir(`${dir}/.hidden`);
  await Deno.writeTextFile(`${dir}/not-a-bucket`, "file");
  const names = (await backend.listBuckets()).map((b) => b.name);
  assert.deepEqual(names, ["alpha", "handmade", "zeta"]);
  const alpha = await backend.headBucket("alpha");
  assert.ok(alpha && alpha.created.getTime() >= before && alpha.created.getTime() <= Date.now());
  assert.equal(
    getJsonXattr<{ created: number }>(`${dir}/alpha`, "user.svc.bucket")?.created,
    alpha.created.getTime(),
  );
  const handmade = await backend.headBucket("handmade");
  assert.equal(handmade?.created.getTime(), (await Deno.stat(`${dir}/handmade`)).mtime?.getTime());
  assert.equal(await backend.headBucket("missing"), null);
  assert.equal(await backend.headBucket(".svc"), null);
  assert.equal(await backend.headBucket("not-a-bucket"), null);
  await rejectsWith(backend.createBucket("alpha"), "BucketAlreadyOwnedByYou", /"alpha"/);
  await rejectsWith(backend.createBucket(".svc"), "InvalidBucketName");
  await rejectsWith(backend.deleteBucket("missing"), "NoSuchBucket", /^Bucket "missing"/);

  const staged = await backend.stageObject("alpha", "deep/er/object", bodyOf("x").stream);
  await staged.commit(metaFor("x"));
  await rejectsWith(backend.deleteBucket("alpha"), "BucketNotEmpty", /"alpha"/);
  await backend.deleteObject("alpha", "deep/er/object");
  const marker = await backend.stageObject("alpha", "only/marker/", bodyOf("").stream);
  await marker.commit(metaFor(""));
  await rejectsWith(backend.deleteBucket("alpha"), "BucketNotEmpty");
  await backend.deleteObject("alpha", "only/marker/");
  // Leftovers that are not objects do not keep a bucket alive.
  await Deno.mkdir(`${dir}/alpha/stale/empty`, { recursive: true });
  await Deno.writeTextFile(`${dir}/alpha/stale/no-meta`, "x");
  await backend.deleteBucket("alpha");
  assert.equal(await backend.headBucket("alpha"), null);
  await rejectsWith(backend.stageObject("alpha", "k", bodyOf("x").stream), "NoSuchBucket");
  // A bucket deleted while an upload was staged fails the commit as NoSuchBucket.
  await backend.createBucket("gone");
  for (const key of ["flat", "nested/key", "marker/"]) {
    const staged = await backend.stageObject("gone", key, bodyOf("").stream);
    await Deno.remove(`${dir}/gone`, { recursive: true });
    await rejectsWith(staged.commit(metaFor("")), "NoSuchBucket", /"gone"/);
    await staged.abort();
    await backend.createBucket("gone");
  }
  assert.deepEqual(await Array.fromAsync(Deno.readDir(`${dir}/.svc/tmp`)), []);
  await Deno.remove(dir, { recursive: true });
});

Deno.test("concurrent writes and deletes on overlapping paths fail only as conflicts", () =>
  withBackend(async (backend) => {
    const keys = ["x", "x/", "x/y", "x/y/", "x/y/z", "x/q/r/s"];
    let seed = 42;
    const pick = () => (seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648;
    const worker = async () => {
      for (let i = 0; i < 80; i++) {
        const key = keys[Math.floor(pick() * keys.length)];
        try {
          if (pick() < 0.6) await put(backend, key, key.endsWith("/") ? "" : key);
          else await backend.deleteObject("b", key);
        } catch (err) {
          if (!(err instanceof SvcError && err.code === "ObjectPathConflict")) throw err;
        }
      }
    };
    await Promise.all(Array.from({ length: 6 }, worker));
    const { objects } = await backend.listObjects("b", { prefix: "", maxKeys: 100 });
    for (const { key } of objects) {
      assert.equal(await text(backend, key), key.endsWith("/") ? "" : key);
      assert.equal(await backend.deleteObject("b", key), true);
    }
    assert.deepEqual(await Array.fromAsync(Deno.readDir(`${backend.root}/b`)), []);
  }));
