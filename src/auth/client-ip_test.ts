import assert from "node:assert/strict";
import { clientIp } from "./client-ip.ts";

const headers = (init: Record<string, string>) => new Headers(init);

Deno.test("client ip: without trust the socket address is used whatever the headers say", () => {
  const sent = headers({ "x-forwarded-for": "10.0.0.1", "x-real-ip": "10.0.0.2" });
  assert.equal(clientIp(sent, "192.0.2.1", false), "192.0.2.1");
  assert.equal(clientIp(sent, undefined, false), "unknown");
});

Deno.test("client ip: with trust the rightmost X-Forwarded-For entry (the proxy's) is used", () => {
  const forged = headers({ "x-forwarded-for": "10.7.7.7, 198.51.100.4" });
  assert.equal(clientIp(forged, "192.0.2.1", true), "198.51.100.4");
  const trailing = headers({ "x-forwarded-for": "10.7.7.7, 198.51.100.4, " });
  assert.equal(clientIp(trailing, "192.0.2.1", true), "198.51.100.4");
  assert.equal(clientIp(headers({ "x-forwarded-for": " 203.0.113.9 " }), "x", true), "203.0.113.9");
  assert.equal(clientIp(headers({ "x-real-ip": "203.0.113.8" }), "x", true), "203.0.113.8");
  assert.equal(clientIp(headers({ "x-forwarded-for": " , " }), "192.0.2.1", true), "192.0.2.1");
});
