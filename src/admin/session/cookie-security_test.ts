import assert from "node:assert/strict";
import {
  cookieIsSecure,
  isLoopback,
  PlainLoginWarnings,
  requestIsHttps,
} from "./cookie-security.ts";

const request = (url: string, headers: Record<string, string> = {}) =>
  new Request(url, { headers });

Deno.test("requestIsHttps: the listener's own TLS, or a trusted proxy's X-Forwarded-Proto", () => {
  assert.equal(requestIsHttps(request("https://svc.example/_/api/admin/login"), false), true);
  assert.equal(requestIsHttps(request("http://svc.example/_/api/admin/login"), false), false);
  const forwarded = request("http://10.0.0.2:9000/_/api/admin/login", {
    "x-forwarded-proto": "HTTPS",
  });
  assert.equal(requestIsHttps(forwarded, true), true);
  assert.equal(requestIsHttps(forwarded, false), false, "an untrusted header proves nothing");
  const chain = request("http://10.0.0.2/", { "x-forwarded-proto": "http, https" });
  assert.equal(requestIsHttps(chain, true), false, "the client's hop is the first entry");
  assert.equal(requestIsHttps(request("http://10.0.0.2/"), true), false);
});

Deno.test("cookieIsSecure: auto follows the transport, true and false are fixed", () => {
  assert.equal(cookieIsSecure("auto", true), true);
  assert.equal(cookieIsSecure("auto", false), false);
  assert.equal(cookieIsSecure(true, false), true);
  assert.equal(cookieIsSecure(false, true), false);
});

Deno.test("isLoopback: 127/8 and ::1, also IPv4-mapped", () => {
  for (const ip of ["127.0.0.1", "127.3.4.5", "::1", "::ffff:127.0.0.1"]) {
    assert.equal(isLoopback(ip), true, ip);
  }
  for (const ip of ["10.0.0.1", "192.0.2.7", "::ffff:10.0.0.1", "2001:db8::1", "1127.0.0.1"]) {
    assert.equal(isLoopback(ip), false, ip);
  }
});

Deno.test("PlainLoginWarnings: plain HTTP from another host, once per address", () => {
  const warnings = new PlainLoginWarnings();
  assert.equal(warnings.shouldWarn("127.0.0.1", false), false, "loopback never crosses a network");
  assert.equal(warnings.shouldWarn("192.0.2.7", true), false, "TLS is fine");
  assert.equal(warnings.shouldWarn("192.0.2.7", false), true);
  assert.equal(warnings.shouldWarn("192.0.2.7", false), false, "once per address");
  assert.equal(warnings.shouldWarn("198.51.100.1", false), true, "another address warns again");
});

Deno.test("PlainLoginWarnings: its memory of addresses stays bounded", () => {
  const warnings = new PlainLoginWarnings();
  for (let i = 0; i < 1024; i++) warnings.shouldWarn(`10.0.${i >> 8}.${i & 255}`, false);
  assert.equal(warnings.shouldWarn("10.0.0.0", false), false);
  warnings.shouldWarn("10.9.9.9", false); // the 1025th address: the memory starts over
  assert.equal(warnings.shouldWarn("10.0.0.0", false), true);
});
