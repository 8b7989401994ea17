/**
 * The encryption layer over a real filesystem backend: the conformance suite through it, what
 * lands on disk, reads dispatched on each object's own marker, the legacy key, key-id
 * mismatches, damage, and the re-encrypt round trip the maintenance job performs.
 */
import assert from "node:assert/strict";
import { SvcError } from "../../lib/errors.ts";
import type { Backend, ObjectInfo, ObjectMeta } from "../backend.ts";
import { backendConformance } from "../../testing/backend-conformance.ts";
import { metaFor, put, read, streamOf } from "../../testing/backend-conformance-helpers.ts";
import { FilesystemBackend } from "../fs/filesystem-backend.ts";
import { S3Backend } from "../s3/s3-backend.ts";
import { testOptions } from "../../testing/s3-test-server.ts";
import { startSvcServer } from "../../../tests/helpers/s3-servers.ts";
import { randomBytes } from "../../testing/object-fixtures.ts";
import { EncryptingBackend } from "./encrypting-backend.ts";
import { FRAME_SIZE, HEADER_SIZE, storedSizeOf, TAG_SIZE } from "./frame-format.ts";
import { deriveKeyId, KeyRing } from "./key-ring.ts";

const KEY_A = "a1".repeat(32);
const KEY_B = "b2".repeat(32);

function ring(block: Parameters<typeof KeyRing.fromConfig>[1]) {
  return KeyRing.fromConfig("local", block);
}

/**
 * The suite checks `storedSize` against the bytes written; every object here is sealed, so its
 * stored size is those bytes plus the exact frame overhead, which this view takes off again.
 */
function plaintextSizes(backend: Backend): Backend {
  const view = <T extends ObjectInfo | null>(info: T): T => {
    if (!info) return info;
    const afterHeader = info.storedSize - HEADER_SIZE;
    const frames = Math.ceil(afterHeader / (FRAME_SIZE + TAG_SIZE));
    const written = afterHeader - frames * TAG_SIZE;
    assert.equal(storedSizeOf(written), info.storedSize, "a whole number of sealed frames");
    return { ...info, storedSize: written };
  };
  return Object.assign(Object.create(backend), {
    headObject: async (b: string, k: string) => view(await backend.headObject(b, k)),
    getObject: async (...args: Parameters<Backend["getObject"]>) => {
      const got = await backend.getObject(...args);
      return got && { ...got, info: view(got.info) };
    },
    listObjects: async (...args: Parameters<Backend["listObjects"]>) => {
      const page = await backend.listObjects(...args);
      return { ...page, objects: page.objects.map(view) };
    },
    stageObject: async (...args: Parameters<Backend["stageObject"]>) => {
      const staged = await backend.stageObject(...args);
      return {
        size: staged.size,
        commit: async (meta: ObjectMeta) => view(await staged.commit(meta)),
        abort: () => staged.abort(),
      };
    },
    updateObjectMeta: async (...args: Parameters<Backend["updateObjectMeta"]>) =>
      view(await backend.updateObjectMeta(...args)),
  });
}

backendConformance("encrypting(filesystem)", async () => {
  const root = await Deno.makeTempDir({ prefix: "svc-enc-conformance-" });
  const keys = await ring({ mode: "aes256-gcm-proxy", key: KEY_A });
  return {
    backend: plaintextSizes(new EncryptingBackend(await FilesystemBackend.open(root), keys)),
    close: () => Deno.remove(root, { recursive: true }),
  };
});

// The same through an S3 backend (a second svc as the store): the marker travels as
// `x-amz-meta-svc-encryption-key-id`, ranges are backend Range requests, listings HEAD sealed
// objects (their stored size is not their size) for the plaintext size and ETag.
backendConformance("encrypting(s3 on svc)", async () => {
  const server = await startSvcServer();
  const spoolDir = await Deno.makeTempDir({ prefix: "svc-enc-s3-spool-" });
  const s3 = await S3Backend.open(testOptions(server.endpoint, {
    accessKeyId: server.accessKeyId,
    secretAccessKey: server.secretAccessKey,
    spoolDir,
    readTimeoutMs: 20_000,
    attemptTimeoutMs: 60_000,
  }));
  const keys = await ring({ mode: "aes256-gcm-proxy", key: KEY_A });
  return {
    backend: plaintextSizes(new EncryptingBackend(s3, keys)),
    close: async () => {
      await Deno.remove(spoolDir, { recursive: true });
      await server.stop();
    },
  };
});

async function fixture() {
  const root = await Deno.makeTempDir({ prefix: "svc-enc-" });
  const fs = await FilesystemBackend.open(root);
  await fs.createBucket("b");
  const failures: string[] = [];
  const over = async (block: Parameters<typeof KeyRing.fromConfig>[1]) =>
    new EncryptingBackend(fs, await ring(block), (reason) => failures.push(reason));
  return {
    root,
    fs,
    failures,
    over,
    [Symbol.asyncDispose]: () => Deno.remove(root, { recursive: true }),
  };
}

async function bytesOf(backend: Backend, key: string, range?: [number, number]) {
  const got = await backend.getObject(
    "b",
    key,
    range && { start: range[0], end: range[1] },
  );
  assert.ok(got, `${key} exists`);
  return new Uint8Array(await new Response(got.body).arrayBuffer());
}

async function putBytes(backend: Backend, key: string, bytes: Uint8Array, extra = {}) {
  const staged = await backend.stageObject("b", key, streamOf(bytes));
  assert.equal(staged.size, bytes.length, "staged size is the plaintext's");
  return await staged.commit(metaFor(bytes, extra));
}

/** The stored file of `key` (the filesystem backend keeps it under the bucket directory). */
function storedPath(root: string, key: string) {
  return `${root}/b/${key}`;
}

Deno.test("encrypting backend: stored bytes are sealed, meta and reads stay plaintext", async () => {
  await using f = await fixture();
  const enc = await f.over({ mode: "aes256-gcm-proxy", key: KEY_A });
  const marker = new TextEncoder().encode("PLAINTEXT-MARKER-".repeat(10_000));
  const info = await putBytes(enc, "obj", marker);
  assert.equal(info.meta.size, marker.length);
  assert.equal(info.meta.encryptionKeyId, undefined, "the marker stays inside the layer");
  const stamped = await f.fs.headObject("b", "obj");
  assert.equal(stamped?.meta.encryptionKeyId, deriveKeyId("local", KEY_A));
  const head = await enc.headObject("b", "obj");
  assert.equal(head?.meta.size, marker.length);
  assert.equal(head?.storedSize, storedSizeOf(marker.length));
  const onDisk = await Deno.readFile(storedPath(f.root, "obj"));
  assert.equal(onDisk.length, storedSizeOf(marker.length));
  assert.ok(!new TextDecoder("latin1").decode(onDisk).includes("PLAINTEXT-MARKER"));
  assert.deepEqual(await bytesOf(enc, "obj"), marker);
  const start = FRAME_SIZE - 5;
  const end = 2 * FRAME_SIZE + 7;
  assert.deepEqual(await bytesOf(enc, "obj", [start, end]), marker.subarray(start, end + 1));
  const listed = await enc.listObjects("b", { prefix: "", maxKeys: 10 });
  assert.equal(listed.objects[0].meta.size, marker.length);
  assert.equal(listed.objects[0].meta.etag, metaFor(marker).etag);
});

Deno.test("encrypting backend: reads follow the object, not the current mode", async () => {
  await using f = await fixture();
  const plain = await f.over(undefined);
  await put(plain, "b", "before", "written before encryption");
  const enc = await f.over({ mode: "aes256-gcm-proxy", key: KEY_A });
  assert.equal(await read(enc, "b", "before"), "written before encryption");
  assert.equal(await read(enc, "b", "before", [8, 13]), "before");
  await put(enc, "b", "sealed", "written with encryption on");
  // Encryption turned off again, key kept: sealed objects stay readable, new ones are plain.
  const off = await f.over({ mode: "none", key: KEY_A });
  assert.equal(await read(off, "b", "sealed"), "written with encryption on");
  await put(off, "b", "after", "plain again");
  assert.equal((await f.fs.headObject("b", "after"))?.meta.encryptionKeyId, undefined);
  assert.equal(
    new TextDecoder().decode(await Deno.readFile(storedPath(f.root, "after"))),
    "plain again",
  );
});

Deno.test("encrypting backend: the legacy key reads old objects; a stranger's key id is named", async () => {
  await using f = await fixture();
  const old = await f.over({ mode: "aes256-gcm-proxy", key: KEY_A, key_id: "old-key" });
  await put(old, "b", "o", "sealed under the old key");
  const rotated = await f.over({
    mode: "aes256-gcm-proxy",
    key: KEY_B,
    key_id: "new-key",
    legacy_key: KEY_A,
    legacy_key_id: "old-key",
  });
  assert.equal(await read(rotated, "b", "o"), "sealed under the old key");
  const stranger = await f.over({ mode: "aes256-gcm-proxy", key: KEY_B, key_id: "new-key" });
  for (const range of [undefined, { start: 1, end: 3 }]) {
    await assert.rejects(stranger.getObject("b", "o", range), (err: unknown) => {
      assert.ok(err instanceof SvcError);
      assert.equal(err.code, "InternalError");
      assert.match(err.message, /"old-key"/);
      assert.match(err.message, /"new-key"/);
      return true;
    });
  }
  const noKeys = await f.over(undefined);
  await assert.rejects(noKeys.getObject("b", "o"), /"old-key".*no encryption key configured/);
  assert.deepEqual(f.failures, ["key-mismatch", "key-mismatch", "key-mismatch"]);
});

Deno.test("encrypting backend: a wrong key under the right id fails authentication, never garbage", async () => {
  await using f = await fixture();
  await put(await f.over({ mode: "aes256-gcm-proxy", key: KEY_A, key_id: "k" }), "b", "o", "x");
  const impostor = await f.over({ mode: "aes256-gcm-proxy", key: KEY_B, key_id: "k" });
  await assert.rejects(impostor.getObject("b", "o"), /failed authentication/);
  assert.deepEqual(f.failures, ["auth"]);
});

Deno.test("encrypting backend: damage near the start fails the open, later damage the stream", async () => {
  await using f = await fixture();
  const enc = await f.over({ mode: "aes256-gcm-proxy", key: KEY_A });
  // Past the first batch (15 frames, verified before getObject returns).
  const body = randomBytes(20 * FRAME_SIZE);
  await putBytes(enc, "o", body);
  const path = storedPath(f.root, "o");
  const good = await Deno.readFile(path);
  const flip = async (at: number) => {
    const bad = good.slice();
    bad[at] ^= 1;
    await Deno.writeFile(path, bad);
  };
  await flip(HEADER_SIZE + 10); // frame 0: found before getObject returns
  await assert.rejects(enc.getObject("b", "o"), (err: unknown) => {
    assert.ok(err instanceof SvcError && err.code === "InternalError");
    return true;
  });
  await flip(good.length - 3); // the last frame: the body stream errors before its batch
  const got = await enc.getObject("b", "o");
  assert.ok(got);
  await assert.rejects(new Response(got.body).arrayBuffer(), /failed authentication/);
  // A range over the damaged frame only fails; one elsewhere still reads.
  await assert.rejects(enc.getObject("b", "o", { start: body.length - 5, end: body.length - 1 }));
  assert.deepEqual(await bytesOf(enc, "o", [0, 99]), body.subarray(0, 100));
  await Deno.writeFile(path, good.subarray(0, good.length - 20)); // truncated
  await assert.rejects(async () => {
    const open = await enc.getObject("b", "o");
    await new Response(open!.body).arrayBuffer();
  }, /truncated|failed authentication/);
  assert.ok(f.failures.length >= 3);
});

Deno.test("encrypting backend: a meta update keeps the marker; a copy's meta cannot forge it", async () => {
  await using f = await fixture();
  const enc = await f.over({ mode: "aes256-gcm-proxy", key: KEY_A, key_id: "k" });
  await put(enc, "b", "o", "tagged later");
  const updated = await enc.updateObjectMeta("b", "o", (meta) => {
    const { encryptionKeyId: _dropped, ...rest } = meta; // a caller that rebuilds the record
    return { ...rest, tags: { a: "1" } };
  });
  assert.equal(updated?.meta.encryptionKeyId, undefined);
  assert.equal((await f.fs.headObject("b", "o"))?.meta.encryptionKeyId, "k");
  assert.equal(await read(enc, "b", "o"), "tagged later");
  // Plain mode: a commit of meta copied from an encrypted object stores no marker.
  const plain = await f.over({ mode: "none", key: KEY_A, key_id: "k" });
  const source = (await f.fs.headObject("b", "o"))!.meta; // a record straight off the disk
  assert.equal(source.encryptionKeyId, "k");
  const staged = await plain.stageObject(
    "b",
    "copy",
    streamOf(new TextEncoder().encode("tagged later")),
  );
  await staged.commit(source);
  assert.equal((await f.fs.headObject("b", "copy"))?.meta.encryptionKeyId, undefined);
  assert.equal(await read(plain, "b", "copy"), "tagged later");
});

Deno.test("encrypting backend: multipart extents are streamed through the cipher, not linked", async () => {
  await using f = await fixture();
  const enc = await f.over({ mode: "aes256-gcm-proxy", key: KEY_A });
  assert.equal(await enc.stageExtents("b", "k", []), null);
  const plain = await f.over(undefined);
  const part = `${f.root}/part`;
  await Deno.writeTextFile(part, "linked part");
  const staged = await plain.stageExtents("b", "k", [{ path: part, size: 11 }]);
  assert.ok(staged, "plaintext backends keep the extent fast path");
  await staged.abort();
});

/**
 * The maintenance re-encrypt job rewrites each object at the Backend level: read through this
 * layer, stage and commit through it again with the same meta. That round trip must seal under
 * the current key and keep every meta field.
 */
Deno.test("encrypting backend: the re-encrypt round trip moves objects to the current key", async () => {
  await using f = await fixture();
  const plain = await f.over(undefined);
  const old = await f.over({ mode: "aes256-gcm-proxy", key: KEY_A, key_id: "old" });
  const big = randomBytes(3 * FRAME_SIZE + 17);
  await putBytes(plain, "was-plain", big, {
    contentType: "application/x-test",
    userMeta: { a: "1" },
  });
  await putBytes(old, "was-old", new TextEncoder().encode("old key"), { tags: { t: "v" } });
  const current = await f.over({
    mode: "aes256-gcm-proxy",
    key: KEY_B,
    key_id: "new",
    legacy_key: KEY_A,
    legacy_key_id: "old",
  });
  for (const key of ["was-plain", "was-old"]) {
    const before = (await current.headObject("b", key))!.meta;
    const got = await current.getObject("b", key);
    const staged = await current.stageObject("b", key, got!.body, undefined, before.size);
    await staged.commit(before);
    assert.equal((await f.fs.headObject("b", key))?.meta.encryptionKeyId, "new");
    assert.deepEqual((await current.headObject("b", key))!.meta, before, `${key}: meta intact`);
  }
  assert.deepEqual(await bytesOf(current, "was-plain"), big);
  // Readable without the old key now: everything is under "new".
  const onlyNew = await f.over({ mode: "aes256-gcm-proxy", key: KEY_B, key_id: "new" });
  assert.deepEqual(await bytesOf(onlyNew, "was-plain"), big);
  assert.equal(await read(onlyNew, "b", "was-old"), "old key");
  const onDisk = await Deno.readFile(storedPath(f.root, "was-old"));
  assert.ok(!new TextDecoder().decode(onDisk).includes("old key"));
});
