import assert from "node:assert/strict";
import { AdminHttp, apiErrorLine, cookieOf } from "./http-client.ts";
import { suggestedName } from "./backup-commands.ts";

Deno.test("apiErrorLine: the API's {error, message} as one line", () => {
  assert.equal(
    apiErrorLine(404, '{"error":"not_found","message":"No user \\"x\\""}'),
    'No user "x" (HTTP 404 not_found)',
  );
  assert.equal(
    apiErrorLine(429, '{"error":"too_many_requests","message":"Slow down","retry_after_secs":30}'),
    "Slow down (HTTP 429 too_many_requests); retry in 30 s",
  );
  assert.equal(
    apiErrorLine(502, "<html>Bad gateway</html>"),
    "<html>Bad gateway</html> (HTTP 502)",
  );
  assert.equal(apiErrorLine(500, ""), "(no message) (HTTP 500)");
});

Deno.test("AdminHttp.url: the admin prefix under the server's path; absolute /_/ paths", () => {
  const http = new AdminHttp(new URL("http://h:1/svc/"));
  assert.equal(http.url("/users").href, "http://h:1/svc/_/api/admin/users");
  assert.equal(http.url("/_/api/whoami").href, "http://h:1/svc/_/api/whoami");
  assert.equal(
    http.url("/jobs", { limit: "5", bucket: undefined }).href,
    "http://h:1/svc/_/api/admin/jobs?limit=5",
  );
});

Deno.test("cookieOf keeps the name=value pairs, not cleared cookies", () => {
  const headers = new Headers();
  headers.append("set-cookie", "svc_session=abc; Path=/; HttpOnly; SameSite=Strict");
  headers.append("set-cookie", "other=; Max-Age=0");
  assert.equal(cookieOf(new Response(null, { headers })), "svc_session=abc");
});

Deno.test("suggestedName: the server's file name, kept to a plain name", () => {
  assert.equal(
    suggestedName('attachment; filename="svc-backup-20261128.zip"'),
    "svc-backup-20261128.zip",
  );
  assert.equal(suggestedName('attachment; filename="../../etc/passwd"'), "passwd");
  assert.equal(suggestedName('attachment; filename="a b.zip"'), "svc-backup.zip");
  assert.equal(suggestedName(null), "svc-backup.zip");
});
