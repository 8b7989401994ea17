import assert from "node:assert/strict";
import { encodeKeyPath, encodeQuery, isAddressableKey } from "./s3-keys.ts";

Deno.test("key paths keep / and encode everything but the unreserved characters", () => {
  assert.equal(encodeKeyPath("a b/c+d"), "a%20b/c%2Bd");
  assert.equal(encodeKeyPath("100%/x?y#z"), "100%25/x%3Fy%23z");
  assert.equal(encodeKeyPath("~-._!'()*"), "~-._%21%27%28%29%2A");
  assert.equal(encodeKeyPath("ü/\u{1F680}"), "%C3%BC/%F0%9F%9A%80");
  assert.equal(encodeKeyPath("a//b/"), "a//b/");
});

Deno.test("keys a URL would rewrite or cannot carry are not addressable", () => {
  for (const key of ["a/./b", "../x", "a/..", ".", "", "nul\0", "lone\uD800"]) {
    assert.equal(isAddressableKey(key), false, JSON.stringify(key));
  }
  for (const key of ["a.b", "..a", "a/.b/c", "dir/", "x y"]) {
    assert.equal(isAddressableKey(key), true, key);
  }
});

Deno.test("query strings use %20 and keep valueless names bare", () => {
  assert.equal(
    encodeQuery({ uploads: "", prefix: "a b+c", skip: undefined, "start-after": "é" }),
    "uploads&prefix=a%20b%2Bc&start-after=%C3%A9",
  );
});
