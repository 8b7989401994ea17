/**
 * The browse panel's helpers through the real server: listing, copy, move (a failed copy deletes
 * nothing), bulk delete and a streamed ZIP, each acting as the session's user — an admin sees
 * everything, a browse-only IAM user exactly what its permissions allow.
 */
import assert from "node:assert/strict";
import { CreateBucketCommand, GetObjectCommand, PutObjectCommand } from "@aws-sdk/client-s3";
import { unzipSync } from "fflate";
import { AdminClient } from "./helpers/admin.ts";
import { startSvc } from "./helpers/svc.ts";

interface ItemResult {
  ok: boolean;
  error?: string;
}

async function populated() {
  const svc = await startSvc();
  const s3 = svc.client();
  for (const bucket of ["photos", "archive"]) {
    await s3.send(new CreateBucketCommand({ Bucket: bucket }));
  }
  const keys = ["2024/a.txt", "2024/b.txt", "2024/c.txt", "2025/d.txt", "top.txt", "odd ../e.txt"];
  for (const key of keys) {
    await s3.send(new PutObjectCommand({ Bucket: "photos", Key: key, Body: `body of ${key}` }));
  }
  const admin = new AdminClient(svc.url);
  await admin.login();
  return { svc, s3, admin };
}

Deno.test("admin objects: list buckets, a page with folders, continuation", async () => {
  const { svc, admin } = await populated();
  await using _svc = svc;
  const buckets = await admin.json<{ buckets: { name: string }[] }>("GET", "/objects/list");
  assert.deepEqual(buckets.buckets.map((b) => b.name), ["archive", "photos"]);

  const top = await admin.json<{ objects: { key: string; size: number }[]; prefixes: string[] }>(
    "GET",
    "/objects/list?bucket=photos&delimiter=/",
  );
  assert.deepEqual(top.prefixes, ["2024/", "2025/", "odd ../"]);
  assert.deepEqual(top.objects.map((o) => [o.key, o.size]), [["top.txt", 15]]);

  const first = await admin.json<{ objects: { key: string }[]; next_continuation_token: string }>(
    "GET",
    "/objects/list?bucket=photos&prefix=2024/&max_keys=2",
  );
  assert.deepEqual(first.objects.map((o) => o.key), ["2024/a.txt", "2024/b.txt"]);
  const rest = await admin.json<{ objects: { key: string }[]; truncated: boolean }>(
    "GET",
    `/objects/list?bucket=photos&prefix=2024/&continuation_token=${
      encodeURIComponent(first.next_continuation_token)
    }`,
  );
  assert.deepEqual(rest.objects.map((o) => o.key), ["2024/c.txt"]);
  assert.equal(rest.truncated, false);

  const missing = await admin.request("GET", "/objects/list?bucket=nope");
  assert.equal(missing.status, 404);
  assert.equal((await missing.json()).s3_code, "NoSuchBucket");
});

Deno.test("admin objects: copy, move (a failed copy keeps its source), bulk delete", async () => {
  const { svc, s3, admin } = await populated();
  await using _svc = svc;
  const copied = await admin.json<{ results: ItemResult[]; succeeded: number }>(
    "POST",
    "/objects/copy",
    {
      items: [{
        source_bucket: "photos",
        source_key: "top.txt",
        destination_bucket: "archive",
        destination_key: "copied/top.txt",
      }],
    },
  );
  assert.equal(copied.succeeded, 1);
  const read = await s3.send(new GetObjectCommand({ Bucket: "archive", Key: "copied/top.txt" }));
  assert.equal(await read.Body!.transformToString(), "body of top.txt");

  const moved = await admin.json<{ results: ItemResult[]; succeeded: number; failed: number }>(
    "POST",
    "/objects/move",
    {
      items: ["a", "b", "c"].map((name) => ({
        source_bucket: "photos",
        source_key: `2024/${name}.txt`,
        destination_bucket: name === "c" ? "no-such-bucket" : "archive",
        destination_key: `2024/${name}.txt`,
      })),
    },
  );
  assert.deepEqual(moved.results.map((r) => [r.ok, r.error]), [
    [true, undefined],
    [true, undefined],
    [false, "NoSuchBucket"],
  ]);
  const list = await admin.json<{ objects: { key: string }[] }>(
    "GET",
    "/objects/list?bucket=photos&prefix=2024/",
  );
  assert.deepEqual(list.objects.map((o) => o.key), ["2024/c.txt"], "the failed copy kept c");

  const deleted = await admin.json<{ succeeded: number }>("POST", "/objects/delete", {
    bucket: "archive",
    keys: ["2024/a.txt", "2024/b.txt"],
  });
  assert.equal(deleted.succeeded, 2);
  const left = await admin.json<{ objects: { key: string }[] }>(
    "GET",
    "/objects/list?bucket=archive",
  );
  assert.deepEqual(left.objects.map((o) => o.key), ["copied/top.txt"]);
  const bad = await admin.request("POST", "/objects/delete", { bucket: "archive", keys: [] });
  assert.equal(bad.status, 400);
  await bad.body?.cancel();
  const audit = await admin.json<{ entries: { event: string }[] }>("GET", "/audit?limit=20");
  for (const event of ["objects_copied", "objects_moved", "objects_deleted"]) {
    assert.ok(audit.entries.some((e) => e.event === event), event);
  }
});

Deno.test("admin objects: a ZIP of a prefix and of named keys streams their bytes", async () => {
  const { svc, admin } = await populated();
  await using _svc = svc;
  const response = await admin.request("GET", "/objects/zip?bucket=photos&prefix=2024/");
  assert.equal(response.status, 200);
  assert.equal(response.headers.get("content-type"), "application/zip");
  const files = unzipSync(new Uint8Array(await response.arrayBuffer()));
  assert.deepEqual(
    Object.fromEntries(
      Object.entries(files).map(([name, bytes]) => [
        name,
        new TextDecoder().decode(bytes),
      ]),
    ),
    {
      "a.txt": "body of 2024/a.txt",
      "b.txt": "body of 2024/b.txt",
      "c.txt": "body of 2024/c.txt",
    },
  );
  const named = await admin.request(
    "GET",
    `/objects/zip?bucket=photos&key=2025/d.txt&key=${encodeURIComponent("odd ../e.txt")}`,
  );
  const entries = Object.keys(unzipSync(new Uint8Array(await named.arrayBuffer()))).sort();
  // Named keys keep the path below the folder they share (here none).
  assert.deepEqual(entries, ["2025/d.txt", "odd ../e.txt"]);
  const gone = await admin.request("GET", "/objects/zip?bucket=photos&key=nope.txt");
  assert.equal(gone.status, 404);
  await gone.body?.cancel();
});

Deno.test("admin objects: a browse-only IAM user sees and changes only what it may", async () => {
  const { svc, admin } = await populated();
  await using _svc = svc;
  const user = await admin.json<{ access_key_id: string; secret_access_key: string }>(
    "POST",
    "/users",
    {
      name: "curator",
      permissions: [{
        effect: "Allow",
        actions: ["read", "list", "write", "delete"],
        resources: ["photos/2025/*"],
      }],
    },
    201,
  );
  const browser = new AdminClient(svc.url);
  await browser.json("POST", "/session/browser-connect", user);
  const buckets = await browser.json<{ buckets: { name: string }[] }>("GET", "/objects/list");
  assert.deepEqual(buckets.buckets.map((b) => b.name), ["photos"]);
  const all = await browser.json<{ objects: { key: string }[] }>(
    "GET",
    "/objects/list?bucket=photos",
  );
  assert.deepEqual(all.objects.map((o) => o.key), ["2025/d.txt"]);
  const del = await browser.json<{ results: ItemResult[] }>("POST", "/objects/delete", {
    bucket: "photos",
    keys: ["2025/d.txt", "top.txt"],
  });
  assert.deepEqual(del.results.map((r) => [r.ok, r.error]), [
    [true, undefined],
    [false, "AccessDenied"],
  ]);
  const zip = await browser.request("GET", "/objects/zip?bucket=photos&prefix=2024/");
  assert.equal(zip.status, 403);
  await zip.body?.cancel();
});
