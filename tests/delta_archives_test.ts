/**
 * Black-box tests of archive-aware deltas (docs/DELTA.md, "Archive token form"): consecutive
 * versions of a `.tgz` and a `.zip` in per-version folders are stored as small deltas of their
 * token form and read back byte for byte (GET cold and warm, ranges, HEAD, listing sizes, copy,
 * multipart); an archive the token form cannot represent is stored as it is and says why; damaged
 * stored bytes answer 500, never wrong bytes. The data directory is read to prove what is stored.
 */
import assert from "node:assert/strict";
import { gzipSync } from "node:zlib";
import { zipSync } from "fflate";
import {
  CopyObjectCommand,
  GetObjectCommand,
  HeadObjectCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  type S3Client,
} from "@aws-sdk/client-s3";
import { Upload } from "@aws-sdk/lib-storage";
import {
  bytesOf,
  objectsOnLocalDisk,
  randomBytes,
  signedFetch as fetch,
  startSvc,
} from "./helpers/svc.ts";
import {
  archivesConverted,
  corruptFile,
  sha256Hex,
  storedFile,
  storedFiles,
} from "./helpers/delta.ts";
import { tar } from "./helpers/tar.ts";

const BUCKET = "artifacts";
const ignore = !objectsOnLocalDisk;
const utf8 = new TextEncoder();

/** Text-like members (compressible, like source files), seeded so versions share most lines. */
function sourceTree(version: number): { name: string; data: Uint8Array }[] {
  const words = ["alpha", "beta", "gamma", "delta", "const", "return", "function", "export"];
  let seed = 7;
  const next = () => (seed = (seed * 1103515245 + 12345) % 2147483648);
  return Array.from({ length: 40 }, (_, file) => {
    const lines: string[] = [];
    for (let line = 0; line < 400; line++) {
      const n = next();
      lines.push(`${words[n % 8]} ${words[(n >> 3) % 8]}_${n % 9973} = ${(n >> 5) % 1000};`);
      // Each version changes a few lines of a few files.
      if (file % 13 === 0 && line % 97 === 0) lines.push(`// changed in version ${version}`);
    }
    return { name: `src/file-${file}.ts`, data: utf8.encode(lines.join("\n")) };
  });
}

const tgzOf = (version: number) => new Uint8Array(gzipSync(tar(sourceTree(version)), { level: 9 }));
const zipOf = (version: number) =>
  zipSync(
    Object.fromEntries(sourceTree(version).map((m) => [m.name, [m.data, { mtime: 1e12 }]])),
    { level: 6 },
  );

async function put(s3: S3Client, key: string, body: Uint8Array) {
  await s3.send(new PutObjectCommand({ Bucket: BUCKET, Key: key, Body: body }));
}

async function assertReadsBack(s3: S3Client, key: string, body: Uint8Array) {
  const got = await s3.send(new GetObjectCommand({ Bucket: BUCKET, Key: key }));
  assert.equal(sha256Hex(await bytesOf(got.Body)), sha256Hex(body), `${key}: body differs`);
  const ranged = await s3.send(
    new GetObjectCommand({ Bucket: BUCKET, Key: key, Range: "bytes=100-20000" }),
  );
  assert.equal(sha256Hex(await bytesOf(ranged.Body)), sha256Hex(body.subarray(100, 20001)));
  const head = await s3.send(new HeadObjectCommand({ Bucket: BUCKET, Key: key }));
  assert.equal(head.ContentLength, body.length);
}

Deno.test({
  name: "archives: tgz and zip versions in their own folders are token-form deltas, read exactly",
  ignore,
  async fn() {
    const dataDir = await Deno.makeTempDir({ prefix: "svc-archives-" });
    const versions = [0, 1, 2].map((v) => ({ v, tgz: tgzOf(v), zip: zipOf(v) }));
    const keyOf = (v: number, ext: string) => `releases/1.0.${v}/app.${ext}`;
    {
      await using svc = await startSvc({ dataDir, env: { SVC_DEBUG_HEADERS: "true" } });
      const s3 = svc.client();
      assert.equal((await fetch(`${svc.url}/${BUCKET}`, { method: "PUT" })).status, 200);
      for (const { v, tgz, zip } of versions) {
        await put(s3, keyOf(v, "tgz"), tgz);
        await put(s3, keyOf(v, "zip"), zip);
      }
      await archivesConverted(svc);
      // The newest versions read warm (their own bytes went to the rebuilt cache at conversion).
      await assertReadsBack(s3, keyOf(2, "tgz"), versions[2].tgz);
    }
    const files = storedFiles(dataDir, BUCKET);
    for (const ext of ["tgz", "zip"] as const) {
      for (const { v } of versions) {
        const delta = files.find((f) => f.name === `${keyOf(v, ext)}.delta`);
        assert.ok(delta, `${keyOf(v, ext)} is stored as a delta`);
        assert.equal(delta.meta?.transform, "archive-tokens-1");
        if (v > 0) {
          const raw = versions[v][ext].length;
          assert.ok(delta.size < raw / 10, `${ext} v${v}: delta ${delta.size} of ${raw}`);
        }
      }
    }
    // One baseline per artifact (auto deltaspace): the first archive as it is, used in its
    // token form (derived on use).
    const baselines = files.filter((f) => f.name.endsWith("reference.bin"));
    assert.equal(baselines.length, 2);
    assert.ok(baselines.every((b) => b.meta?.baselineForm === "archive-tokens-1"));
    assert.deepEqual(
      baselines.map((b) => b.meta?.sha256).sort(),
      [sha256Hex(versions[0].tgz), sha256Hex(versions[0].zip)].sort(),
    );

    // A restart empties the rebuilt cache: every read below decodes and contracts.
    await using svc = await startSvc({ dataDir, env: { SVC_DEBUG_HEADERS: "true" } });
    const s3 = svc.client();
    for (const { v, tgz, zip } of versions) {
      await assertReadsBack(s3, keyOf(v, "tgz"), tgz);
      await assertReadsBack(s3, keyOf(v, "zip"), zip);
    }
    const listed = await s3.send(new ListObjectsV2Command({ Bucket: BUCKET, Prefix: "releases/" }));
    const sizes = new Map((listed.Contents ?? []).map((o) => [o.Key!, o.Size!]));
    for (const { v, tgz, zip } of versions) {
      assert.equal(sizes.get(keyOf(v, "tgz")), tgz.length);
      assert.equal(sizes.get(keyOf(v, "zip")), zip.length);
    }
    assert.equal(sizes.size, 6, "listings show only the logical keys");

    await s3.send(
      new CopyObjectCommand({
        Bucket: BUCKET,
        Key: "copies/app.tgz",
        CopySource: `${BUCKET}/${keyOf(1, "tgz")}`,
      }),
    );
    await assertReadsBack(s3, "copies/app.tgz", versions[1].tgz);

    // A multipart upload of an archive (parts of 5 MiB: a member that does not compress).
    const big = new Uint8Array(
      gzipSync(tar([...sourceTree(3), { name: "blob.bin", data: randomBytes(6 << 20) }]), {
        level: 6,
      }),
    );
    await new Upload({
      client: s3,
      params: { Bucket: BUCKET, Key: keyOf(3, "tgz"), Body: big },
      partSize: 5 * 1024 * 1024,
    }).done();
    await assertReadsBack(s3, keyOf(3, "tgz"), big);
    await Deno.remove(dataDir, { recursive: true });
  },
});

Deno.test({
  name: "archives: one the token form cannot represent is stored as it is, and says why",
  ignore,
  async fn() {
    await using svc = await startSvc({ env: { SVC_DEBUG_HEADERS: "true" } });
    const s3 = svc.client();
    assert.equal((await fetch(`${svc.url}/${BUCKET}`, { method: "PUT" })).status, 200);
    const good = tgzOf(0);
    // A gzip header, then a deflate stream cut short: not representable. (Random bytes after the
    // cut made a valid stream now and then: a tail of random bits can decode as deflate.)
    const broken = good.slice(0, 4000);
    await put(s3, "builds/app-1.tgz", good);
    const res = await fetch(`${svc.url}/${BUCKET}/builds/app-2.tgz`, {
      method: "PUT",
      body: broken,
    });
    assert.equal(res.status, 200);
    assert.equal(res.headers.get("x-amz-storage-type"), "passthrough");
    await archivesConverted(svc); // the conversion finds out, and records why
    const stored = storedFile(svc.dataDir, BUCKET, "builds/app-2.tgz");
    assert.equal(stored?.meta?.storageReason, "archive_not_rebuildable");
    await assertReadsBack(s3, "builds/app-2.tgz", broken);
    await assertReadsBack(s3, "builds/app-1.tgz", good);
  },
});

Deno.test({
  name: "archives: a damaged delta or baseline answers 500, never wrong bytes",
  ignore,
  async fn() {
    const dataDir = await Deno.makeTempDir({ prefix: "svc-archives-damage-" });
    await using _cleanup = {
      [Symbol.asyncDispose]: () => Deno.remove(dataDir, { recursive: true }),
    };
    const env = { SVC_REBUILT_CACHE_MB: "0" };
    await using svc = await startSvc({ dataDir, env });
    const s3 = svc.client();
    assert.equal((await fetch(`${svc.url}/${BUCKET}`, { method: "PUT" })).status, 200);
    for (const v of [0, 1, 2]) await put(s3, `r/1.${v}/app.zip`, zipOf(v));
    await archivesConverted(svc);
    await assertReadsBack(s3, "r/1.1/app.zip", zipOf(1));
    await corruptFile(`${svc.dataDir}/${BUCKET}/r/1.1/app.zip.delta`, 4);
    const damaged = await fetch(`${svc.url}/${BUCKET}/r/1.1/app.zip`);
    assert.equal(damaged.status, 500);
    await damaged.body?.cancel();
    const baseline = storedFiles(svc.dataDir, BUCKET).find((f) => f.name.endsWith("reference.bin"));
    await corruptFile(`${svc.dataDir}/${BUCKET}/${baseline!.name}`, 4);
    // The token form derived from the baseline before the damage may still be cached (verified
    // bytes): the right bytes or 500 are both acceptable, anything else is not.
    const noBaseline = await fetch(`${svc.url}/${BUCKET}/r/1.2/app.zip`);
    const got = new Uint8Array(await noBaseline.arrayBuffer());
    if (noBaseline.status === 200) assert.equal(sha256Hex(got), sha256Hex(zipOf(2)));
    else assert.equal(noBaseline.status, 500);
    // Restarted, nothing is cached: the damaged baseline is read from disk.
    await svc.stop();
    await using again = await startSvc({ dataDir, env });
    const cold = await fetch(`${again.url}/${BUCKET}/r/1.2/app.zip`);
    assert.equal(cold.status, 500);
    await cold.body?.cancel();
  },
});

Deno.test({
  name: "archives: on an encrypted backend, token forms are sealed and read back exactly",
  ignore,
  async fn() {
    const root = await Deno.makeTempDir({ prefix: "svc-archives-sealed-" });
    const objects = `${root}/objects`;
    await Deno.mkdir(objects);
    await Deno.writeTextFile(
      `${root}/svc.yaml`,
      `storage:\n  backends:\n    - name: vault\n      type: filesystem\n      path: ${objects}\n` +
        `      encryption:\n        mode: aes256-gcm-proxy\n        key_id: key-a\n`,
    );
    const options = {
      dataDir: root,
      env: {
        SVC_CONFIG: `${root}/svc.yaml`,
        SVC_BACKEND_VAULT_ENCRYPTION_KEY: "a7".repeat(32),
      },
    };
    const versions = [0, 1, 2].map((v) => ({ v, tgz: tgzOf(v), zip: zipOf(v) }));
    {
      await using svc = await startSvc(options);
      const s3 = svc.client();
      assert.equal((await fetch(`${svc.url}/${BUCKET}`, { method: "PUT" })).status, 200);
      for (const { v, tgz, zip } of versions) {
        await put(s3, `rel/1.${v}/app.tgz`, tgz);
        await put(s3, `rel/1.${v}/app.zip`, zip);
      }
      await archivesConverted(svc);
    }
    // The token form holds the members' text as literals: none of it may be on disk in the clear.
    const stored = storedFiles(objects, BUCKET);
    assert.ok(stored.some((f) => f.name.endsWith(".delta")), "stored as deltas");
    for (const file of stored) {
      assert.equal(file.meta?.encryptionKeyId, "key-a", `${file.name} is sealed`);
      const bytes = new TextDecoder("latin1").decode(
        await Deno.readFile(`${objects}/${BUCKET}/${file.name}`),
      );
      assert.ok(!bytes.includes("changed in version"), `${file.name} holds plaintext`);
    }
    await using svc = await startSvc(options);
    const s3 = svc.client();
    for (const { v, tgz, zip } of versions) {
      await assertReadsBack(s3, `rel/1.${v}/app.tgz`, tgz);
      await assertReadsBack(s3, `rel/1.${v}/app.zip`, zip);
    }
    await Deno.remove(root, { recursive: true });
  },
});
