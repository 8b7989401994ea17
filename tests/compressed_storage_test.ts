/**
 * Black-box tests of storage compression (docs/COMPRESSION.md) on the S3 surface: a real svc,
 * driven by @aws-sdk/client-s3. Compressible passthrough objects and delta baselines are stored
 * as seekable zstd (smaller on disk, with a `compression` marker in their record) and read back
 * byte-exact, whole and by ranges at frame edges; HEAD, listings and copies keep the original's
 * size and ETag; random bytes and compressed formats stay raw; encryption on top round-trips;
 * damage answers 500 or cuts the body, never wrong bytes. Under SVC_TEST_BACKEND=svc the same
 * round trips run over an S3 backend (the on-disk checks skip themselves).
 */
import assert from "node:assert/strict";
import {
  CopyObjectCommand,
  GetObjectCommand,
  HeadObjectCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  type S3Client,
} from "@aws-sdk/client-s3";
import {
  bytesOf,
  objectsOnLocalDisk,
  randomBytes,
  signedFetch,
  startSvc,
  type SvcProcess,
} from "./helpers/svc.ts";
import { md5Hex } from "./helpers/assertions.ts";
import { storedFile, storedFiles } from "./helpers/delta.ts";
import { tar } from "./helpers/tar.ts";

const BUCKET = "squeezed";
/** The layer's frame size (src/storage/compression/compressing-backend.ts). */
const FRAME = 256 * 1024;

/** Compressible text: CSV rows, exactly `n` bytes; `seed` varies the numbers. */
function csv(n: number, seed = 0): Uint8Array<ArrayBuffer> {
  const rows: string[] = [];
  let length = 0;
  for (let i = 0; length < n; i++) {
    const row = `${i},item-${(i + seed) % 977},${(i * 7919 + seed) % 100000},${
      i % 3 ? "no" : "yes"
    }\n`;
    rows.push(row);
    length += row.length;
  }
  return new TextEncoder().encode(rows.join("")).slice(0, n);
}

async function startWith(env: Record<string, string> = {}): Promise<SvcProcess> {
  const svc = await startSvc({ env: { SVC_CODEC_SLOT_WAIT_SECS: "250", ...env } });
  const res = await signedFetch(`${svc.url}/${BUCKET}`, { method: "PUT" });
  assert.equal(res.status, 200, await res.text());
  return svc;
}

async function put(s3: S3Client, key: string, body: Uint8Array) {
  await s3.send(new PutObjectCommand({ Bucket: BUCKET, Key: key, Body: body }));
}

async function get(s3: S3Client, key: string, range?: string) {
  const got = await s3.send(new GetObjectCommand({ Bucket: BUCKET, Key: key, Range: range }));
  return { got, bytes: await bytesOf(got.Body) };
}

/** The record the filesystem backend keeps for `key` (local-disk runs only). */
function compressionOf(dataDir: string, key: string): string | undefined {
  return storedFile(dataDir, BUCKET, key)?.meta?.compression as string | undefined;
}

Deno.test("compressed storage: a compressible object round-trips exactly and is stored smaller", async () => {
  await using svc = await startWith();
  const s3 = svc.client();
  const body = csv(5 * FRAME + 12345);
  const key = "exports/table.csv";
  await put(s3, key, body);

  const { got, bytes } = await get(s3, key);
  assert.deepEqual(bytes, body);
  assert.equal(got.ETag, `"${md5Hex(body)}"`);
  const head = await s3.send(new HeadObjectCommand({ Bucket: BUCKET, Key: key }));
  assert.equal(head.ContentLength, body.length);
  assert.equal(head.ETag, `"${md5Hex(body)}"`);
  const listed = await s3.send(new ListObjectsV2Command({ Bucket: BUCKET }));
  assert.deepEqual(listed.Contents?.map((o) => [o.Key, o.Size, o.ETag]), [
    [key, body.length, `"${md5Hex(body)}"`],
  ]);

  const last = body.length - 1;
  const ranges: [number, number][] = [
    [0, 0],
    [FRAME - 1, FRAME],
    [FRAME, 2 * FRAME - 1],
    [FRAME - 100, 3 * FRAME + 100],
    [5 * FRAME, last],
    [last, last],
  ];
  for (const [start, end] of ranges) {
    const ranged = await get(s3, key, `bytes=${start}-${end}`);
    assert.deepEqual(ranged.bytes, body.slice(start, end + 1), `${start}-${end}`);
    assert.equal(ranged.got.ContentRange, `bytes ${start}-${end}/${body.length}`);
  }
  const suffix = await get(s3, key, "bytes=-70000");
  assert.deepEqual(suffix.bytes, body.slice(-70000));

  await s3.send(
    new CopyObjectCommand({ Bucket: BUCKET, Key: "copy.csv", CopySource: `${BUCKET}/${key}` }),
  );
  const copy = await get(s3, "copy.csv");
  assert.deepEqual(copy.bytes, body);
  assert.equal(copy.got.ETag, `"${md5Hex(body)}"`);

  if (objectsOnLocalDisk) {
    for (const name of [key, "copy.csv"]) {
      const file = storedFile(svc.dataDir, BUCKET, name)!;
      assert.match(compressionOf(svc.dataDir, name) ?? "", /^zstd:/, name);
      assert.ok(
        file.size < body.length / 3,
        `${name}: ${file.size} bytes on disk of ${body.length}`,
      );
    }
  }
});

Deno.test("compressed storage: random bytes and compressed formats are stored raw", async () => {
  await using svc = await startWith();
  const s3 = svc.client();
  const random = randomBytes(2 * FRAME);
  const gz = csv(FRAME); // compressible, but named as a compressed format: not even sampled
  await put(s3, "noise.bin", random);
  await put(s3, "logs.csv.xz", gz);
  assert.deepEqual((await get(s3, "noise.bin")).bytes, random);
  assert.deepEqual((await get(s3, "logs.csv.xz", "bytes=100-200")).bytes, gz.slice(100, 201));
  if (objectsOnLocalDisk) {
    for (const [name, body] of [["noise.bin", random], ["logs.csv.xz", gz]] as const) {
      assert.equal(compressionOf(svc.dataDir, name), undefined, name);
      assert.equal(storedFile(svc.dataDir, BUCKET, name)!.size, body.length, name);
    }
  }
});

Deno.test("compressed storage: passthrough compression off keeps new objects raw", async () => {
  await using svc = await startWith({ SVC_STORAGE_COMPRESSION: "baselines" });
  const s3 = svc.client();
  const body = csv(FRAME);
  await put(s3, "plain.csv", body);
  assert.deepEqual((await get(s3, "plain.csv")).bytes, body);
  if (objectsOnLocalDisk) {
    assert.equal(compressionOf(svc.dataDir, "plain.csv"), undefined);
    assert.equal(storedFile(svc.dataDir, BUCKET, "plain.csv")!.size, body.length);
  }
});

// Not under SVC_TEST_BACKEND=svc: a backing svc reserves `reference.bin` names itself (its own
// delta layer), so a front's baselines cannot be stored on it (tests/helpers/svc.ts).
Deno.test({
  name: "compressed storage: a delta series gets a compressed baseline, every version exact",
  ignore: !objectsOnLocalDisk,
  fn: async () => {
    await using svc = await startWith();
    const s3 = svc.client();
    const members = [0, 1, 2].map((i) => ({ name: `data/part-${i}.csv`, data: csv(600_000, i) }));
    const versions: Uint8Array<ArrayBuffer>[] = [];
    for (let v = 0; v < 4; v++) {
      members[v % 3] = { ...members[v % 3], data: csv(600_000, 10 + v) };
      versions.push(
        tar([...members, { name: "VERSION", data: new TextEncoder().encode(`${v}\n`) }]),
      );
      await put(s3, `rel/app-${v}.tar`, versions[v]);
    }
    for (let v = 0; v < versions.length; v++) {
      const { got, bytes } = await get(s3, `rel/app-${v}.tar`);
      assert.deepEqual(bytes, versions[v], `version ${v}`);
      assert.equal(got.ETag, `"${md5Hex(versions[v])}"`);
      const ranged = await get(s3, `rel/app-${v}.tar`, `bytes=${FRAME - 5}-${FRAME + 5}`);
      assert.deepEqual(ranged.bytes, versions[v].slice(FRAME - 5, FRAME + 6));
    }
    if (objectsOnLocalDisk) {
      const files = storedFiles(svc.dataDir, BUCKET);
      const baseline = files.find((f) => f.storage === "reference");
      assert.ok(baseline, files.map((f) => `${f.name}:${f.storage}`).join(" "));
      assert.match(String(baseline.meta?.compression), /^zstd:/);
      assert.ok(baseline.size < versions[0].length / 2, `baseline ${baseline.size} bytes on disk`);
      assert.ok(files.some((f) => f.storage === "delta"), "later versions are deltas");
    }
  },
});

Deno.test("compressed storage: under encryption, compressed then sealed, reads exact", async () => {
  const root = await Deno.makeTempDir({ prefix: "svc-zstd-enc-" });
  const objects = `${root}/objects`;
  await Deno.mkdir(objects);
  await Deno.writeTextFile(
    `${root}/svc.yaml`,
    `storage:\n  backends:\n    - name: vault\n      type: filesystem\n      path: ${objects}\n` +
      `      encryption:\n        mode: aes256-gcm-proxy\n        key: "${"c3".repeat(32)}"\n`,
  );
  await using svc = await startSvc({ dataDir: root, env: { SVC_CONFIG: `${root}/svc.yaml` } });
  assert.equal((await signedFetch(`${svc.url}/${BUCKET}`, { method: "PUT" })).status, 200);
  const s3 = svc.client();
  const body = csv(3 * FRAME + 999);
  await put(s3, "sealed.csv", body);
  assert.deepEqual((await get(s3, "sealed.csv")).bytes, body);
  const ranged = await get(s3, "sealed.csv", `bytes=${2 * FRAME - 1}-${2 * FRAME + 1}`);
  assert.deepEqual(ranged.bytes, body.slice(2 * FRAME - 1, 2 * FRAME + 2));
  const head = await s3.send(new HeadObjectCommand({ Bucket: BUCKET, Key: "sealed.csv" }));
  assert.equal(head.ContentLength, body.length);
  const file = storedFile(objects, BUCKET, "sealed.csv")!;
  assert.match(String(file.meta?.compression), /^zstd:/);
  assert.ok(typeof file.meta?.encryptionKeyId === "string", "sealed as well");
  assert.ok(file.size < body.length / 3, `${file.size} bytes on disk`);
  assert.equal(
    new TextDecoder().decode(Deno.readFileSync(`${objects}/${BUCKET}/sealed.csv`)).includes(
      "item-1",
    ),
    false,
  );
});

Deno.test({
  name: "compressed storage: a damaged byte answers 500 or cuts the body, never wrong bytes",
  ignore: !objectsOnLocalDisk,
  fn: async () => {
    await using svc = await startWith();
    const s3 = svc.client();
    const body = csv(16 * FRAME);
    await put(s3, "fragile.csv", body);
    const path = `${svc.dataDir}/${BUCKET}/fragile.csv`;
    const marker = compressionOf(svc.dataDir, "fragile.csv")!;
    const indexOffset = Number(marker.split(":")[2]);
    const pristine = Deno.readFileSync(path);
    // The middle of frame 10, from the index trailer (u64 stored end offsets, one per frame).
    const index = new DataView(pristine.buffer, indexOffset);
    const frame10 = (Number(index.getBigUint64(9 * 8)) + Number(index.getBigUint64(10 * 8))) >> 1;
    const inFrame10 = `bytes=${10 * FRAME + 7}-${10 * FRAME + 17}`;
    const url = `${svc.url}/${BUCKET}/fragile.csv`;
    let failures = 0;
    for (const at of [50, frame10]) {
      const damaged = pristine.slice();
      damaged[at] ^= 0x20;
      const file = await Deno.open(path, { write: true });
      await file.write(damaged);
      file.close();
      // A read that needs the damaged frame fails (before its first byte when that frame is its
      // first); a read that does not need it returns exact bytes.
      for (const range of [undefined, "bytes=0-10", inFrame10]) {
        const res = await signedFetch(url, range ? { headers: { range } } : {});
        let bytes: Uint8Array | undefined;
        try {
          bytes = new Uint8Array(await res.arrayBuffer());
        } catch {
          failures++;
          continue; // cut short: the client sees a broken download
        }
        if (res.status === 500) {
          failures++;
          continue;
        }
        assert.ok(res.status === 200 || res.status === 206, `${at} ${range}: ${res.status}`);
        const [start, end] = range ? range.slice(6).split("-").map(Number) : [0, body.length - 1];
        assert.equal(bytes.length, end - start + 1, `${at} ${range}: a short body is damage`);
        assert.deepEqual(bytes, body.slice(start, end + 1), `${at} ${range}: never wrong bytes`);
      }
    }
    // Each damage breaks the full read and the one range over its frame.
    assert.ok(failures >= 4, `the damage was found by ${failures} reads`);
    const first = pristine.slice();
    first[50] ^= 0x20;
    await Deno.writeFile(path, first, { create: false });
    // writeFile keeps the inode, so the xattr stays
    const res = await signedFetch(`${url}`, { headers: { range: "bytes=0-10" } });
    assert.equal(res.status, 500, await res.text());
  },
});
