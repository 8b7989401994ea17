import assert from "node:assert/strict";
import { bucketNameProblem } from "../lib/bucket-names.ts";
import { parseUserMetadata, validateBucketName, validateObjectKey } from "./names.ts";
import { throwsWith } from "../testing/svc-error-assertions.ts";

Deno.test("good bucket names pass", () => {
  for (
    const name of [
      "abc",
      "my-bucket",
      "my.bucket.name",
      "a1b2c3",
      "123",
      "1.2.3",
      "1.2.3.4.5",
      "bucket-an",
      "xn-single-hyphen",
      "sthree",
      "a".repeat(63),
      "docexamplebucket1",
      "log-delivery-march-2020",
    ]
  ) {
    assert.equal(bucketNameProblem(name), null, name);
    validateBucketName(name);
  }
});

Deno.test("bad bucket names are InvalidBucketName with the name", () => {
  for (
    const name of [
      "",
      "ab",
      "a".repeat(64),
      "_",
      "My-Bucket",
      "my_bucket",
      "-bucket",
      "bucket-",
      ".bucket",
      "bucket.",
      "my..bucket",
      "192.168.5.4",
      "1.2.3.4",
      "xn--bucket",
      "sthree-bucket",
      "sthree-configurator",
      "amzn-s3-demo-bucket",
      "bucket-s3alias",
      "bucket--ol-s3",
      "bucket.mrap",
      "bucket--usw2-az1--x-s3",
      "bucket--table-s3",
      "bucket with space",
      "bücket",
    ]
  ) {
    const err = throwsWith(() => validateBucketName(name), "InvalidBucketName");
    assert.equal(err.status, 400);
    assert.equal(err.details.BucketName, name);
    assert.ok(err.message.includes(`"${name}"`), err.message);
  }
});

Deno.test("object keys: empty, NUL and broken Unicode are invalid, 1024 bytes is the limit", () => {
  validateObjectKey("a");
  validateObjectKey("dir/sub/file.txt");
  validateObjectKey("ünïcødé/🎉");
  validateObjectKey("x".repeat(1024));
  validateObjectKey("é".repeat(512)); // 1024 bytes
  throwsWith(() => validateObjectKey(""), "InvalidObjectName");
  throwsWith(() => validateObjectKey("a\0b"), "InvalidObjectName");
  throwsWith(() => validateObjectKey("a\uD800b"), "InvalidObjectName");
  const long = throwsWith(() => validateObjectKey("x".repeat(1025)), "KeyTooLongError");
  assert.equal(long.details.Size, "1025");
  throwsWith(() => validateObjectKey("é".repeat(513)), "KeyTooLongError");
});

Deno.test("user metadata: x-amz-meta-* collected lowercase without the prefix", () => {
  const headers = new Headers({
    "X-Amz-Meta-Color": "blue",
    "x-amz-meta-Multi-Word": "a b",
    "x-amz-meta-": "ignored",
    "content-type": "text/plain",
    "x-amz-metadata-directive": "REPLACE",
  });
  assert.deepEqual(parseUserMetadata(headers), { color: "blue", "multi-word": "a b" });
  assert.deepEqual(parseUserMetadata(new Headers()), {});
});

Deno.test("user metadata: 2 KB of names plus values, then MetadataTooLarge", () => {
  // "k" (1 byte) + 2047 bytes = 2048: exactly the limit.
  parseUserMetadata(new Headers({ "x-amz-meta-k": "v".repeat(2047) }));
  const err = throwsWith(
    () => parseUserMetadata(new Headers({ "x-amz-meta-k": "v".repeat(2048) })),
    "MetadataTooLarge",
  );
  assert.equal(err.details.Size, "2049");
  // The total counts across headers.
  throwsWith(
    () =>
      parseUserMetadata(
        new Headers({ "x-amz-meta-a": "v".repeat(1100), "x-amz-meta-b": "v".repeat(1000) }),
      ),
    "MetadataTooLarge",
  );
});
