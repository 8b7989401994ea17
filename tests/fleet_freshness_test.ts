/**
 * No stale reads across svc instances over one backend (docs/DELTA.md "Several instances over
 * one backend"): an object overwritten or deleted through one front is never served in its old
 * form by another front once the write was answered, whatever it is stored as (passthrough,
 * delta, archive token-form delta) and when an overwrite changes how it is stored. The reading
 * front has read (and cached what it caches of) every old version first.
 */
import {
  CreateBucketCommand,
  DeleteObjectCommand,
  GetObjectCommand,
  HeadObjectCommand,
  PutObjectCommand,
  type S3Client,
} from "@aws-sdk/client-s3";
import assert from "node:assert/strict";
import { gzipSync } from "node:zlib";
import { zipSync } from "fflate";
import {
  bytesOf,
  clientFor,
  md5,
  sha256,
  startBackingSvc,
  startFront,
} from "./helpers/s3-front.ts";
import { randomBytes, type SvcProcess } from "./helpers/svc.ts";
import { mutate, tar } from "./helpers/tar.ts";
import { archivesConverted } from "./helpers/delta.ts";

const BUCKET = "fresh";

function members(variant: number) {
  const base = new TextEncoder().encode("shared line of a source file\n".repeat(4000));
  return [
    { name: "a/base.txt", data: base },
    { name: "a/version.txt", data: new TextEncoder().encode(`version ${variant}\n`) },
  ];
}

const bodies: Record<string, (variant: number) => Uint8Array> = {
  "plain.txt": (v) => new TextEncoder().encode(`plain text, version ${v}\n`.repeat(200)),
  "data.tar": (v) => tar(members(v)),
  "data.tgz": (v) => new Uint8Array(gzipSync(tar(members(v)), { level: 6 })),
  "data.zip": (v) =>
    zipSync(
      Object.fromEntries(members(v).map((m) => [m.name, [m.data, { mtime: 1e12 }]])),
      { level: 6 },
    ),
};

async function put(s3: S3Client, key: string, body: Uint8Array) {
  await s3.send(new PutObjectCommand({ Bucket: BUCKET, Key: key, Body: body }));
}

/** GET and HEAD through `s3` must show exactly `body`. */
async function assertServes(s3: S3Client, key: string, body: Uint8Array, what: string) {
  const got = await bytesOf(s3, BUCKET, key);
  assert.equal(sha256(got), sha256(body), `${what}: GET ${key} served another body`);
  const head = await s3.send(new HeadObjectCommand({ Bucket: BUCKET, Key: key }));
  assert.equal(head.ETag, `"${md5(body)}"`, `${what}: HEAD ${key} shows another ETag`);
  assert.equal(head.ContentLength, body.length, `${what}: HEAD ${key} shows another size`);
}

async function assertGone(s3: S3Client, key: string, what: string) {
  const get = await s3.send(new GetObjectCommand({ Bucket: BUCKET, Key: key })).then(
    () => "served",
    (err) => err.name,
  );
  assert.equal(get, "NoSuchKey", `${what}: GET ${key} after its delete`);
  const head = await s3.send(new HeadObjectCommand({ Bucket: BUCKET, Key: key })).then(
    () => "served",
    (err) => err.name,
  );
  assert.equal(head, "NotFound", `${what}: HEAD ${key} after its delete`);
}

Deno.test({
  name: "fleet freshness: overwrites and deletes through one front are seen at once by another",
  sanitizeResources: false,
  sanitizeOps: false,
  async fn(t) {
    const backing = await startBackingSvc([BUCKET]);
    const procs: SvcProcess[] = [];
    try {
      procs.push(await startFront(backing), await startFront(backing));
      const [writer, reader] = procs.map((p) => p.client({ checksums: false }));
      await writer.send(new CreateBucketCommand({ Bucket: BUCKET }));
      const raw = clientFor(backing);

      for (const [name, bodyOf] of Object.entries(bodies)) {
        await t.step(`${name}: overwrite, change of storage, delete`, async () => {
          // A first version elsewhere in the group, so the key itself is stored as a delta.
          await put(writer, `rel/1.0/${name}`, bodyOf(0));
          const key = `rel/1.1/${name}`;
          let previous = bodyOf(1);
          await put(writer, key, previous);
          await archivesConverted(procs[0]); // stored as a delta in the background (archives)
          // What the test is about: the eligible keys really are deltas on the backend.
          const stored = await raw.send(
            new HeadObjectCommand({ Bucket: BUCKET, Key: `${key}.delta` }),
          ).then(() => "delta", () => "passthrough");
          assert.equal(stored, name === "plain.txt" ? "passthrough" : "delta");
          await assertServes(reader, key, previous, "first version");
          for (let round = 2; round < 6; round++) {
            // Rounds 3 and 5 store noise (never a delta: passthrough), the others a version.
            const body = round % 2 === 1 ? randomBytes(previous.length) : bodyOf(round);
            await assertServes(reader, key, previous, `round ${round}, before`);
            await put(writer, key, body);
            await assertServes(reader, key, body, `round ${round}, after the overwrite`);
            await archivesConverted(procs[0]);
            await assertServes(reader, key, body, `round ${round}, after its conversion`);
            previous = body;
          }
          // A small edit of the last version: the same size, most bytes equal.
          const edited = mutate(previous, 0.001);
          await put(writer, key, edited);
          await assertServes(reader, key, edited, "after a small edit");
          await writer.send(new DeleteObjectCommand({ Bucket: BUCKET, Key: key }));
          await assertGone(reader, key, "after the delete");
          // Put back through the reader, read through the writer.
          const again = bodyOf(7);
          await put(reader, key, again);
          await assertServes(writer, key, again, "put back through the other front");
          await assertServes(reader, `rel/1.0/${name}`, bodyOf(0), "the group's first version");
        });
      }
    } finally {
      for (const proc of procs) await proc.stop();
      await backing.stop();
    }
  },
});
