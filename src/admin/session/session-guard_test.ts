import assert from "node:assert/strict";
import { crossSiteReason, DEFAULT_PUBLIC_ADMIN_PATHS, isPublicPath } from "./session-guard.ts";

const URL_ = "http://svc.test:9000/_/api/admin/login";

function reason(method: string, headers: Record<string, string>, trustProxy = false) {
  return crossSiteReason(method, new Headers(headers), URL_, trustProxy);
}

Deno.test("only state-changing methods are judged", () => {
  for (const method of ["GET", "HEAD", "OPTIONS"]) {
    assert.equal(reason(method, { "sec-fetch-site": "cross-site" }), null);
  }
  for (const method of ["POST", "PUT", "PATCH", "DELETE", "delete"]) {
    assert.match(reason(method, { "sec-fetch-site": "cross-site" })!, /Sec-Fetch-Site/);
  }
});

Deno.test("Sec-Fetch-Site: same-origin and none pass, anything else is refused", () => {
  assert.equal(reason("POST", { "sec-fetch-site": "same-origin" }), null);
  assert.equal(reason("POST", { "sec-fetch-site": "none" }), null);
  assert.match(reason("POST", { "sec-fetch-site": "same-site" })!, /"same-site"/);
});

Deno.test("Origin must name the request's host; default ports and case are normalised", () => {
  assert.equal(reason("POST", {}), null);
  assert.equal(reason("POST", { origin: "http://svc.test:9000" }), null);
  assert.equal(reason("POST", { origin: "https://svc.test", host: "svc.test:443" }), null);
  assert.equal(reason("POST", { origin: "http://Svc.Test", host: "svc.test:80" }), null);
  assert.match(reason("POST", { origin: "http://svc.test:9001" })!, /does not match/);
  assert.equal(reason("POST", { origin: "https://svc.test", host: "svc.test" }), null);
  assert.match(reason("POST", { origin: "http://svc.test", host: "svc.test:443" })!, /match/);
  assert.match(reason("POST", { origin: "null" })!, /not an http\(s\) origin/);
  assert.match(reason("POST", { origin: "file:///x" })!, /not an http\(s\) origin/);
  assert.match(reason("POST", { origin: "http://evil.example", host: "svc.test:9000" })!, /evil/);
});

Deno.test("X-Forwarded-Host is believed only with trust_proxy_headers", () => {
  const headers = {
    origin: "https://admin.example",
    host: "10.0.0.5:9000",
    "x-forwarded-host": "admin.example",
  };
  assert.match(reason("POST", headers)!, /does not match/);
  assert.equal(reason("POST", headers, true), null);
});

Deno.test("public paths: exact names and `/x/*` prefixes only", () => {
  const pub = (path: string) => isPublicPath(path, DEFAULT_PUBLIC_ADMIN_PATHS);
  for (
    const path of ["/login", "/session", "/recover-db", "/policies", "/oauth/callback", "/oauth"]
  ) {
    assert.equal(pub(path), true, path);
  }
  for (const path of ["/login/", "/loginx", "/session/s3-credentials", "/config", "/oauthx", "/"]) {
    assert.equal(pub(path), false, path);
  }
});
