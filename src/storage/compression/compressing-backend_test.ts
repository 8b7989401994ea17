/**
 * The compression layer over a real filesystem backend (small frames, so ranges cross many):
 * the conformance suite through it, what lands on disk, byte-exact full and ranged reads at
 * frame edges, what stays raw, metadata updates and copies, and damage answering 500.
 */
import assert from "node:assert/strict";
import type { Backend } from "../backend.ts";
import { backendConformance } from "../../testing/backend-conformance.ts";
import { metaFor, streamOf } from "../../testing/backend-conformance-helpers.ts";
import { randomBytes } from "../../testing/object-fixtures.ts";
import { rejectsWith } from "../../testing/svc-error-assertions.ts";
import { FilesystemBackend } from "../fs/filesystem-backend.ts";
import { S3Backend } from "../s3/s3-backend.ts";
import { testOptions } from "../../testing/s3-test-server.ts";
import { startSvcServer } from "../../../tests/helpers/s3-servers.ts";
import { EncryptingBackend } from "../encryption/encrypting-backend.ts";
import { KeyRing } from "../encryption/key-ring.ts";
import {
  BASELINE_FRAME_SIZE,
  CompressingBackend,
  type CompressionMode,
  type CompressionSettings,
} from "./compressing-backend.ts";
import { parseMarker } from "./zstd-format.ts";
import { stopFrameDecoder } from "./frame-decoder.ts";

const FRAME = 8192;

function over(inner: Backend, settings: Partial<CompressionSettings> = {}) {
  const current: CompressionSettings = { mode: "auto", level: 3, ...settings };
  return new CompressingBackend(inner, {
    settings: () => current,
    isBaseline: (key) => key.endsWith("reference.bin"),
    frameSize: FRAME,
    baselineFrameSize: FRAME,
  });
}

backendConformance("compressing(filesystem)", async () => {
  const root = await Deno.makeTempDir({ prefix: "svc-zstd-conformance-" });
  return {
    backend: over(await FilesystemBackend.open(root)),
    close: () => Deno.remove(root, { recursive: true }),
  };
});

/** Compressible text: CSV rows, `n` bytes. */
function csv(n: number): Uint8Array<ArrayBuffer> {
  const rows: string[] = [];
  let length = 0;
  for (let i = 0; length < n; i++) {
    const row = `${i},item-${i % 977},${(i * 7919) % 100000},${i % 3 === 0 ? "yes" : "no"}\n`;
    rows.push(row);
    length += row.length;
  }
  return new TextEncoder().encode(rows.join("")).slice(0, n);
}

async function fixture(settings: Partial<CompressionSettings> = {}) {
  const root = await Deno.makeTempDir({ prefix: "svc-zstd-" });
  const fs = await FilesystemBackend.open(root);
  await fs.createBucket("b");
  return {
    root,
    fs,
    zstd: over(fs, settings),
    [Symbol.asyncDispose]: () => Deno.remove(root, { recursive: true }),
  };
}

async function putBytes(backend: Backend, key: string, bytes: Uint8Array, extra = {}) {
  const staged = await backend.stageObject("b", key, streamOf(bytes));
  assert.equal(staged.size, bytes.length, "staged size is the logical one");
  return await staged.commit(metaFor(bytes, extra));
}

async function bytesOf(backend: Backend, key: string, range?: [number, number]) {
  const got = await backend.getObject("b", key, range && { start: range[0], end: range[1] });
  assert.ok(got, `${key} exists`);
  return new Uint8Array(await new Response(got.body).arrayBuffer());
}

Deno.test("compressing backend: a compressible object is stored smaller, reads exact", async () => {
  await using f = await fixture();
  const body = csv(10 * FRAME + 123);
  const info = await putBytes(f.zstd, "data.csv", body);
  assert.equal(info.meta.size, body.length);
  assert.equal(info.meta.compression, undefined, "the marker stays inside the layer");
  assert.ok(info.storedSize < body.length / 2, `stored ${info.storedSize} of ${body.length}`);
  const stored = await f.fs.headObject("b", "data.csv");
  const marker = parseMarker(stored!.meta.compression!);
  assert.equal(marker.size, body.length);
  assert.equal(marker.md5, info.meta.md5);
  assert.equal(stored!.meta.size, stored!.storedSize, "the stored record describes stored bytes");
  assert.equal((await Deno.stat(`${f.root}/b/data.csv`)).size, info.storedSize);

  const head = await f.zstd.headObject("b", "data.csv");
  assert.deepEqual(head?.meta, info.meta);
  const listed = (await f.zstd.listObjects("b", { prefix: "", maxKeys: 10 })).objects[0];
  assert.equal(listed.meta.size, body.length);
  assert.equal(listed.storedSize, info.storedSize);
  assert.deepEqual(await bytesOf(f.zstd, "data.csv"), body);
});

Deno.test("compressing backend: ranges at frame edges, last byte, suffixes, whole", async () => {
  await using f = await fixture();
  const body = csv(5 * FRAME + 77);
  await putBytes(f.zstd, "r.json", body);
  const last = body.length - 1;
  const ranges: [number, number][] = [
    [0, 0],
    [0, FRAME - 1],
    [FRAME - 1, FRAME],
    [FRAME, FRAME],
    [FRAME, 2 * FRAME - 1],
    [FRAME - 10, 3 * FRAME + 10],
    [5 * FRAME, last],
    [last, last],
    [last - 99, last],
    [0, last],
  ];
  for (const [start, end] of ranges) {
    assert.deepEqual(
      await bytesOf(f.zstd, "r.json", [start, end]),
      body.slice(start, end + 1),
      `${start}-${end}`,
    );
  }
  await rejectsWith(f.zstd.getObject("b", "r.json", { start: 0, end: last + 1 }), "InvalidRange");
});

Deno.test("compressing backend: a one-frame object round-trips", async () => {
  await using f = await fixture();
  const body = csv(FRAME);
  await putBytes(f.zstd, "one.txt", body);
  assert.ok((await f.fs.headObject("b", "one.txt"))?.meta.compression);
  assert.deepEqual(await bytesOf(f.zstd, "one.txt"), body);
  assert.deepEqual(await bytesOf(f.zstd, "one.txt", [FRAME - 1, FRAME - 1]), body.slice(-1));
});

Deno.test("compressing backend: what stays raw", async () => {
  await using f = await fixture();
  const cases: [string, Uint8Array][] = [
    ["random.bin", randomBytes(300_000)],
    ["small.csv", csv(4000)],
    ["empty.csv", new Uint8Array(0)],
    ["archive.tar.gz", csv(100_000)], // a compressed format's name: not even sampled
  ];
  for (const [key, body] of cases) {
    await putBytes(f.zstd, key, body);
    const stored = await f.fs.headObject("b", key);
    assert.equal(stored?.meta.compression, undefined, key);
    assert.equal(stored?.storedSize, body.length, key);
    assert.deepEqual(await bytesOf(f.zstd, key), body, key);
  }
});

Deno.test("compressing backend: settings decide what new writes compress", async () => {
  const body = csv(50_000);
  const expectations: [CompressionMode, string, boolean][] = [
    ["auto", "x.csv", true],
    ["auto", "d/reference.bin", true],
    ["baselines", "x.csv", false],
    ["baselines", "d/reference.bin", true],
    ["off", "x.csv", false],
    ["off", "d/reference.bin", false],
  ];
  for (const [mode, key, compressed] of expectations) {
    await using f = await fixture({ mode });
    await putBytes(f.zstd, key, body, { storage: key.endsWith(".bin") ? "reference" : undefined });
    const stored = await f.fs.headObject("b", key);
    assert.equal(stored?.meta.compression !== undefined, compressed, `${mode} ${key}`);
    assert.deepEqual(await bytesOf(f.zstd, key), body);
  }
});

Deno.test("compressing backend: metadata updates keep the marker, copies get their own", async () => {
  await using f = await fixture();
  const body = csv(30_000);
  await putBytes(f.zstd, "a.csv", body);
  const updated = await f.zstd.updateObjectMeta("b", "a.csv", (meta) => ({
    ...meta,
    tags: { k: "v" },
  }));
  assert.equal(updated?.meta.size, body.length);
  assert.deepEqual(updated?.meta.tags, { k: "v" });
  assert.ok((await f.fs.headObject("b", "a.csv"))?.meta.compression);
  assert.deepEqual(await bytesOf(f.zstd, "a.csv"), body);

  // A copy hands over the source's record; the stored form follows the copy's own bytes.
  const source = await f.zstd.headObject("b", "a.csv");
  const random = randomBytes(20_000);
  const staged = await f.zstd.stageObject("b", "copy.bin", streamOf(random));
  await staged.commit({ ...source!.meta, compression: "zstd:1:1:1:" });
  assert.equal((await f.fs.headObject("b", "copy.bin"))?.meta.compression, undefined);
});

Deno.test("compressing backend: multipart extents are stored raw", async () => {
  await using f = await fixture();
  const part = await Deno.makeTempFile();
  const body = csv(50_000);
  await Deno.writeFile(part, body);
  const staged = await f.zstd.stageExtents("b", "mp.csv", [{ path: part, size: body.length }]);
  assert.ok(staged);
  await staged.commit(metaFor(body));
  assert.equal((await f.fs.headObject("b", "mp.csv"))?.meta.compression, undefined);
  assert.deepEqual(await bytesOf(f.zstd, "mp.csv"), body);
  await Deno.remove(part);
});

Deno.test("compressing backend: damage is an error, never wrong bytes", async () => {
  await using f = await fixture();
  const body = csv(6 * FRAME);
  const info = await putBytes(f.zstd, "d.csv", body);
  const path = `${f.root}/b/d.csv`;
  const pristine = await Deno.readFile(path);
  const stored = await f.fs.headObject("b", "d.csv");
  const marker = parseMarker(stored!.meta.compression!);
  let errors = 0;
  // One byte in the first frame, one in a middle frame, one in the index.
  for (const at of [20, Math.floor(marker.indexOffset / 2), marker.indexOffset + 3]) {
    const damaged = pristine.slice();
    damaged[at] ^= 0x5a;
    const file = await Deno.open(path, { write: true });
    await file.write(damaged);
    file.close();
    for (const range of [undefined, [0, body.length - 1], [3 * FRAME, 3 * FRAME + 5]] as const) {
      let bytes: Uint8Array | undefined;
      try {
        bytes = await bytesOf(f.zstd, "d.csv", range as [number, number] | undefined);
      } catch (err) {
        assert.ok(
          err instanceof Error && /damaged|truncated|InternalError/.test(`${err.name} ${err}`),
          `${at} ${range}: ${err}`,
        );
        errors++;
        continue;
      }
      // Read without error: only possible when the damage is outside what this read needs.
      const [start, end] = range ?? [0, body.length - 1];
      assert.deepEqual(bytes, body.slice(start, end + 1), `byte ${at}, range ${range}`);
    }
  }
  assert.ok(errors >= 5, `damage found by ${errors} reads`);
  assert.ok(info.storedSize < body.length);
});

Deno.test("compressing backend: over the encryption layer, compressed then sealed", async () => {
  await using f = await fixture();
  const keys = await KeyRing.fromConfig("local", {
    mode: "aes256-gcm-proxy",
    key: "a1".repeat(32),
  });
  const backend = over(new EncryptingBackend(f.fs, keys));
  const body = csv(7 * FRAME + 5);
  const info = await putBytes(backend, "e.csv", body);
  assert.ok(info.storedSize < body.length / 2);
  const onDisk = await Deno.readFile(`${f.root}/b/e.csv`);
  assert.equal(new TextDecoder().decode(onDisk).includes("item-1"), false, "sealed on disk");
  assert.deepEqual(await bytesOf(backend, "e.csv"), body);
  assert.deepEqual(
    await bytesOf(backend, "e.csv", [FRAME - 3, 2 * FRAME + 3]),
    body.slice(FRAME - 3, 2 * FRAME + 4),
  );
  assert.equal((await backend.headObject("b", "e.csv"))?.meta.size, body.length);
});

Deno.test("compressing backend: a missing bucket is refused before the body is read", async () => {
  await using f = await fixture();
  let pulls = 0;
  const body = new ReadableStream<Uint8Array>({
    pull(controller) {
      pulls++;
      controller.enqueue(csv(10_000));
    },
  }, { highWaterMark: 0 }); // pulled only when read
  await rejectsWith(f.zstd.stageObject("missing", "x.csv", body), "NoSuchBucket");
  assert.equal(pulls, 0);
});

Deno.test("compressing backend: small uneven chunks, exact multiples of a frame", async () => {
  await using f = await fixture();
  for (const size of [3 * FRAME, 3 * FRAME + 1, FRAME + 4096]) {
    const body = csv(size);
    let at = 0;
    const chunked = new ReadableStream<Uint8Array>({
      pull(controller) {
        if (at >= body.length) return controller.close();
        const n = 1 + (at % 3001);
        controller.enqueue(body.slice(at, at + n));
        at += n;
      },
    });
    const staged = await f.zstd.stageObject("b", "c.csv", chunked);
    await staged.commit(metaFor(body));
    assert.ok((await f.fs.headObject("b", "c.csv"))?.meta.compression, `${size}`);
    assert.deepEqual(await bytesOf(f.zstd, "c.csv"), body, `${size}`);
    assert.deepEqual(
      await bytesOf(f.zstd, "c.csv", [size - FRAME, size - 1]),
      body.slice(size - FRAME),
      `${size} last frame's worth`,
    );
  }
});

// Through an S3 backend (a second svc as the store): the marker travels as
// `x-amz-meta-svc-x-compression`, the object goes up as a multipart upload (its stored record is
// not "listable"), so a listing HEADs it for the logical size, and ranges are Range requests.
Deno.test({
  name: "compressing backend: over an S3 backend",
  sanitizeOps: false,
  sanitizeResources: false,
  fn: async () => {
    const server = await startSvcServer();
    const spoolDir = await Deno.makeTempDir({ prefix: "svc-zstd-s3-spool-" });
    try {
      const s3 = await S3Backend.open(testOptions(server.endpoint, {
        accessKeyId: server.accessKeyId,
        secretAccessKey: server.secretAccessKey,
        spoolDir,
      }));
      const bucket = `zstd-${Date.now().toString(36)}`;
      await s3.createBucket(bucket);
      const zstd = over(s3);
      const body = csv(6 * FRAME + 99);
      const staged = await zstd.stageObject(bucket, "s.csv", streamOf(body));
      const info = await staged.commit(metaFor(body));
      assert.ok(info.storedSize < body.length / 2, `stored ${info.storedSize}`);
      const raw = await s3.headObject(bucket, "s.csv");
      assert.match(raw?.meta.compression ?? "", /^zstd:/);
      const listed = (await zstd.listObjects(bucket, { prefix: "", maxKeys: 10 })).objects;
      assert.deepEqual(listed.map((o) => [o.key, o.meta.size, o.meta.etag]), [
        ["s.csv", body.length, info.meta.etag],
      ]);
      const read = async (range?: [number, number]) => {
        const got = await zstd.getObject(
          bucket,
          "s.csv",
          range && { start: range[0], end: range[1] },
        );
        return new Uint8Array(await new Response(got!.body).arrayBuffer());
      };
      assert.deepEqual(await read(), body);
      const last = body.length - 1;
      for (const [start, end] of [[FRAME - 1, FRAME], [last - 10, last], [0, last]]) {
        assert.deepEqual(await read([start, end]), body.slice(start, end + 1), `${start}-${end}`);
      }
    } finally {
      await Deno.remove(spoolDir, { recursive: true });
      await server.stop();
    }
  },
});

Deno.test("compressing backend: a baseline gets large long-window frames; repeats far apart cost little", async () => {
  const root = await Deno.makeTempDir({ prefix: "svc-zstd-baseline-" });
  try {
    const fs = await FilesystemBackend.open(root);
    await fs.createBucket("b");
    const zstd = new CompressingBackend(fs, {
      settings: () => ({ mode: "auto", level: 3 }),
      isBaseline: (key) => key.endsWith("reference.bin"),
      frameSize: FRAME,
    });
    // 3 MiB of incompressible bytes, then the same again: a repeat 3 MiB back, beyond any
    // 256 KiB frame and level 3's own window.
    const noise = new Uint8Array(3 << 20);
    for (let at = 0; at < noise.length; at += 65536) {
      crypto.getRandomValues(noise.subarray(at, at + 65536));
    }
    const half = csv(64 << 10);
    const body = new Uint8Array(2 * (noise.length + half.length));
    body.set(half, 0);
    body.set(noise, half.length);
    body.set(body.subarray(0, half.length + noise.length), half.length + noise.length);
    const baseline = await putBytes(zstd, "g/reference.bin", body);
    const plain = await putBytes(zstd, "g/data.bin", body);
    const marker = parseMarker((await fs.headObject("b", "g/reference.bin"))!.meta.compression!);
    assert.equal(marker.frameSize, BASELINE_FRAME_SIZE);
    assert.ok(baseline.storedSize < 0.55 * body.length, `baseline stored ${baseline.storedSize}`);
    // A passthrough object keeps small frames (ranges stay cheap): the repeat is out of reach.
    assert.ok(plain.storedSize > 0.9 * body.length, `passthrough stored ${plain.storedSize}`);
    assert.deepEqual(await bytesOf(zstd, "g/reference.bin"), body);
    const range = await zstd.getObject("b", "g/reference.bin", {
      start: 5_000_000,
      end: 5_000_099,
    });
    const part = new Uint8Array(await new Response(range!.body).arrayBuffer());
    assert.deepEqual(part, body.slice(5_000_000, 5_000_100));
    // Its frame decodes in the frame worker: one damaged byte there is an error, never bytes.
    const path = `${root}/b/g/reference.bin`;
    const stored = await Deno.readFile(path);
    stored[1000] ^= 0x40;
    await Deno.writeFile(path, stored);
    await assert.rejects(() => bytesOf(zstd, "g/reference.bin"), /damaged/);
  } finally {
    stopFrameDecoder();
    await Deno.remove(root, { recursive: true });
  }
});
