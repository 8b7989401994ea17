import assert from "node:assert/strict";
import { addressMatcher, parseAddress } from "../http/ip-match.ts";
import { globMatcher } from "../lib/glob.ts";

Deno.test("globMatcher: * stays within a segment, ** crosses them, ? is one character", () => {
  assert.equal(globMatcher("logs/*.txt")("logs/a.txt"), true);
  assert.equal(globMatcher("logs/*.txt")("logs/a/b.txt"), false);
  assert.equal(globMatcher("logs/**")("logs/a/b.txt"), true);
  assert.equal(globMatcher("v?.tar")("v1.tar"), true);
  assert.equal(globMatcher("v?.tar")("v10.tar"), false);
  // Regular-expression characters are literal.
  assert.equal(globMatcher("a+(b).txt")("a+(b).txt"), true);
  assert.equal(globMatcher("a.txt")("abtxt"), false);
});

Deno.test("addressMatcher: exact addresses and CIDR blocks, IPv4 and IPv6", () => {
  const match = addressMatcher(["192.0.2.1", "10.0.0.0/8", "2001:db8::/32"]);
  assert.equal(match("192.0.2.1"), true);
  assert.equal(match("192.0.2.2"), false);
  assert.equal(match("10.200.3.4"), true);
  assert.equal(match("2001:db8:1::5"), true);
  assert.equal(match("2001:db9::5"), false);
  assert.equal(match("::ffff:10.1.2.3"), true);
  assert.equal(match("unknown"), false);
});

Deno.test("parseAddress expands IPv6 forms", () => {
  assert.deepEqual(parseAddress("::1"), { family: 6, value: 1n });
  assert.deepEqual(parseAddress("[::1]"), { family: 6, value: 1n });
  assert.equal(parseAddress("1:2:3:4:5:6:7:8:9"), null);
  assert.equal(parseAddress("1::2::3"), null);
  assert.deepEqual(parseAddress("::ffff:1.2.3.4"), { family: 4, value: 0x01020304n });
});
