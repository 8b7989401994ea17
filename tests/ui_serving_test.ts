/**
 * The embedded UI over HTTP from a real svc: index.html no-cache with a strict CSP, hashed assets
 * cached for a year, deep links to pages, and every operator route under `/_/` untouched
 * (`/_/x` stays a JSON 404). Then the browse session's object I/O routes, driven like the UI
 * drives them: upload (single and multipart), head with storage kind, download, buckets, and a
 * read-only IAM user refused a write in the admin error shape.
 */
import assert from "node:assert/strict";
import { AdminClient } from "./helpers/admin.ts";
import { startSvc } from "./helpers/svc.ts";

Deno.test("ui serving: index, assets, pages and the operator routes beside them", async () => {
  await using svc = await startSvc();
  const index = await fetch(`${svc.url}/_/`);
  assert.equal(index.status, 200);
  assert.match(index.headers.get("content-type") ?? "", /text\/html/);
  assert.equal(index.headers.get("cache-control"), "no-cache");
  const csp = index.headers.get("content-security-policy") ?? "";
  assert.match(csp, /script-src 'self'(;|$)/);
  assert.match(csp, /default-src 'none'/);
  assert.match(csp, /frame-ancestors 'none'/);
  assert.ok(!csp.includes("unsafe-inline") && !csp.includes("unsafe-eval"), csp);
  const html = await index.text();
  assert.ok(!/<script>|<style>|\son[a-z]+=/.test(html), "no inline script or style in index.html");
  const assets = [...html.matchAll(/\/_\/assets\/(app-[0-9a-f]{12}\.(js|css))/g)].map((m) => m[1]);
  assert.equal(assets.length, 2, html);
  for (const name of assets) {
    const asset = await fetch(`${svc.url}/_/assets/${name}`);
    assert.equal(asset.status, 200);
    assert.equal(asset.headers.get("cache-control"), "public, max-age=31536000, immutable");
    assert.match(
      asset.headers.get("content-type") ?? "",
      name.endsWith(".js") ? /javascript/ : /css/,
    );
    assert.ok((await asset.arrayBuffer()).byteLength > 1000);
  }
  const missing = await fetch(`${svc.url}/_/assets/app-000000000000.js`);
  assert.equal(missing.status, 404);
  await missing.body?.cancel();
  for (const path of ["/_/browse", "/_/browse/some-bucket/a/b/", "/_/config", "/_/login"]) {
    const page = await fetch(`${svc.url}${path}`);
    assert.equal(page.status, 200, path);
    assert.equal(await page.text(), html, path);
  }
  // The operator routes keep their own answers.
  const health = await fetch(`${svc.url}/_/health`);
  assert.deepEqual(await health.json(), { status: "ok" });
  const whoami = await fetch(`${svc.url}/_/api/whoami`);
  assert.match(whoami.headers.get("content-type") ?? "", /json/);
  await whoami.body?.cancel();
  const metrics = await fetch(`${svc.url}/_/metrics`);
  assert.match(await metrics.text(), /svc_http_requests_total/);
  for (const path of ["/_/x", "/_/api/admin/nope", "/_/browsex"]) {
    const unknown = await fetch(`${svc.url}${path}`);
    assert.equal(unknown.status, path.startsWith("/_/api/admin") ? 401 : 404, path);
    assert.match(unknown.headers.get("content-type") ?? "", /json/, path);
    await unknown.body?.cancel();
  }
});

Deno.test("ui object I/O: upload, multipart, head, download, buckets, as the session's user", async () => {
  await using svc = await startSvc();
  const admin = new AdminClient(svc.url);
  await admin.login();
  const created = await admin.request("POST", "/objects/buckets", { bucket: "io-bucket" });
  assert.equal(created.status, 201, await created.text());

  const text = "plain text body\n";
  const put = await admin.request("PUT", "/objects/upload?bucket=io-bucket&key=dir/a.txt", text, {
    "content-type": "text/plain",
  });
  assert.equal(put.status, 200, await put.text());

  const head = await admin.json<Record<string, unknown>>(
    "GET",
    "/objects/head?bucket=io-bucket&key=dir/a.txt",
  );
  assert.equal(head.size, text.length);
  assert.equal(head.content_type, "text/plain");
  assert.match(String(head.storage_kind), /^(passthrough|delta|reference)$/);
  const kinds = await admin.json<{ kinds: Record<string, string | null> }>(
    "POST",
    "/objects/storage-kinds",
    { bucket: "io-bucket", keys: ["dir/a.txt", "dir/none.txt"] },
  );
  assert.equal(kinds.kinds["dir/a.txt"], head.storage_kind);
  assert.equal(kinds.kinds["dir/none.txt"], null);

  const download = await admin.request("GET", "/objects/download?bucket=io-bucket&key=dir/a.txt");
  assert.equal(download.status, 200);
  assert.match(download.headers.get("content-disposition") ?? "", /^attachment; filename="a\.txt"/);
  assert.match(download.headers.get("content-security-policy") ?? "", /sandbox/);
  assert.equal(download.headers.get("x-content-type-options"), "nosniff");
  assert.equal(await download.text(), text);

  // Multipart: two parts (5 MiB minimum for all but the last), completed, read back whole.
  const started = await admin.json<{ upload_id: string }>(
    "POST",
    "/objects/multipart/create?bucket=io-bucket&key=big.bin&content_type=application/octet-stream",
  );
  const part1 = new Uint8Array(5 * 1024 * 1024).fill(7);
  const part2 = new Uint8Array(1234).fill(9);
  const etags: string[] = [];
  for (const [i, body] of [part1, part2].entries()) {
    // Raw bytes (AdminClient sends JSON): the body goes up as the browser's XHR sends it.
    const response = await fetch(
      `${admin.base}/objects/multipart/part?bucket=io-bucket&key=big.bin&upload_id=${
        encodeURIComponent(started.upload_id)
      }&part_number=${i + 1}`,
      {
        method: "PUT",
        body,
        headers: { cookie: admin.cookie!, "content-type": "application/octet-stream" },
      },
    );
    assert.equal(response.status, 200);
    etags.push(((await response.json()) as { etag: string }).etag);
  }
  const done = await admin.request(
    "POST",
    `/objects/multipart/complete?bucket=io-bucket&key=big.bin&upload_id=${
      encodeURIComponent(started.upload_id)
    }`,
    { parts: etags.map((etag, i) => ({ part_number: i + 1, etag })) },
  );
  assert.equal(done.status, 200, await done.text());
  const whole = await admin.request("GET", "/objects/download?bucket=io-bucket&key=big.bin");
  assert.equal((await whole.arrayBuffer()).byteLength, part1.length + part2.length);

  // Abort leaves nothing; a bad part number is a clear 400.
  const aborted = await admin.json<{ upload_id: string }>(
    "POST",
    "/objects/multipart/create?bucket=io-bucket&key=gone.bin",
  );
  const badPart = await admin.request(
    "PUT",
    `/objects/multipart/part?bucket=io-bucket&key=gone.bin&upload_id=x&part_number=0`,
    "x",
  );
  assert.equal(badPart.status, 400);
  assert.match(((await badPart.json()) as { message: string }).message, /part_number/);
  const abort = await admin.request(
    "POST",
    `/objects/multipart/abort?bucket=io-bucket&key=gone.bin&upload_id=${
      encodeURIComponent(aborted.upload_id)
    }`,
  );
  assert.equal(abort.status, 200, await abort.text());

  // A missing object is the admin error shape, not a raw S3 document.
  const missing = await admin.request("GET", "/objects/head?bucket=io-bucket&key=nope");
  assert.equal(missing.status, 404);
  assert.equal(((await missing.json()) as { error: string }).error, "not_found");

  // Deleting a non-empty bucket is refused in words; emptied, it goes.
  const full = await admin.request("DELETE", "/objects/buckets/io-bucket");
  assert.equal(full.status, 409);
  assert.match(((await full.json()) as { message: string }).message, /not empty/i);
  await admin.json("POST", "/objects/delete", {
    bucket: "io-bucket",
    keys: ["dir/a.txt", "big.bin"],
  });
  const removed = await admin.request("DELETE", "/objects/buckets/io-bucket");
  assert.equal(removed.status, 200, await removed.text());

  // Audited: uploads and bucket changes name who did them.
  const audit = await admin.json<{ entries: { event: string; user?: string }[] }>(
    "GET",
    "/audit?limit=50",
  );
  const events = audit.entries.map((e) => e.event);
  for (const event of ["bucket_created", "object_uploaded", "bucket_deleted"]) {
    assert.ok(events.includes(event), `${event} in ${events.join(",")}`);
  }
});

Deno.test("ui object I/O: a read-only browse session may read but not write", async () => {
  await using svc = await startSvc();
  const admin = new AdminClient(svc.url);
  await admin.login();
  await admin.request("POST", "/objects/buckets", { bucket: "ro-bucket" });
  await admin.request("PUT", "/objects/upload?bucket=ro-bucket&key=k.txt", "data", {
    "content-type": "text/plain",
  });
  const user = await admin.json<{ access_key_id: string; secret_access_key: string }>(
    "POST",
    "/users",
    {
      name: "ro",
      permissions: [{ effect: "Allow", actions: ["read", "list"], resources: ["ro-bucket"] }],
    },
    201,
  );
  const reader = new AdminClient(svc.url);
  const connect = await reader.request("POST", "/session/browser-connect", {
    access_key_id: user.access_key_id,
    secret_access_key: user.secret_access_key,
  });
  assert.equal(connect.status, 200, await connect.text());
  const head = await reader.request("GET", "/objects/head?bucket=ro-bucket&key=k.txt");
  assert.equal(head.status, 200);
  await head.body?.cancel();
  const write = await reader.request("PUT", "/objects/upload?bucket=ro-bucket&key=w.txt", "x", {
    "content-type": "text/plain",
  });
  assert.equal(write.status, 403);
  assert.equal(((await write.json()) as { error: string }).error, "forbidden");
  const bucket = await reader.request("POST", "/objects/buckets", { bucket: "ro-made" });
  assert.equal(bucket.status, 403);
  await bucket.body?.cancel();
});
