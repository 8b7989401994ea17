/**
 * Black-box tests of encryption at rest (aes256-gcm-proxy) on the S3 surface: a real svc whose
 * only backend is a filesystem directory with an encryption block, driven by @aws-sdk/client-s3.
 * Small, large (64 MiB), multipart and delta-compressed objects are written with encryption on;
 * no stored file holds a byte of plaintext; every read path returns plaintext; damaged or
 * truncated stored objects answer 500 (or cut a full GET short: see the damage step) and never
 * wrong bytes; plaintext objects from before, the legacy key and key-id mismatches behave as
 * docs/ENCRYPTION.md says.
 *
 * The backend's directory is kept apart from the state directory (SVC_DATA_DIR): the delta caches
 * there are plaintext working copies (docs/ENCRYPTION.md), and what must hold no plaintext here is
 * what the backend stores (tests/encryption_state_test.ts checks multipart parts in flight).
 */
import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import {
  CompleteMultipartUploadCommand,
  CopyObjectCommand,
  CreateMultipartUploadCommand,
  GetObjectCommand,
  HeadObjectCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  type S3Client,
  UploadPartCommand,
} from "@aws-sdk/client-s3";
import { bytesOf, signedFetch as fetch, startSvc, type SvcProcess } from "./helpers/svc.ts";
import { AdminClient } from "./helpers/admin.ts";
import { codeOf, md5Hex } from "./helpers/assertions.ts";
import { layoutOf, sha256Hex } from "./helpers/delta.ts";
import { mutate, tar } from "./helpers/tar.ts";
import { filesUnder, markedBytes } from "./helpers/files.ts";

const BUCKET = "vaulted";
const MiB = 1024 * 1024;
const FRAME = 64 * 1024;
const KEY_A = "a7".repeat(32);
const KEY_B = "b8".repeat(32);
const MARKER = "SECRET-MARKER-0f3c9";
const PLAIN_MARKER = "PLAIN-BEFORE-7d21";
const encoder = new TextEncoder();

const marked = (size: number) => markedBytes(size, MARKER);

interface Setup {
  root: string;
  objects: string;
}

async function setup(): Promise<Setup> {
  const root = await Deno.makeTempDir({ prefix: "svc-encryption-" });
  const objects = `${root}/objects`;
  await Deno.mkdir(objects);
  return { root, objects };
}

/** Starts svc on `setup` with the `vault` backend's encryption block as given (YAML lines). */
async function start(s: Setup, encryption: string[], env: Record<string, string> = {}) {
  const block = encryption.length === 0
    ? ""
    : `      encryption:\n${encryption.map((line) => `        ${line}\n`).join("")}`;
  await Deno.writeTextFile(
    `${s.root}/svc.yaml`,
    `storage:\n  backends:\n    - name: vault\n      type: filesystem\n      path: ${s.objects}\n${block}` +
      // The layout checked here is the parent rule's (`<folder>reference.bin`).
      `  buckets:\n    ${BUCKET}:\n      deltaspace: parent\n`,
  );
  return await startSvc({
    dataDir: s.root,
    env: { SVC_CONFIG: `${s.root}/svc.yaml`, SVC_CODEC_SLOT_WAIT_SECS: "250", ...env },
  });
}

/** Whether `needle` occurs in the file's bytes (read whole: the test's files are bounded). */
function fileContains(path: string, needle: string): boolean {
  return Buffer.from(Deno.readFileSync(path)).includes(needle);
}

async function get(s3: S3Client, key: string, range?: string) {
  const got = await s3.send(new GetObjectCommand({ Bucket: BUCKET, Key: key, Range: range }));
  return { got, bytes: await bytesOf(got.Body) };
}

/** A raw GET: status and body, for answers the SDK would turn into exceptions or retries. */
async function rawGet(svc: SvcProcess, key: string, range?: string) {
  const response = await fetch(`${svc.url}/${BUCKET}/${key}`, {
    headers: range ? { range } : {},
  });
  return { status: response.status, text: await response.text() };
}

Deno.test("encryption: every write path is sealed on disk and reads back as plaintext", async (t) => {
  const s = await setup();
  const bodies = new Map<string, Uint8Array>();
  try {
    // Before encryption is turned on: one plaintext object.
    {
      await using svc = await start(s, []);
      assert.equal((await fetch(`${svc.url}/${BUCKET}`, { method: "PUT" })).status, 200);
      await svc.client().send(
        new PutObjectCommand({ Bucket: BUCKET, Key: "before.txt", Body: PLAIN_MARKER }),
      );
    }
    assert.ok(fileContains(`${s.objects}/${BUCKET}/before.txt`, PLAIN_MARKER), "stored plain");

    await using svc = await start(s, [
      "mode: aes256-gcm-proxy",
      "key_id: key-a",
    ], { SVC_BACKEND_VAULT_ENCRYPTION_KEY: KEY_A });
    const s3 = svc.client();

    await t.step("writes: small, 64 MiB, multipart, delta-compressed, copy", async () => {
      bodies.set("small.txt", encoder.encode(`${MARKER} a small object`));
      bodies.set("large.bin", marked(64 * MiB));
      for (const key of ["small.txt", "large.bin"]) {
        await s3.send(new PutObjectCommand({ Bucket: BUCKET, Key: key, Body: bodies.get(key) }));
      }
      const parts = [marked(5 * MiB), marked(MiB + 123)];
      const { UploadId } = await s3.send(
        new CreateMultipartUploadCommand({ Bucket: BUCKET, Key: "multi.bin" }),
      );
      const etags = [];
      for (const [index, part] of parts.entries()) {
        const sent = await s3.send(
          new UploadPartCommand({
            Bucket: BUCKET,
            Key: "multi.bin",
            UploadId,
            PartNumber: index + 1,
            Body: part,
          }),
        );
        etags.push({ ETag: sent.ETag, PartNumber: index + 1 });
      }
      await s3.send(
        new CompleteMultipartUploadCommand({
          Bucket: BUCKET,
          Key: "multi.bin",
          UploadId,
          MultipartUpload: { Parts: etags },
        }),
      );
      const joined = new Uint8Array(parts[0].length + parts[1].length);
      joined.set(parts[0]);
      joined.set(parts[1], parts[0].length);
      bodies.set("multi.bin", joined);
      // Two versions of an artifact: a baseline and a delta, both through the cipher.
      const v1 = tar([{ name: `${MARKER}.txt`, data: marked(512 * 1024) }]);
      const v2 = mutate(v1, 0.01);
      bodies.set("rel/app-1.0.tar", v1);
      bodies.set("rel/app-1.1.tar", v2);
      for (const key of ["rel/app-1.0.tar", "rel/app-1.1.tar"]) {
        await s3.send(new PutObjectCommand({ Bucket: BUCKET, Key: key, Body: bodies.get(key) }));
      }
      assert.deepEqual(layoutOf(s.objects, BUCKET, "rel/"), [
        "rel/app-1.0.tar.delta:delta",
        "rel/app-1.1.tar.delta:delta",
        "rel/reference.bin:reference",
      ]);
      await s3.send(
        new CopyObjectCommand({
          Bucket: BUCKET,
          Key: "copy.txt",
          CopySource: `${BUCKET}/small.txt`,
        }),
      );
      bodies.set("copy.txt", bodies.get("small.txt")!);
    });

    await t.step("no stored file holds the marker; each one carries its key id", () => {
      const files = filesUnder(`${s.objects}/${BUCKET}`);
      assert.ok(files.length >= 8, files.join("\n"));
      for (const path of files) {
        assert.ok(!fileContains(path, MARKER), `${path} holds plaintext`);
        if (path.endsWith("/before.txt")) continue;
        assert.ok(fileContains(path, "key-a"), `${path}: key id in its header`);
      }
    });

    await t.step("GET, ranges across frames, HEAD, LIST return the plaintext", async () => {
      for (const [key, body] of bodies) {
        const { got, bytes } = await get(s3, key);
        assert.equal(sha256Hex(bytes), sha256Hex(body), `${key}: body`);
        assert.equal(got.ContentLength, body.length);
        const head = await s3.send(new HeadObjectCommand({ Bucket: BUCKET, Key: key }));
        assert.equal(head.ContentLength, body.length);
        if (key !== "multi.bin") assert.equal(head.ETag, `"${md5Hex(body)}"`);
      }
      const large = bodies.get("large.bin")!;
      for (
        const [start, end] of [[FRAME - 7, FRAME + 8], [3 * FRAME, 5 * FRAME + 1], [
          large.length - 10,
          large.length - 1,
        ]]
      ) {
        const { got, bytes } = await get(s3, "large.bin", `bytes=${start}-${end}`);
        assert.equal(got.ContentRange, `bytes ${start}-${end}/${large.length}`);
        assert.deepEqual(bytes, large.subarray(start, end + 1));
      }
      const listed = await s3.send(new ListObjectsV2Command({ Bucket: BUCKET }));
      const byKey = new Map(listed.Contents!.map((o) => [o.Key!, o]));
      for (const [key, body] of bodies) {
        assert.equal(byKey.get(key)?.Size, body.length, `${key}: listed size`);
      }
      assert.equal(byKey.get("large.bin")?.ETag, `"${md5Hex(large)}"`);
      assert.equal(new TextDecoder().decode((await get(s3, "before.txt")).bytes), PLAIN_MARKER);
    });

    await t.step("a flipped byte or a truncated file answers 500, never other bytes", async () => {
      const small = `${s.objects}/${BUCKET}/small.txt`;
      const good = await Deno.readFile(small);
      const flipped = good.slice();
      flipped[good.length - 20] ^= 1;
      await Deno.writeFile(small, flipped);
      let answer = await rawGet(svc, "small.txt");
      assert.equal(answer.status, 500, answer.text);
      assert.equal(codeOf(answer.text), "InternalError");
      assert.ok(!answer.text.includes(MARKER));
      await Deno.writeFile(small, good.subarray(0, good.length - 1));
      answer = await rawGet(svc, "small.txt");
      assert.equal(answer.status, 500, answer.text);
      // A damaged frame deep inside the 64 MiB object: a range over it is a 500; a range
      // elsewhere still reads; a full GET has sent earlier verified frames when it reaches the
      // damage, so the body is cut short of its Content-Length (the SDK reports an error).
      const large = `${s.objects}/${BUCKET}/large.bin`;
      const file = await Deno.open(large, { read: true, write: true });
      const at = 104 + 800 * (FRAME + 16) + 100; // inside frame 800
      const one = new Uint8Array(1);
      await file.seek(at, Deno.SeekMode.Start);
      await file.read(one);
      await file.seek(at, Deno.SeekMode.Start);
      await file.write(new Uint8Array([one[0] ^ 0x80]));
      file.close();
      answer = await rawGet(svc, "large.bin", `bytes=${800 * FRAME}-${800 * FRAME + 10}`);
      assert.equal(answer.status, 500, answer.text);
      const fine = await get(s3, "large.bin", "bytes=0-99");
      assert.deepEqual(fine.bytes, bodies.get("large.bin")!.subarray(0, 100));
      const response = await fetch(`${svc.url}/${BUCKET}/large.bin`);
      assert.equal(response.status, 200, "the damage lies past the first verified frames");
      let received = 0;
      await assert.rejects(async () => {
        for await (const chunk of response.body!) received += chunk.length;
      });
      assert.ok(received <= 800 * FRAME, `only verified frames before the damage (${received})`);
    });
  } finally {
    await Deno.remove(s.root, { recursive: true }).catch(() => {});
  }
});

Deno.test("encryption: the legacy key reads old objects; a key-id mismatch names both ids", async () => {
  const s = await setup();
  try {
    {
      await using svc = await start(s, ["mode: aes256-gcm-proxy", "key_id: old-key"], {
        SVC_BACKEND_VAULT_ENCRYPTION_KEY: KEY_A,
      });
      assert.equal((await fetch(`${svc.url}/${BUCKET}`, { method: "PUT" })).status, 200);
      await svc.client().send(
        new PutObjectCommand({ Bucket: BUCKET, Key: "old.txt", Body: `${MARKER} old` }),
      );
    }
    {
      await using svc = await start(s, [
        "mode: aes256-gcm-proxy",
        "key_id: new-key",
        `legacy_key: ${KEY_A}`,
        "legacy_key_id: old-key",
      ], { SVC_BACKEND_VAULT_ENCRYPTION_KEY: KEY_B });
      const s3 = svc.client();
      assert.equal(new TextDecoder().decode((await get(s3, "old.txt")).bytes), `${MARKER} old`);
      await s3.send(new PutObjectCommand({ Bucket: BUCKET, Key: "new.txt", Body: "new" }));
      assert.ok(fileContains(`${s.objects}/${BUCKET}/new.txt`, "new-key"));
    }
    await using svc = await start(s, ["mode: aes256-gcm-proxy", "key_id: new-key"], {
      SVC_BACKEND_VAULT_ENCRYPTION_KEY: KEY_B,
    });
    const answer = await rawGet(svc, "old.txt");
    assert.equal(answer.status, 500, answer.text);
    assert.equal(codeOf(answer.text), "InternalError");
    assert.match(answer.text, /old-key/);
    assert.match(answer.text, /new-key/);
    assert.ok(
      !svc.logs.some((line) => line.includes(KEY_A) || line.includes(KEY_B)),
      "no key logged",
    );
    const metrics = await (await fetch(`${svc.url}/_/metrics`)).text();
    assert.match(metrics, /svc_encryption_decrypt_failures_total\{reason="key-mismatch"\} 1/);
    assert.ok(!metrics.includes(KEY_B));
    const admin = new AdminClient(svc.url);
    await admin.login();
    for (const path of ["/config", "/config/export", "/config/trace", "/backends"]) {
      const text = await (await admin.request("GET", path)).text();
      assert.ok(!text.includes(KEY_B) && !text.includes(KEY_A), `${path} shows no key`);
    }
    const exported = await (await admin.request("GET", "/config/export")).text();
    assert.match(exported, /aes256-gcm-proxy/);
  } finally {
    await Deno.remove(s.root, { recursive: true }).catch(() => {});
  }
});

Deno.test("encryption: sse modes on a filesystem backend are refused at startup", async () => {
  const s = await setup();
  try {
    await assert.rejects(start(s, ["mode: sse-s3"]), /sse-s3.*filesystem backend/);
  } finally {
    await Deno.remove(s.root, { recursive: true }).catch(() => {});
  }
});

Deno.test("encryption: turning it on by a config reload rebuilds storage; older objects stay readable", async () => {
  const s = await setup();
  try {
    await using svc = await start(s, ["mode: none"], { SVC_BACKEND_VAULT_ENCRYPTION_KEY: KEY_A });
    const s3 = svc.client();
    assert.equal((await fetch(`${svc.url}/${BUCKET}`, { method: "PUT" })).status, 200);
    await s3.send(new PutObjectCommand({ Bucket: BUCKET, Key: "plain.txt", Body: PLAIN_MARKER }));
    assert.ok(fileContains(`${s.objects}/${BUCKET}/plain.txt`, PLAIN_MARKER));
    // Same file, the mode changed: SIGHUP reloads it.
    const yaml = await Deno.readTextFile(`${s.root}/svc.yaml`);
    await Deno.writeTextFile(
      `${s.root}/svc.yaml`,
      yaml.replace("mode: none", "mode: aes256-gcm-proxy"),
    );
    const mark = svc.logs.length;
    svc.kill("SIGHUP");
    for (let i = 0; !svc.logs.slice(mark).some((l) => /config reloaded/.test(l)); i++) {
      if (i > 200) throw new Error(`no reload:\n${svc.logs.slice(mark).join("\n")}`);
      await new Promise((r) => setTimeout(r, 50));
    }
    await s3.send(new PutObjectCommand({ Bucket: BUCKET, Key: "sealed.txt", Body: MARKER }));
    assert.ok(!fileContains(`${s.objects}/${BUCKET}/sealed.txt`, MARKER), "sealed after reload");
    assert.equal(new TextDecoder().decode((await get(s3, "sealed.txt")).bytes), MARKER);
    assert.equal(new TextDecoder().decode((await get(s3, "plain.txt")).bytes), PLAIN_MARKER);
  } finally {
    await Deno.remove(s.root, { recursive: true }).catch(() => {});
  }
});
