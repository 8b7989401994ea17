/**
 * What the upgrade test stores with an old svc and checks with today's (tests/upgrade_test.ts):
 * release series of a `.tgz` (gzip(1) -9 of a tar), a `.zip` and a `.tar`, in per-version folders
 * and flat, a text and a JSON object (compressible: stored zstd by the versions that do that), a
 * random `.bin`, a tiny object, a folder marker and a multipart object. Every object is recorded
 * with its sha256 and what the S3 surface said about it, so a later server can be held to it.
 */
import assert from "node:assert/strict";
import { zipSync } from "fflate";
import {
  CompleteMultipartUploadCommand,
  CreateMultipartUploadCommand,
  GetObjectCommand,
  HeadObjectCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  type S3Client,
  UploadPartCommand,
} from "@aws-sdk/client-s3";
import { bytesOf, randomBytes } from "./svc.ts";
import { sha256Hex } from "./delta.ts";
import { md5Hex } from "./assertions.ts";
import { multipartEtag } from "./multipart.ts";
import { mutate, tar, type TarMember } from "./tar.ts";

const utf8 = new TextEncoder();

export interface Stored {
  key: string;
  body: Uint8Array;
  sha256: string;
  etag: string;
  contentType?: string;
  metadata?: Record<string, string>;
  /** As the server that stored it answered (HEAD); set once read back. */
  lastModified?: string;
}

/** Source-like members (compressible text), seeded: versions share all but a few lines. */
function sourceTree(version: number, files = 24): TarMember[] {
  const words = ["alpha", "beta", "gamma", "delta", "const", "return", "function", "export"];
  let seed = 11;
  const next = () => (seed = (seed * 1103515245 + 12345) % 2147483648);
  return Array.from({ length: files }, (_, file) => {
    const lines: string[] = [];
    for (let line = 0; line < 300; line++) {
      const n = next();
      lines.push(`${words[n % 8]} ${words[(n >> 3) % 8]}_${n % 9973} = ${(n >> 5) % 1000};`);
      if (file % 7 === version % 7 && line % 50 === 0) lines.push(`// version ${version}`);
    }
    return { name: `pkg/src/file-${file}.ts`, data: utf8.encode(lines.join("\n")) };
  });
}

/** gzip(1) at -9 (no name, no time: a real producer, not zlib's own deflater). */
async function gzip9(data: Uint8Array): Promise<Uint8Array> {
  const child = new Deno.Command("gzip", { args: ["-9n"], stdin: "piped", stdout: "piped" })
    .spawn();
  const writer = child.stdin.getWriter();
  const [, output] = await Promise.all([
    writer.write(data).then(() => writer.close()),
    child.output(),
  ]);
  assert.ok(output.success, "gzip -9n failed");
  return output.stdout;
}

export const tgzOf = async (version: number) => await gzip9(tar(sourceTree(version)));
export const zipOf = (version: number) =>
  zipSync(
    Object.fromEntries(
      sourceTree(version + 100, 16).map((m) => [m.name, [m.data, { mtime: 1e12 }]]),
    ),
    { level: 6 },
  );

/** Random members, one patched per version (binary build output). */
export class TarSeries {
  #members: TarMember[] = Array.from({ length: 3 }, (_, i) => ({
    name: `bin/part-${i}.o`,
    data: randomBytes(96 * 1024),
  }));
  #version = 0;

  next(): Uint8Array {
    const which = this.#version++ % this.#members.length;
    this.#members[which] = { ...this.#members[which], data: mutate(this.#members[which].data) };
    return tar(this.#members);
  }
}

/** The keys of version `n` of each series. */
export const seriesKeys = (n: number) => ({
  tgz: `releases/1.0.${n}/app.tgz`,
  zip: `dist/2.${n}.0/tool-2.${n}.0.zip`,
  tar: `builds/app-1.${n}.tar`,
});

/** A PUT whose ETag must be the body's md5; the object as recorded. */
export async function putOne(
  s3: S3Client,
  bucket: string,
  key: string,
  body: Uint8Array,
  extra: { contentType?: string; metadata?: Record<string, string> } = {},
): Promise<Stored> {
  const put = await s3.send(
    new PutObjectCommand({
      Bucket: bucket,
      Key: key,
      Body: body,
      ContentType: extra.contentType,
      Metadata: extra.metadata,
    }),
  );
  assert.equal(put.ETag, `"${md5Hex(body)}"`, `${bucket}/${key}: ETag of the PUT`);
  return { key, body, sha256: sha256Hex(body), etag: put.ETag!, ...extra };
}

async function putMultipart(s3: S3Client, bucket: string, key: string): Promise<Stored> {
  const parts = [randomBytes(5 * 1024 * 1024), randomBytes(300_000)];
  const { UploadId } = await s3.send(
    new CreateMultipartUploadCommand({ Bucket: bucket, Key: key, Metadata: { kind: "mpu" } }),
  );
  const done = [];
  for (const [i, part] of parts.entries()) {
    const res = await s3.send(
      new UploadPartCommand({ Bucket: bucket, Key: key, UploadId, PartNumber: i + 1, Body: part }),
    );
    done.push({ PartNumber: i + 1, ETag: res.ETag });
  }
  const completed = await s3.send(
    new CompleteMultipartUploadCommand({
      Bucket: bucket,
      Key: key,
      UploadId,
      MultipartUpload: { Parts: done },
    }),
  );
  assert.equal(completed.ETag, multipartEtag(parts));
  const body = new Uint8Array(parts[0].length + parts[1].length);
  body.set(parts[0]);
  body.set(parts[1], parts[0].length);
  return { key, body, sha256: sha256Hex(body), etag: completed.ETag!, metadata: { kind: "mpu" } };
}

/** Writes the fixture into `bucket`: three versions of each series plus the single objects. */
export async function writeFixture(
  s3: S3Client,
  bucket: string,
  tars: TarSeries,
): Promise<Stored[]> {
  const out: Stored[] = [];
  for (let n = 0; n < 3; n++) {
    const keys = seriesKeys(n);
    out.push(await putOne(s3, bucket, keys.tgz, await tgzOf(n)));
    out.push(await putOne(s3, bucket, keys.zip, zipOf(n)));
    out.push(await putOne(s3, bucket, keys.tar, tars.next()));
  }
  const readme = utf8.encode("Release notes: everything still reads.\n".repeat(6000));
  out.push(await putOne(s3, bucket, "docs/readme.txt", readme, { contentType: "text/plain" }));
  const json = utf8.encode(
    JSON.stringify(Array.from({ length: 3000 }, (_, i) => ({ id: i, name: `item-${i}` }))),
  );
  out.push(
    await putOne(s3, bucket, "data/items.json", json, {
      contentType: "application/json",
      metadata: { build: "42", owner: "upgrade-test" },
    }),
  );
  out.push(await putOne(s3, bucket, "blobs/random.bin", randomBytes(300_000)));
  out.push(await putOne(s3, bucket, "docs/small.txt", utf8.encode("tiny\n")));
  out.push(await putOne(s3, bucket, "folders/empty/", new Uint8Array()));
  out.push(await putMultipart(s3, bucket, "uploads/big.bin"));
  return out;
}

export interface Entry {
  key: string;
  size: number;
  etag: string;
}

/** The whole listing, paged small so continuation tokens from either version are exercised. */
export async function listAll(s3: S3Client, bucket: string): Promise<Entry[]> {
  const out: Entry[] = [];
  let token: string | undefined;
  do {
    const page = await s3.send(
      new ListObjectsV2Command({ Bucket: bucket, MaxKeys: 5, ContinuationToken: token }),
    );
    for (const o of page.Contents ?? []) out.push({ key: o.Key!, size: o.Size!, etag: o.ETag! });
    token = page.NextContinuationToken;
  } while (token);
  return out;
}

/** Keys and common prefixes of one delimited listing level. */
export async function listLevel(s3: S3Client, bucket: string, prefix = "") {
  const page = await s3.send(
    new ListObjectsV2Command({ Bucket: bucket, Prefix: prefix, Delimiter: "/" }),
  );
  return {
    keys: (page.Contents ?? []).map((o) => `${o.Key}:${o.Size}`),
    prefixes: (page.CommonPrefixes ?? []).map((p) => p.Prefix!),
  };
}

/** Names svc keeps for itself, which a listing must never show. */
export const INTERNAL_NAME = /(^|\/)\.dg\/|(^|\/)reference\.bin$|\.delta$|^\.svc\//;

/** GET (whole and ranged) and HEAD of `object` answer exactly what was stored. */
export async function assertReadsBack(s3: S3Client, bucket: string, object: Stored) {
  const where = `${bucket}/${object.key}`;
  const got = await s3.send(new GetObjectCommand({ Bucket: bucket, Key: object.key }));
  const body = await bytesOf(got.Body);
  assert.equal(body.length, object.body.length, `${where}: GET size`);
  assert.equal(sha256Hex(body), object.sha256, `${where}: GET body differs`);
  assert.equal(got.ETag, object.etag, `${where}: GET ETag`);
  const size = object.body.length;
  if (size > 1) {
    const start = Math.floor(size / 3);
    const end = Math.min(size - 1, start + 70_000);
    const ranged = await s3.send(
      new GetObjectCommand({ Bucket: bucket, Key: object.key, Range: `bytes=${start}-${end}` }),
    );
    assert.equal(
      sha256Hex(await bytesOf(ranged.Body)),
      sha256Hex(object.body.subarray(start, end + 1)),
      `${where}: ranged GET ${start}-${end}`,
    );
    const suffix = await s3.send(
      new GetObjectCommand({ Bucket: bucket, Key: object.key, Range: "bytes=-100" }),
    );
    assert.equal(
      sha256Hex(await bytesOf(suffix.Body)),
      sha256Hex(object.body.subarray(Math.max(0, size - 100))),
      `${where}: suffix range`,
    );
  }
  const head = await s3.send(new HeadObjectCommand({ Bucket: bucket, Key: object.key }));
  assert.equal(head.ContentLength, size, `${where}: HEAD size`);
  assert.equal(head.ETag, object.etag, `${where}: HEAD ETag`);
  if (object.contentType) assert.equal(head.ContentType, object.contentType, `${where}: type`);
  if (object.metadata) assert.deepEqual(head.Metadata, object.metadata, `${where}: metadata`);
  const modified = head.LastModified?.toISOString();
  if (object.lastModified === undefined) object.lastModified = modified;
  else assert.equal(modified, object.lastModified, `${where}: Last-Modified`);
}
