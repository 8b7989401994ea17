/**
 * Black-box tests of object metadata at S3's limits on a filesystem that holds little of it per
 * file (ext4: one block, ~4 KiB, of extended attributes per inode): 2 KiB of user metadata, ten
 * tags of 128-character keys and 256-character values and a long Content-Disposition together,
 * through PUT, HEAD, GET, tagging, copy, multipart, markers, nesting, overwrite, listing and
 * delete. On the filesystem backend what does not fit in the attribute is kept in the object's
 * own file, after its bytes: checked on disk where the objects are local.
 */
import assert from "node:assert/strict";
import {
  CompleteMultipartUploadCommand,
  CopyObjectCommand,
  CreateMultipartUploadCommand,
  DeleteObjectCommand,
  GetObjectCommand,
  GetObjectTaggingCommand,
  HeadObjectCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  PutObjectTaggingCommand,
  type S3Client,
  type Tag,
  UploadPartCommand,
} from "@aws-sdk/client-s3";
import { bytesOf, objectsOnLocalDisk, randomBytes, startSvc } from "./helpers/svc.ts";
import { assertSdkError } from "./helpers/assertions.ts";
import { storedFile } from "./helpers/delta.ts";

const BUCKET = "meta-limits";

/** 2,048 bytes of user metadata (names plus values), the most S3 accepts. */
function bigUserMeta(seed: string): Record<string, string> {
  const meta: Record<string, string> = {};
  for (let i = 0; i < 8; i++) meta[`name-${i}`] = `${seed}${i}`.padEnd(256 - 6, "v");
  return meta;
}

/** Ten tags at S3's limits: 128-character keys, 256-character values. */
function bigTags(seed: string): Tag[] {
  return Array.from({ length: 10 }, (_, i) => ({
    Key: `${seed}-tag-${i}-`.padEnd(128, "k"),
    Value: `${seed}-value-${i} +=.:/@_-`.padEnd(256, "w"),
  }));
}

const tagging = (tags: Tag[]) =>
  tags.map((t) => `${encodeURIComponent(t.Key!)}=${encodeURIComponent(t.Value!)}`).join("&");

const DISPOSITION = `attachment; filename="${"d".repeat(1500)}.bin"`;

async function assertBig(s3: S3Client, key: string, seed: string, body?: Uint8Array) {
  const head = await s3.send(new HeadObjectCommand({ Bucket: BUCKET, Key: key }));
  assert.deepEqual(head.Metadata, bigUserMeta(seed), key);
  assert.equal(head.ContentDisposition, DISPOSITION);
  assert.equal(head.CacheControl, "max-age=60");
  const got = await s3.send(new GetObjectCommand({ Bucket: BUCKET, Key: key }));
  assert.deepEqual(got.Metadata, bigUserMeta(seed));
  assert.equal(got.TagCount, 10);
  const bytes = await bytesOf(got.Body);
  if (body) assert.deepEqual(bytes, body, `${key}: the body, without the metadata kept after it`);
  assert.equal(got.ContentLength, bytes.length);
  const tags = await s3.send(new GetObjectTaggingCommand({ Bucket: BUCKET, Key: key }));
  assert.deepEqual(tags.TagSet, bigTags(seed));
}

async function putBig(s3: S3Client, key: string, seed: string, body: Uint8Array | string) {
  await s3.send(
    new PutObjectCommand({
      Bucket: BUCKET,
      Key: key,
      Body: body,
      Metadata: bigUserMeta(seed),
      Tagging: tagging(bigTags(seed)),
      ContentDisposition: DISPOSITION,
      CacheControl: "max-age=60",
    }),
  );
}

Deno.test({
  name: "metadata limits: user metadata, tags and headers at S3's limits together",
  // An S3 backend keeps svc's fields (tags among them) in the backend's 2 KB of user metadata,
  // so it refuses these with MetadataTooLarge (s3-meta.ts): a limit of that backend, not of svc.
  ignore: !objectsOnLocalDisk,
  fn: async (t) => {
    await using svc = await startSvc();
    const s3 = svc.client();
    await s3.send(new (await import("@aws-sdk/client-s3")).CreateBucketCommand({ Bucket: BUCKET }));
    const body = randomBytes(200_000);
    /** The object's file on disk. */
    const onDisk = (name: string) => storedFile(svc.dataDir, BUCKET, name);

    await t.step("PUT, HEAD, GET and GetObjectTagging", async () => {
      await putBig(s3, "big", "a", body);
      await assertBig(s3, "big", "a", body);
      await putBig(s3, "small-body", "b", "x");
      await assertBig(s3, "small-body", "b", new TextEncoder().encode("x"));
    });

    await t.step(
      "PutObjectTagging makes an existing object's metadata too big, repeatedly",
      async () => {
        await s3.send(
          new PutObjectCommand({
            Bucket: BUCKET,
            Key: "retagged",
            Body: body,
            Metadata: bigUserMeta("c"),
            ContentDisposition: DISPOSITION,
            CacheControl: "max-age=60",
          }),
        );
        const sizes: number[] = [];
        for (const seed of ["c", "d", "e", "f", "g", "c"]) {
          await s3.send(
            new PutObjectTaggingCommand({
              Bucket: BUCKET,
              Key: "retagged",
              Tagging: { TagSet: bigTags(seed) },
            }),
          );
          const tags = await s3.send(
            new GetObjectTaggingCommand({ Bucket: BUCKET, Key: "retagged" }),
          );
          assert.deepEqual(tags.TagSet, bigTags(seed));
          sizes.push(onDisk("retagged")!.size);
        }
        await assertBig(s3, "retagged", "c", body);
        // Each rewrite reuses the space of the one before last: the file does not keep growing, it
        // settles between two sizes.
        assert.ok(new Set(sizes.slice(2)).size <= 2, `file sizes ${sizes}`);
        assert.ok(Math.max(...sizes) < body.length + 3 * 8192, `file sizes ${sizes}`);
        // Tags alone too big, then small again: the file holds the body alone once more.
        await s3.send(new PutObjectCommand({ Bucket: BUCKET, Key: "tags-only", Body: body }));
        for (const tags of [bigTags("t"), [{ Key: "k", Value: "v" }]]) {
          await s3.send(
            new PutObjectTaggingCommand({
              Bucket: BUCKET,
              Key: "tags-only",
              Tagging: { TagSet: tags },
            }),
          );
          const got = await s3.send(
            new GetObjectTaggingCommand({ Bucket: BUCKET, Key: "tags-only" }),
          );
          assert.deepEqual(got.TagSet, tags);
          const read = await s3.send(new GetObjectCommand({ Bucket: BUCKET, Key: "tags-only" }));
          assert.deepEqual(await bytesOf(read.Body), body);
          assert.equal(onDisk("tags-only")!.size > body.length, tags.length === 10);
        }
      },
    );

    await t.step("CopyObject copies metadata and tags; a copy can replace them", async () => {
      await s3.send(
        new CopyObjectCommand({ Bucket: BUCKET, Key: "copy", CopySource: `${BUCKET}/big` }),
      );
      await assertBig(s3, "copy", "a", body);
      await s3.send(
        new CopyObjectCommand({
          Bucket: BUCKET,
          Key: "copy-replaced",
          CopySource: `${BUCKET}/small-body`,
          MetadataDirective: "REPLACE",
          TaggingDirective: "REPLACE",
          Metadata: bigUserMeta("g"),
          Tagging: tagging(bigTags("g")),
          ContentDisposition: DISPOSITION,
          CacheControl: "max-age=60",
        }),
      );
      await assertBig(s3, "copy-replaced", "g", new TextEncoder().encode("x"));
    });

    await t.step("multipart uploads, markers and nested keys", async () => {
      const { UploadId } = await s3.send(
        new CreateMultipartUploadCommand({
          Bucket: BUCKET,
          Key: "multi",
          Metadata: bigUserMeta("h"),
          Tagging: tagging(bigTags("h")),
          ContentDisposition: DISPOSITION,
          CacheControl: "max-age=60",
        }),
      );
      const part1 = randomBytes(5 * 1024 * 1024);
      const part2 = randomBytes(1000);
      const parts = [];
      for (const [i, part] of [part1, part2].entries()) {
        const { ETag } = await s3.send(
          new UploadPartCommand({
            Bucket: BUCKET,
            Key: "multi",
            UploadId,
            PartNumber: i + 1,
            Body: part,
          }),
        );
        parts.push({ ETag, PartNumber: i + 1 });
      }
      await s3.send(
        new CompleteMultipartUploadCommand({
          Bucket: BUCKET,
          Key: "multi",
          UploadId,
          MultipartUpload: { Parts: parts },
        }),
      );
      await assertBig(s3, "multi", "h", new Uint8Array([...part1, ...part2]));
      // An empty marker and one with a body.
      await putBig(s3, "dir/", "i", new Uint8Array());
      await assertBig(s3, "dir/", "i", new Uint8Array());
      await putBig(s3, "dir2/", "j", "marker body");
      await assertBig(s3, "dir2/", "j", new TextEncoder().encode("marker body"));
      await s3.send(
        new PutObjectTaggingCommand({
          Bucket: BUCKET,
          Key: "dir/",
          Tagging: { TagSet: bigTags("k") },
        }),
      );
      const tags = await s3.send(new GetObjectTaggingCommand({ Bucket: BUCKET, Key: "dir/" }));
      assert.deepEqual(tags.TagSet, bigTags("k"));
      // An empty marker whose tags outgrow its directory's attribute.
      await s3.send(new PutObjectCommand({ Bucket: BUCKET, Key: "dir3/", Body: new Uint8Array() }));
      await s3.send(
        new PutObjectTaggingCommand({
          Bucket: BUCKET,
          Key: "dir3/",
          Tagging: { TagSet: bigTags("m") },
        }),
      );
      const dir3 = await s3.send(new GetObjectTaggingCommand({ Bucket: BUCKET, Key: "dir3/" }));
      assert.deepEqual(dir3.TagSet, bigTags("m"));
      const dir3Head = await s3.send(new HeadObjectCommand({ Bucket: BUCKET, Key: "dir3/" }));
      assert.equal(dir3Head.ContentLength, 0);
      // A key below "big" makes its path a directory: the object moves inside it, metadata too.
      await s3.send(new PutObjectCommand({ Bucket: BUCKET, Key: "big/child", Body: "c" }));
      await assertBig(s3, "big", "a", body);
    });

    await t.step("listing shows body sizes", async () => {
      const list = await s3.send(new ListObjectsV2Command({ Bucket: BUCKET }));
      const sizes = Object.fromEntries((list.Contents ?? []).map((c) => [c.Key, c.Size]));
      assert.deepEqual(sizes, {
        "big": body.length,
        "big/child": 1,
        "copy": body.length,
        "copy-replaced": 1,
        "dir/": 0,
        "dir2/": 11,
        "dir3/": 0,
        "multi": 5 * 1024 * 1024 + 1000,
        "retagged": body.length,
        "small-body": 1,
        "tags-only": body.length,
      });
    });

    await t.step("overwrite with small metadata, then delete", async () => {
      await s3.send(
        new PutObjectCommand({ Bucket: BUCKET, Key: "big", Body: "small", Metadata: { a: "1" } }),
      );
      const head = await s3.send(new HeadObjectCommand({ Bucket: BUCKET, Key: "big" }));
      assert.deepEqual(head.Metadata, { a: "1" });
      assert.equal(head.ContentDisposition, undefined);
      assert.equal(onDisk("big/.svc-object")!.size, 5);
      for (const key of ["big", "copy", "multi", "dir/", "dir2/", "small-body"]) {
        await s3.send(new DeleteObjectCommand({ Bucket: BUCKET, Key: key }));
        await assertSdkError(
          s3.send(new HeadObjectCommand({ Bucket: BUCKET, Key: key })),
          404,
          "NotFound",
        );
      }
      // Still too large for S3: one byte over 2 KiB of user metadata.
      await assertSdkError(
        s3.send(
          new PutObjectCommand({
            Bucket: BUCKET,
            Key: "over",
            Body: "x",
            Metadata: { ...bigUserMeta("z"), x: "" },
          }),
        ),
        400,
        "MetadataTooLarge",
      );
    });
  },
});

Deno.test({
  name: "metadata limits: a multipart object with large metadata keeps its parts across a restart",
  ignore: !objectsOnLocalDisk,
  fn: async () => {
    const dataDir = await Deno.makeTempDir({ prefix: "svc-meta-limits-" });
    try {
      const part = randomBytes(5 * 1024 * 1024);
      {
        await using svc = await startSvc({ dataDir });
        const s3 = svc.client();
        await s3.send(
          new (await import("@aws-sdk/client-s3")).CreateBucketCommand({ Bucket: BUCKET }),
        );
        const { UploadId } = await s3.send(
          new CreateMultipartUploadCommand({
            Bucket: BUCKET,
            Key: "multi",
            Metadata: bigUserMeta("r"),
            Tagging: tagging(bigTags("r")),
            ContentDisposition: DISPOSITION,
            CacheControl: "max-age=60",
          }),
        );
        const { ETag } = await s3.send(
          new UploadPartCommand({
            Bucket: BUCKET,
            Key: "multi",
            UploadId,
            PartNumber: 1,
            Body: part,
          }),
        );
        await s3.send(
          new CompleteMultipartUploadCommand({
            Bucket: BUCKET,
            Key: "multi",
            UploadId,
            MultipartUpload: { Parts: [{ ETag, PartNumber: 1 }] },
          }),
        );
      }
      // The start judges which extents directories their owner key still names: this one is.
      await using svc = await startSvc({ dataDir });
      await assertBig(svc.client(), "multi", "r", part);
    } finally {
      await Deno.remove(dataDir, { recursive: true }).catch(() => {});
    }
  },
});
