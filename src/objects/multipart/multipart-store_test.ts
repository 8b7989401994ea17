import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { isUploadId, MultipartStore, type NewUpload, newUploadId } from "./multipart-store.ts";
import { rejectsWith } from "../../testing/svc-error-assertions.ts";
import type { ScratchSealer } from "../../storage/mod.ts";

const encoder = new TextEncoder();

function upload(key: string, extra: Partial<NewUpload<{ sha: string }>> = {}) {
  return {
    bucket: "bucket",
    key,
    contentType: "text/plain",
    userMeta: { color: "blue" },
    headers: { "cache-control": "no-cache" },
    ...extra,
  };
}

function streamOf(...chunks: (string | Uint8Array)[]): ReadableStream<Uint8Array> {
  const queue = chunks.map((c) => typeof c === "string" ? encoder.encode(c) : c);
  return new ReadableStream({
    pull(controller) {
      const next = queue.shift();
      if (next === undefined) controller.close();
      else controller.enqueue(next);
    },
  });
}

function md5(text: string | Uint8Array): string {
  return createHash("md5").update(typeof text === "string" ? encoder.encode(text) : text)
    .digest("hex");
}

async function readAll(stream: ReadableStream<Uint8Array> | null): Promise<Uint8Array> {
  assert.ok(stream !== null, "expected a stream");
  return new Uint8Array(await new Response(stream).arrayBuffer());
}

async function text(stream: ReadableStream<Uint8Array> | null): Promise<string> {
  return new TextDecoder().decode(await readAll(stream));
}

async function entries(dir: string): Promise<string[]> {
  const names: string[] = [];
  for await (const entry of Deno.readDir(dir)) names.push(entry.name);
  return names.sort();
}

async function withStore(
  fn: (store: MultipartStore<{ sha: string }>, dir: string) => Promise<void>,
): Promise<void> {
  const dir = await Deno.makeTempDir({ prefix: "svc-multipart-" });
  try {
    await fn(await MultipartStore.open<{ sha: string }>(`${dir}/multipart`), `${dir}/multipart`);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

Deno.test("upload ids are URL-safe, 32 characters and distinct", () => {
  const ids = new Set(Array.from({ length: 200 }, () => newUploadId()));
  assert.equal(ids.size, 200);
  for (const id of ids) assert.ok(isUploadId(id) && /^[A-Za-z0-9_-]{32}$/.test(id), id);
  for (const bad of ["", "..", "../" + "a".repeat(29), "a".repeat(31), "a".repeat(33), "a/b"]) {
    assert.ok(!isUploadId(bad), bad);
  }
});

Deno.test("create, get, list and count", async () => {
  await withStore(async (store, dir) => {
    assert.equal(await store.count(), 0);
    const record = await store.create(upload("a/key", { meta: { sha: "abc" } }));
    assert.ok(isUploadId(record.uploadId));
    assert.ok(Math.abs(record.initiated - Date.now()) < 5000);
    assert.deepEqual(await store.get(record.uploadId), record);
    assert.deepEqual((await store.get(record.uploadId))?.meta, { sha: "abc" });
    assert.deepEqual(await entries(`${dir}/${record.uploadId}`), ["upload.json"]);
    assert.equal(await store.get(newUploadId()), null);
    const bare = await store.create(upload("no/meta", { meta: undefined }));
    assert.deepEqual(await store.get(bare.uploadId), bare);
    assert.equal(await store.count(), 2);
    assert.deepEqual(await store.list(), [record, bare]);
  });
});

Deno.test("an upload and its parts survive a restart", async () => {
  await withStore(async (store, dir) => {
    const record = await store.create(upload("restart.bin"));
    const one = await store.putPart(record.uploadId, 1, streamOf("hello ", "world"));
    assert.deepEqual(
      { etag: one.etag, size: one.size, partNumber: one.partNumber },
      { etag: md5("hello world"), size: 11, partNumber: 1 },
    );

    const reopened = await MultipartStore.open<{ sha: string }>(dir);
    assert.deepEqual(await reopened.get(record.uploadId), record);
    assert.deepEqual(await reopened.listParts(record.uploadId), [one]);
    assert.equal(await text(await reopened.openPart(record.uploadId, 1)), "hello world");
    const two = await reopened.putPart(record.uploadId, 2, streamOf("more"));
    assert.deepEqual(await reopened.listParts(record.uploadId), [one, two]);
  });
});

Deno.test("re-uploading a part replaces it", async () => {
  await withStore(async (store, dir) => {
    const { uploadId } = await store.create(upload("replace"));
    await store.putPart(uploadId, 3, streamOf("old bytes"));
    const fresh = await store.putPart(uploadId, 3, streamOf("new"));
    const parts = await store.listParts(uploadId);
    assert.equal(parts.length, 1);
    assert.deepEqual(parts[0], fresh);
    assert.equal(fresh.etag, md5("new"));
    assert.equal(await text(await store.openPart(uploadId, 3)), "new");
    assert.deepEqual(await entries(`${dir}/${uploadId}`), ["00003", "upload.json"]);
  });
});

Deno.test("parts list in number order", async () => {
  await withStore(async (store) => {
    const { uploadId } = await store.create(upload("order"));
    for (const n of [10000, 2, 10, 1]) await store.putPart(uploadId, n, streamOf(`part ${n}`));
    assert.deepEqual((await store.listParts(uploadId)).map((p) => p.partNumber), [1, 2, 10, 10000]);
  });
});

Deno.test("an md5 mismatch leaves no part and keeps the previous one", async () => {
  await withStore(async (store, dir) => {
    const { uploadId } = await store.create(upload("digest"));
    await store.putPart(uploadId, 1, streamOf("first"));
    await rejectsWith(
      store.putPart(uploadId, 1, streamOf("second"), { expectedMd5: md5("something else") }),
      "BadDigest",
    );
    await rejectsWith(
      store.putPart(uploadId, 2, streamOf("second"), { expectedMd5: md5("something else") }),
      "BadDigest",
    );
    assert.deepEqual(await entries(`${dir}/${uploadId}`), ["00001", "upload.json"]);
    assert.equal(await text(await store.openPart(uploadId, 1)), "first");
    assert.equal(await store.openPart(uploadId, 2), null);
    const ok = await store.putPart(uploadId, 2, streamOf("second"), {
      expectedMd5: md5("second").toUpperCase(),
    });
    assert.equal(ok.etag, md5("second"));
  });
});

Deno.test("a body past maxBytes is EntityTooLarge and leaves nothing", async () => {
  await withStore(async (store, dir) => {
    const { uploadId } = await store.create(upload("big"));
    await store.putPart(uploadId, 1, streamOf("12345"), { maxBytes: 5 });
    await rejectsWith(
      store.putPart(uploadId, 2, streamOf("123", "456"), { maxBytes: 5 }),
      "EntityTooLarge",
    );
    assert.deepEqual(await entries(`${dir}/${uploadId}`), ["00001", "upload.json"]);
  });
});

Deno.test("a failing or aborted body leaves nothing", async () => {
  await withStore(async (store, dir) => {
    const { uploadId } = await store.create(upload("fail"));
    let sent = false;
    const broken = new ReadableStream<Uint8Array>({
      pull(controller) {
        if (sent) controller.error(new Error("connection reset"));
        else controller.enqueue(encoder.encode("partial"));
        sent = true;
      },
    });
    await assert.rejects(store.putPart(uploadId, 1, broken), /connection reset/);

    // A client that stops sending: the abort must settle the pending read.
    const controller = new AbortController();
    let cancelled = false;
    const stalled = new ReadableStream<Uint8Array>({
      start(c) {
        c.enqueue(encoder.encode("some"));
      },
      cancel() {
        cancelled = true;
      },
    });
    const pending = store.putPart(uploadId, 2, stalled, { signal: controller.signal });
    setTimeout(() => controller.abort(new Error("client went away")), 20);
    await assert.rejects(pending, /client went away/);
    assert.ok(cancelled, "the body was cancelled");
    assert.deepEqual(await entries(`${dir}/${uploadId}`), ["upload.json"]);
    assert.deepEqual(await store.listParts(uploadId), []);
  });
});

Deno.test("part numbers outside 1..10000 are InvalidArgument", async () => {
  await withStore(async (store) => {
    const { uploadId } = await store.create(upload("numbers"));
    for (const n of [0, -1, 10001, 1.5, NaN]) {
      await rejectsWith(store.putPart(uploadId, n, streamOf("x")), "InvalidArgument");
      await rejectsWith(store.openPart(uploadId, n), "InvalidArgument");
    }
  });
});

Deno.test("traversal-looking and unknown upload ids never reach the filesystem", async () => {
  await withStore(async (store, dir) => {
    // A directory beside the store that looks like an upload.
    const victim = `${dir}/../victim`;
    await Deno.mkdir(victim);
    await Deno.writeTextFile(`${victim}/upload.json`, JSON.stringify({ uploadId: "../victim" }));
    await Deno.writeTextFile(`${victim}/00001`, "secret");
    for (
      const id of ["../victim", "..", ".", "", "a/../../victim", "%2e%2e", ".tmp-x", newUploadId()]
    ) {
      assert.equal(await store.get(id), null, id);
      assert.equal(await store.openPart(id, 1), null, id);
      assert.equal(await store.remove(id), false, id);
      assert.equal(await store.lastActivity(id), null, id);
      await rejectsWith(store.putPart(id, 1, streamOf("x")), "NoSuchUpload");
      await rejectsWith(store.listParts(id), "NoSuchUpload");
    }
    assert.deepEqual(await entries(victim), ["00001", "upload.json"]);
    assert.equal(await Deno.readTextFile(`${victim}/00001`), "secret");
  });
});

Deno.test("remove deletes an upload and its parts", async () => {
  await withStore(async (store, dir) => {
    const keep = await store.create(upload("keep"));
    const gone = await store.create(upload("gone"));
    await store.putPart(gone.uploadId, 1, streamOf("bytes"));
    assert.equal(await store.remove(gone.uploadId), true);
    assert.equal(await store.remove(gone.uploadId), false);
    assert.equal(await store.get(gone.uploadId), null);
    await rejectsWith(store.putPart(gone.uploadId, 2, streamOf("late")), "NoSuchUpload");
    assert.deepEqual(await store.list(), [keep]);
    assert.deepEqual(await entries(dir), [keep.uploadId]);
  });
});

Deno.test("list sorts by key in UTF-8 order, then by initiation", async () => {
  await withStore(async (store) => {
    const made = [
      await store.create(upload("b", { initiated: 2 })),
      await store.create(upload("\u{1F600}", { initiated: 1 })),
      await store.create(upload("\uFFFD", { initiated: 1 })),
      await store.create(upload("b", { initiated: 1 })),
      await store.create(upload("a", { initiated: 9 })),
    ];
    const listed = (await store.list()).map((r) => [r.key, r.initiated]);
    assert.deepEqual(listed, [["a", 9], ["b", 1], ["b", 2], ["\uFFFD", 1], ["\u{1F600}", 1]]);
    assert.equal(await store.count(), made.length);
  });
});

Deno.test("large parts stream back in several chunks with the same bytes", async () => {
  await withStore(async (store) => {
    const { uploadId } = await store.create(upload("large"));
    const body = new Uint8Array(1_000_003);
    for (let i = 0; i < body.length; i++) body[i] = (i * 7) & 0xff;
    const chunks = Array.from(
      { length: 10 },
      (_, i) => body.subarray(i * 100_000, (i + 1) * 100_000),
    );
    chunks.push(body.subarray(1_000_000));
    const info = await store.putPart(uploadId, 1, streamOf(...chunks));
    assert.equal(info.size, body.length);
    assert.equal(info.etag, md5(body));
    const stream = await store.openPart(uploadId, 1);
    assert.ok(stream !== null);
    let reads = 0;
    const hash = createHash("md5");
    for await (const chunk of stream) {
      reads++;
      hash.update(chunk);
    }
    assert.ok(reads > 1, "read in more than one chunk");
    assert.equal(hash.digest("hex"), info.etag);
    // Cancelling part-way closes the file (the test's resource sanitizer would see a leak).
    const reader = (await store.openPart(uploadId, 1))!.getReader();
    await reader.read();
    await reader.cancel();
  });
});

Deno.test("temp files left by a crash are removed on open", async () => {
  await withStore(async (store, dir) => {
    const { uploadId } = await store.create(upload("crash"));
    await store.putPart(uploadId, 1, streamOf("kept"));
    await Deno.writeTextFile(`${dir}/${uploadId}/.tmp-00002-deadbeef`, "half a part");
    await Deno.mkdir(`${dir}/.tmp-${newUploadId()}`);
    await Deno.writeTextFile(`${dir}/.tmp-${newUploadId()}-stray`, "x");
    await MultipartStore.open(dir);
    assert.deepEqual(await entries(dir), [uploadId]);
    assert.deepEqual(await entries(`${dir}/${uploadId}`), ["00001", "upload.json"]);
    assert.equal(await store.count(), 1);
  });
});

Deno.test("lastActivity is the newest mtime; sweep removes idle uploads only", async () => {
  await withStore(async (store, dir) => {
    const hour = 3_600_000;
    const now = Date.now();
    const idle = await store.create(upload("idle"));
    await store.putPart(idle.uploadId, 1, streamOf("12345"));
    await store.putPart(idle.uploadId, 2, streamOf("678"));
    const active = await store.create(upload("active"));
    await store.putPart(active.uploadId, 1, streamOf("abc"));

    // Age every file of the idle upload by two days, and the active one's record only.
    const old = new Date(now - 48 * hour);
    for (const name of ["upload.json", "00001", "00002"]) {
      await Deno.utime(`${dir}/${idle.uploadId}/${name}`, old, old);
    }
    await Deno.utime(`${dir}/${idle.uploadId}`, old, old);
    await Deno.utime(`${dir}/${active.uploadId}/upload.json`, old, old);

    assert.equal(await store.lastActivity(idle.uploadId), old.getTime());
    const activeAt = await store.lastActivity(active.uploadId);
    assert.ok(activeAt !== null && activeAt > now - hour, "a fresh part keeps it active");

    const result = await store.sweep(24 * hour, now);
    assert.equal(result.count, 1);
    assert.equal(result.bytes, 8);
    assert.deepEqual(result.removed, [{
      uploadId: idle.uploadId,
      bucket: "bucket",
      key: "idle",
      bytes: 8,
      lastActivity: old.getTime(),
    }]);
    assert.equal(await store.get(idle.uploadId), null);
    assert.ok(await store.get(active.uploadId));
    assert.deepEqual(await store.sweep(24 * hour, now), { count: 0, bytes: 0, removed: [] });
    // With a TTL shorter than the active upload's age, it goes too.
    assert.equal((await store.sweep(0, now + hour)).count, 1);
    assert.equal(await store.count(), 0);
  });
});

/** A stand-in for an encrypting backend's sealer: stored bytes are the plaintext's, inverted. */
function invertingSealer(keyId = "k1"): ScratchSealer & { opened: number } {
  const invert = () =>
    new TransformStream<Uint8Array, Uint8Array>({
      transform: (chunk, controller) => controller.enqueue(chunk.map((byte) => byte ^ 0xff)),
    });
  return {
    keyId,
    opened: 0,
    seal: (plain) => Promise.resolve(plain.pipeThrough(invert())),
    open(stored, sealed) {
      assert.equal(sealed.keyId, keyId);
      assert.equal(sealed.storedSize, sealed.size);
      this.opened++;
      return Promise.resolve(stored.pipeThrough(invert()));
    },
  };
}

Deno.test("multipart store: a sealed part is stored sealed, described and opened as plaintext", async () => {
  await withStore(async (store, dir) => {
    const { uploadId } = await store.create(upload("sealed"));
    const sealer = invertingSealer();
    const part = await store.putPart(uploadId, 1, streamOf("plain ", "part"), { sealer });
    assert.deepEqual([part.etag, part.size, part.keyId], [md5("plain part"), 10, "k1"]);
    const onDisk = await Deno.readFile(`${dir}/${uploadId}/00001`);
    assert.deepEqual(onDisk, encoder.encode("plain part").map((byte) => byte ^ 0xff));
    assert.equal((await store.listParts(uploadId))[0].keyId, "k1");
    assert.equal(await text(await store.openPart(uploadId, 1, sealer)), "plain part");
    assert.equal(sealer.opened, 1);
    // Without its sealer a sealed part is never handed out as if it were plaintext.
    await rejectsWith(store.openPart(uploadId, 1), "InternalError");
    // A part written as it is (no key id: plaintext mode) needs no sealer to be read.
    const plain = await store.putPart(uploadId, 2, streamOf("as is"), {
      sealer: { ...invertingSealer(), keyId: undefined },
    });
    assert.equal(plain.keyId, undefined);
    assert.equal(await text(await store.openPart(uploadId, 2)), "as is");
    // A digest that fails behind the sealer leaves no part and no staging file.
    await rejectsWith(
      store.putPart(uploadId, 3, streamOf("bad"), { sealer, expectedMd5: md5("other") }),
      "BadDigest",
    );
    assert.deepEqual(await entries(`${dir}/${uploadId}`), ["00001", "00002", "upload.json"]);
  });
});
