/**
 * Black-box tests of `advanced.cors_permissive` (dev only): preflights answered without
 * credentials, S3 answers carrying the caller's origin and exposing ETag, the admin surface never
 * opened to other origins, and nothing of it without the setting. Signatures are still required.
 */
import assert from "node:assert/strict";
import { signedFetch, startSvc } from "./helpers/svc.ts";

const ORIGIN = "http://localhost:5173";

function preflight(url: string): Promise<Response> {
  return fetch(url, {
    method: "OPTIONS",
    headers: {
      origin: ORIGIN,
      "access-control-request-method": "PUT",
      "access-control-request-headers": "authorization,x-amz-date,x-amz-content-sha256",
    },
  });
}

Deno.test("cors_permissive: preflights pass, S3 answers name the origin, signatures still count", async () => {
  await using svc = await startSvc({ env: { SVC_CORS_PERMISSIVE: "true" } });
  assert.ok(svc.logs.some((l) => l.includes("cors_permissive is on")), "the start warns");
  const asked = await preflight(`${svc.url}/web/app.js`);
  await asked.body?.cancel();
  assert.equal(asked.status, 200);
  assert.equal(asked.headers.get("access-control-allow-origin"), ORIGIN);
  assert.match(asked.headers.get("access-control-allow-methods") ?? "", /PUT/);
  assert.match(asked.headers.get("access-control-allow-headers") ?? "", /x-amz-date/);

  const headers = { origin: ORIGIN };
  assert.equal((await signedFetch(`${svc.url}/web`, { method: "PUT", headers })).status, 200);
  const put = await signedFetch(`${svc.url}/web/app.js`, { method: "PUT", body: "x", headers });
  assert.equal(put.status, 200);
  assert.equal(put.headers.get("access-control-allow-origin"), ORIGIN);
  assert.match(put.headers.get("access-control-expose-headers") ?? "", /\betag\b/);
  assert.match(put.headers.get("vary") ?? "", /Origin/);

  // Unsigned: still refused, now readable by the page.
  const anonymous = await fetch(`${svc.url}/web/app.js`, { headers });
  await anonymous.body?.cancel();
  assert.equal(anonymous.status, 403);
  assert.equal(anonymous.headers.get("access-control-allow-origin"), ORIGIN);

  // The admin surface stays same-origin.
  const health = await fetch(`${svc.url}/_/health`, { headers });
  await health.body?.cancel();
  assert.equal(health.headers.get("access-control-allow-origin"), null);
});

Deno.test("without cors_permissive no CORS header is sent", async () => {
  await using svc = await startSvc();
  const asked = await preflight(`${svc.url}/web/app.js`);
  await asked.body?.cancel();
  assert.equal(asked.headers.get("access-control-allow-origin"), null);
  const put = await signedFetch(`${svc.url}/web`, { method: "PUT", headers: { origin: ORIGIN } });
  await put.body?.cancel();
  assert.equal(put.headers.get("access-control-allow-origin"), null);
});
