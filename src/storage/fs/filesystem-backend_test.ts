import assert from "node:assert/strict";
import type { ObjectMeta } from "../backend.ts";
import { FilesystemBackend } from "./filesystem-backend.ts";
import { getJsonXattr, setJsonXattr, setXattr } from "../../native/xattr.ts";
import { randomBytes } from "../../testing/object-fixtures.ts";
import { rejectsWith } from "../../testing/svc-error-assertions.ts";

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
    // A HEAD also reports the stored version's token (for conditional commits).
    const { version, ...head } = (await backend.headObject("b", "dir/sub/file.bin"))!;
    assert.deepEqual(head, info);
    assert.equal(typeof version, "string");
    const got = await backend.getObject("b", "dir/sub/file.bin");
    assert.ok(got);
    assert.deepEqual({ ...got.info, version: undefined }, { ...info, version: undefined });
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
    await Deno.writeTextFile(`${backend.root}/b/stray`, "not an object");
    const cases: Array<[string, string, string]> = [
      ["missing", "k", "NoSuchBucket"],
      ["b", "../escape", "InvalidObjectName"],
      ["b", "x/.svc-object", "InvalidObjectName"],
      ["b", ".svc-marker/y", "InvalidObjectName"],
      ["b", "stray/x", "ObjectPathConflict"],
      ["b", "stray/", "ObjectPathConflict"],
    ];
    for (const [bucket, key, code] of cases) {
      const body = bodyOf("x");
      await rejectsWith(backend.stageObject(bucket, key, body.stream), code);
      assert.equal(body.state.read, false, `${key}: body was read`);
    }
  }));

Deno.test("a key and keys below it coexist, in either order, nothing lost", () =>
  withBackend(async (backend) => {
    await put(backend, "a", "file a");
    await put(backend, "a/b", "a/b");
    await put(backend, "a/b/c/d", "a/b/c/d");
    await put(backend, "a/", "");
    await put(backend, "p/q/r", "deep");
    await put(backend, "p", "p");
    await put(backend, "p/q", "p/q");
    await put(backend, "a-", "a-"); // sorts between "a" and "a/"
    const expected = ["a", "a-", "a/", "a/b", "a/b/c/d", "p", "p/q", "p/q/r"];
    const { objects } = await backend.listObjects("b", { prefix: "", maxKeys: 100 });
    assert.deepEqual(objects.map((o) => o.key), expected);
    for (const key of expected) {
      const want = key === "a/" ? "" : key === "a" ? "file a" : key === "p/q/r" ? "deep" : key;
      assert.equal(await text(backend, key), want, key);
      assert.equal((await backend.headObject("b", key))?.storedSize, want.length, key);
    }
    // On disk: "a" moved inside its directory; keys without a clash keep the plain layout.
    const bucketDir = `${backend.root}/b`;
    assert.equal(await Deno.readTextFile(`${bucketDir}/a/.svc-object`), "file a");
    assert.equal(await Deno.readTextFile(`${bucketDir}/a-`), "a-");
    assert.equal(await Deno.readTextFile(`${bucketDir}/a/b/c/d`), "a/b/c/d");
    // With a delimiter a key and the prefix of the same name both show.
    const rolled = await backend.listObjects("b", { prefix: "a", delimiter: "/", maxKeys: 10 });
    assert.deepEqual(rolled.objects.map((o) => o.key), ["a", "a-"]);
    assert.deepEqual(rolled.commonPrefixes, ["a/"]);
    // Overwrite in place, then delete one at a time: the others stay.
    await put(backend, "a", "new a");
    assert.equal(await text(backend, "a"), "new a");
    for (const key of ["a/b", "a", "a/", "p/q/r", "p/q", "p"]) {
      assert.equal(await backend.deleteObject("b", key), true, key);
      assert.equal(await backend.headObject("b", key), null, key);
      assert.equal(await backend.deleteObject("b", key), false, key);
    }
    assert.equal(await text(backend, "a/b/c/d"), "a/b/c/d");
    assert.equal(await backend.deleteObject("b", "a/b/c/d"), true);
    const left = await backend.listObjects("b", { prefix: "", maxKeys: 100 });
    assert.deepEqual(left.objects.map((o) => o.key), ["a-"]);
    assert.deepEqual(await Array.fromAsync(Deno.readDir(bucketDir), (e) => e.name), ["a-"]);
    assert.deepEqual(await tempFiles(backend), []);
  }));

Deno.test("a key ending in / holds a body; empty and non-empty overwrite each other", () =>
  withBackend(async (backend) => {
    await put(backend, "d/", "marker body");
    await put(backend, "d/x", "x");
    assert.equal(await text(backend, "d/"), "marker body");
    assert.equal((await backend.headObject("b", "d/"))?.storedSize, 11);
    const range = await backend.getObject("b", "d/", { start: 7, end: 10 });
    assert.equal(await new Response(range!.body).text(), "body");
    await put(backend, "d/", "");
    assert.equal(await text(backend, "d/"), "");
    assert.equal((await backend.headObject("b", "d/"))?.storedSize, 0);
    await put(backend, "d/", "again");
    assert.equal(await text(backend, "d/"), "again");
    const { objects } = await backend.listObjects("b", { prefix: "d", maxKeys: 10 });
    assert.deepEqual(objects.map((o) => [o.key, o.storedSize]), [["d/", 5], ["d/x", 1]]);
    // A marker with a body where an object file stands: the file moves inside, both stay.
    await put(backend, "f", "file f");
    await put(backend, "f/", "marker f");
    assert.equal(await text(backend, "f"), "file f");
    assert.equal(await text(backend, "f/"), "marker f");
    assert.equal(await backend.deleteObject("b", "d/"), true);
    assert.equal(await backend.headObject("b", "d/"), null);
    assert.equal(await text(backend, "d/x"), "x");
    assert.equal(await backend.deleteObject("b", "f/"), true);
    assert.equal(await text(backend, "f"), "file f");
  }));

Deno.test("a clash that appears after staging is settled at commit; both objects stay", () =>
  withBackend(async (backend) => {
    const deep = await backend.stageObject("b", "c/d", bodyOf("deep").stream);
    await put(backend, "c", "file c"); // lands first
    await deep.commit(metaFor("deep"));
    const flat = await backend.stageObject("b", "e", bodyOf("flat").stream);
    await put(backend, "e/f", "below");
    await flat.commit(metaFor("flat"));
    assert.equal(await text(backend, "c"), "file c");
    assert.equal(await text(backend, "c/d"), "deep");
    assert.equal(await text(backend, "e"), "flat");
    assert.equal(await text(backend, "e/f"), "below");
    assert.deepEqual(await tempFiles(backend), []);
  }));

Deno.test("files that are not objects are never moved or deleted to make room", () =>
  withBackend(async (backend) => {
    await Deno.mkdir(`${backend.root}/b/s/t/u`, { recursive: true });
    await put(backend, "s", "file s"); // a stale directory: the object goes inside it
    assert.equal(await text(backend, "s"), "file s");
    await Deno.mkdir(`${backend.root}/b/v`);
    await Deno.writeTextFile(`${backend.root}/b/v/stray`, "not mine");
    await put(backend, "v", "x");
    assert.equal(await text(backend, "v"), "x");
    await Deno.writeTextFile(`${backend.root}/b/w`, "not mine either");
    await rejectsWith(put(backend, "w/x", "x"), "ObjectPathConflict", /non-object file at "w"/);
    await rejectsWith(put(backend, "w/", "x"), "ObjectPathConflict", /non-object file at "w"/);
    assert.equal(await Deno.readTextFile(`${backend.root}/b/v/stray`), "not mine");
    assert.equal(await Deno.readTextFile(`${backend.root}/b/w`), "not mine either");
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

Deno.test("concurrent writes and deletes on overlapping paths all succeed", () =>
  withBackend(async (backend) => {
    const keys = ["x", "x/", "x/y", "x/y/", "x/y/z", "x/q/r/s", "x/q"];
    let seed = 42;
    const pick = () => (seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648;
    const worker = async () => {
      for (let i = 0; i < 80; i++) {
        const key = keys[Math.floor(pick() * keys.length)];
        // Markers get a body half of the time; every write must succeed.
        if (pick() < 0.6) await put(backend, key, key.endsWith("/") && pick() < 0.5 ? "" : key);
        else await backend.deleteObject("b", key);
      }
    };
    const outcomes = await Promise.allSettled(Array.from({ length: 6 }, worker));
    for (const outcome of outcomes) {
      if (outcome.status === "rejected") throw outcome.reason;
    }
    const { objects } = await backend.listObjects("b", { prefix: "", maxKeys: 100 });
    for (const { key } of objects) {
      const body = await text(backend, key);
      assert.ok(body === key || (key.endsWith("/") && body === ""), `${key}: ${body}`);
      assert.equal(await backend.deleteObject("b", key), true);
    }
    assert.deepEqual(await Array.fromAsync(Deno.readDir(`${backend.root}/b`)), []);
    assert.deepEqual(await tempFiles(backend), []);
  }));
