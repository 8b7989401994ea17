import assert from "node:assert/strict";
import { SvcError } from "../../lib/errors.ts";
import { isUsableBucketName, parseKey, parseKeyOrNull } from "./fs-keys.ts";

function codeOf(key: string): string | undefined {
  try {
    parseKey(key);
    return undefined;
  } catch (err) {
    assert.ok(err instanceof SvcError, `not an SvcError: ${err}`);
    return err.code;
  }
}

Deno.test("parseKey splits keys and recognises directory markers", () => {
  assert.deepEqual(parseKey("a/b/c.txt"), {
    key: "a/b/c.txt",
    segments: ["a", "b", "c.txt"],
    marker: false,
  });
  assert.deepEqual(parseKey("a/b/"), { key: "a/b/", segments: ["a", "b"], marker: true });
  assert.deepEqual(parseKey(".hidden/..x/...").segments, [".hidden", "..x", "..."]);
  assert.deepEqual(parseKey("é/😀").segments, ["é", "😀"]);
});

Deno.test("parseKey rejects traversal, empty segments and NUL as InvalidObjectName", () => {
  for (
    const key of [
      "",
      "/",
      "/a",
      "a//b",
      "a//",
      ".",
      "..",
      "../x",
      "a/../b",
      "a/..",
      "./a",
      "a/./b",
      "a/.",
      "a/./",
      "a\0b",
      "a\uD800b",
    ]
  ) {
    assert.equal(codeOf(key), "InvalidObjectName", JSON.stringify(key));
  }
});

Deno.test("parseKey enforces 1024 key bytes and 255 segment bytes", () => {
  const segment255 = "x".repeat(255);
  assert.equal(codeOf(segment255), undefined);
  assert.equal(codeOf("x".repeat(256)), "KeyTooLongError");
  // 128 two-byte characters are 256 bytes: bytes count, not characters.
  assert.equal(codeOf("é".repeat(128)), "KeyTooLongError");
  const key1024 = [segment255, segment255, segment255, "y".repeat(200), "z".repeat(55)].join("/");
  assert.equal(new TextEncoder().encode(key1024).length, 1024);
  assert.equal(codeOf(key1024), undefined);
  assert.equal(codeOf(`${key1024}z`), "KeyTooLongError");
});

Deno.test("error messages quote the key and carry it as a detail", () => {
  try {
    parseKey("a/../b");
    assert.fail("accepted");
  } catch (err) {
    assert.ok(err instanceof SvcError);
    assert.equal(err.status, 400);
    assert.match(err.message, /^Key "a\/\.\.\/b" has a "\.\." path segment$/);
    assert.equal(err.details.Key, "a/../b");
  }
});

Deno.test("parseKeyOrNull and isUsableBucketName", () => {
  assert.equal(parseKeyOrNull("../x"), null);
  assert.equal(parseKeyOrNull("ok")?.key, "ok");
  for (const name of ["", ".svc", ".", "..", "a/b", "a\0"]) {
    assert.equal(isUsableBucketName(name), false, name);
  }
  assert.equal(isUsableBucketName("my-bucket.1"), true);
});
