import assert from "node:assert/strict";
import { isIpOrCidr } from "../config/schema/schema-common.ts";
import { addressMatcher, parseAddress } from "./ip-match.ts";

function inBlock(cidr: string, ip: string): boolean {
  return addressMatcher([cidr])(ip);
}

Deno.test("IPv4 and IPv6 blocks match their addresses only", () => {
  assert.equal(inBlock("10.0.0.0/8", "10.200.3.4"), true);
  assert.equal(inBlock("10.0.0.0/8", "11.0.0.1"), false);
  assert.equal(inBlock("192.168.1.0/25", "192.168.1.127"), true);
  assert.equal(inBlock("192.168.1.0/25", "192.168.1.128"), false);
  assert.equal(inBlock("203.0.113.7", "203.0.113.7"), true);
  assert.equal(inBlock("2001:db8::/32", "2001:db8:1::5"), true);
  assert.equal(inBlock("2001:db8::/32", "2001:db9::5"), false);
  assert.equal(inBlock("10.0.0.0/8", "2001:db8::1"), false);
});

Deno.test("IPv4-mapped IPv6 addresses match IPv4 blocks", () => {
  assert.equal(inBlock("10.0.0.0/8", "::ffff:10.1.2.3"), true);
  assert.equal(inBlock("::ffff:10.0.0.0/104", "10.9.9.9"), true);
});

Deno.test("malformed addresses never match; malformed blocks are refused", () => {
  for (const bad of ["10.0.0", "1:2:3", "10.0.0.256", "::1::2", "abc"]) {
    assert.equal(parseAddress(bad), null, bad);
    assert.equal(inBlock("0.0.0.0/0", bad), false, bad);
  }
  assert.equal(isIpOrCidr("10.0.0.0/33"), false);
  assert.equal(isIpOrCidr("10.0.0.0/x"), false);
  assert.throws(() => addressMatcher(["abc"]), /Not an IP address/);
});
