import assert from "node:assert/strict";
import { globMatcher, keyGlobMatcher } from "./glob.ts";

Deno.test("the path dialect: * stays within a folder, ** crosses folders", () => {
  const tmp = globMatcher("*.tmp");
  assert.equal(tmp("x.tmp"), true);
  assert.equal(tmp("a/x.tmp"), false);
  assert.equal(globMatcher("logs/**")("logs/a/b"), true);
  assert.equal(globMatcher("a?c")("a/c"), false);
  assert.equal(globMatcher("a.c")("abc"), false, "everything else is literal");
});

Deno.test("the key dialect (the reference's globset): * crosses folders", () => {
  const tmp = keyGlobMatcher("*.tmp");
  assert.equal(tmp("x.tmp"), true);
  assert.equal(tmp("a/b/x.tmp"), true);
  assert.equal(tmp("x.tmpl"), false);
  const deep = keyGlobMatcher("**/*.tmp");
  assert.equal(deep("x.tmp"), true, "a leading **/ may be no folder");
  assert.equal(deep("a/b/x.tmp"), true);
  assert.equal(keyGlobMatcher("firmware/**")("firmware/v1/x.bin"), true);
  assert.equal(keyGlobMatcher("firmware/**")("other/firmware/x"), false);
  assert.equal(keyGlobMatcher("a/**/b")("a/b"), true);
  assert.equal(keyGlobMatcher("a/**/b")("a/x/y/b"), true);
  assert.equal(keyGlobMatcher("a?c")("a/c"), true);
  assert.equal(keyGlobMatcher("*.{zip,jar}")("lib/app.jar"), true);
  assert.equal(keyGlobMatcher("*.{zip,jar}")("lib/app.war"), false);
  assert.equal(keyGlobMatcher("v[0-9].txt")("v7.txt"), true);
  assert.equal(keyGlobMatcher("v[!0-9].txt")("v7.txt"), false);
  assert.equal(keyGlobMatcher("a.c")("abc"), false);
  assert.equal(keyGlobMatcher("[unclosed")("[unclosed"), true);
});
