/**
 * Black-box test of the access log (SVC_ACCESS_LOG=<file>): one JSON line per request on the S3
 * and `/_/` planes with its id, client, principal, operation, status and byte counts; no secret
 * (signature, credential, cookie, password) ever reaches the file; and a rename followed by
 * SIGHUP moves the log to a new file at the path.
 */
import assert from "node:assert/strict";
import { AwsClient } from "aws4fetch";
import { ADMIN_PASSWORD, AdminClient } from "./helpers/admin.ts";
import { ACCESS_KEY, randomBytes, SECRET_KEY, signedFetch, startSvc } from "./helpers/svc.ts";

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

type Line = Record<string, unknown>;

async function readLines(path: string): Promise<Line[]> {
  const text = await Deno.readTextFile(path).catch(() => "");
  return text.split("\n").filter((l) => l !== "").map((l) => JSON.parse(l) as Line);
}

/** Waits for the server's asynchronous flush (every 100 ms) to bring `count` lines. */
async function waitForLines(path: string, count: number): Promise<Line[]> {
  for (let i = 0; i < 100; i++) {
    const lines = await readLines(path);
    if (lines.length >= count) return lines;
    await sleep(50);
  }
  return await readLines(path);
}

function only(lines: Line[], predicate: (line: Line) => boolean, what: string): Line {
  const found = lines.filter(predicate);
  assert.equal(found.length, 1, `one line for ${what}: ${JSON.stringify(lines, null, 1)}`);
  return found[0];
}

Deno.test("access log: one line per request, no secrets, reopened on SIGHUP", async () => {
  const dir = await Deno.makeTempDir();
  const path = `${dir}/access.log`;
  await using svc = await startSvc({ env: { SVC_ACCESS_LOG: path } });
  const bucketUrl = `${svc.url}/access-bucket`;
  const body = randomBytes(5000);

  assert.equal((await signedFetch(bucketUrl, { method: "PUT" })).status, 200);
  const put = await signedFetch(`${bucketUrl}/dir/obj.bin`, { method: "PUT", body });
  await put.body?.cancel();
  assert.equal(put.status, 200);
  const putId = put.headers.get("x-amz-request-id");
  const get = await signedFetch(`${bucketUrl}/dir/obj.bin`);
  assert.equal((await get.arrayBuffer()).byteLength, body.byteLength);

  // A wrong secret: 403, and the request's signature must not be logged.
  const forger = new AwsClient({
    accessKeyId: ACCESS_KEY,
    secretAccessKey: "wrong-secret-of-the-forger",
    service: "s3",
    region: "us-east-1",
    retries: 0,
  });
  const forged = await forger.sign(`${bucketUrl}/dir/obj.bin`);
  const forgedAuth = forged.headers.get("authorization")!;
  const refused = await fetch(forged);
  await refused.body?.cancel();
  assert.equal(refused.status, 403);

  // A presigned GET: its signature and credential travel in the query.
  const presigner = new AwsClient({
    accessKeyId: ACCESS_KEY,
    secretAccessKey: SECRET_KEY,
    service: "s3",
    region: "us-east-1",
  });
  const presigned = await presigner.sign(`${bucketUrl}/dir/obj.bin?X-Amz-Expires=300`, {
    aws: { signQuery: true },
  });
  const presignedSignature = new URL(presigned.url).searchParams.get("X-Amz-Signature")!;
  assert.ok(presignedSignature.length === 64);
  const presignedGet = await fetch(presigned.url);
  assert.equal((await presignedGet.arrayBuffer()).byteLength, body.byteLength);
  assert.equal(presignedGet.status, 200);

  // The admin plane: a login (password in the body, a cookie back) and a call with the cookie.
  const admin = new AdminClient(svc.url);
  await admin.login();
  const version = await admin.request("GET", "/iam/version");
  const versionText = await version.text();
  assert.equal(version.status, 200);
  const cookieValue = admin.cookie!.split("=").slice(1).join("=");

  const lines = await waitForLines(path, 7);
  const putLine = only(lines, (l) => l.operation === "PutObject", "the PUT");
  assert.equal(putLine.request_id, putId);
  assert.equal(putLine.status, 200);
  assert.equal(putLine.bytes_in, body.byteLength);
  assert.equal(putLine.bytes_out, 0);
  assert.equal(putLine.principal, "$bootstrap");
  assert.equal(putLine.bucket, "access-bucket");
  assert.equal(putLine.key, "dir/obj.bin");
  assert.equal(putLine.client, "127.0.0.1");
  assert.equal(putLine.method, "PUT");
  assert.ok(!Number.isNaN(Date.parse(putLine.time as string)));
  assert.ok(typeof putLine.duration_ms === "number" && putLine.duration_ms >= 0);

  const gets = lines.filter((l) => l.operation === "GetObject");
  assert.equal(gets.length, 3, JSON.stringify(gets));
  const [signedGet, refusedGet, presignedLine] = gets;
  assert.equal(signedGet.status, 200);
  assert.equal(signedGet.bytes_out, body.byteLength);
  assert.equal(signedGet.bytes_in, 0);
  // The storage decision, though debug headers are off (the client never saw it).
  assert.equal(typeof signedGet.storage, "string");
  assert.equal(get.headers.get("x-amz-storage-type"), null);
  assert.equal(typeof putLine.storage, "string");
  assert.equal(refusedGet.status, 403);
  assert.equal(refusedGet.bytes_out, Number(refused.headers.get("content-length")));
  assert.equal(presignedLine.status, 200);
  assert.equal(presignedLine.bytes_out, body.byteLength);
  assert.match(presignedLine.query as string, /X-Amz-Signature=REDACTED/);
  assert.match(presignedLine.query as string, /X-Amz-Credential=REDACTED/);

  const loginLine = only(lines, (l) => l.path === "/_/api/admin/login", "the login");
  assert.equal(loginLine.status, 200);
  assert.ok((loginLine.bytes_in as number) > ADMIN_PASSWORD.length);
  assert.equal(typeof loginLine.request_id, "string");
  const versionLine = only(lines, (l) => l.path === "/_/api/admin/iam/version", "the admin call");
  assert.equal(versionLine.principal, "$bootstrap");
  assert.equal(versionLine.operation, "GET /_/api/admin/iam/version");
  assert.equal(versionLine.status, 200);
  assert.equal(versionLine.bytes_out, new TextEncoder().encode(versionText).byteLength);

  const raw = await Deno.readTextFile(path);
  const signatureOf = (auth: string) => /Signature=([0-9a-f]{64})/.exec(auth)![1];
  for (
    const secret of [
      SECRET_KEY,
      ADMIN_PASSWORD,
      cookieValue,
      presignedSignature,
      signatureOf(forgedAuth),
      "AWS4-HMAC-SHA256 Credential",
      `${ACCESS_KEY}/`, // the credential scope of a query signature
    ]
  ) {
    assert.ok(!raw.includes(secret), `the access log holds a secret: ${secret}`);
  }

  // logrotate: rename, then SIGHUP; the next lines go to a new file at the path.
  const before = lines.length;
  await Deno.rename(path, `${path}.1`);
  svc.kill("SIGHUP");
  await sleep(300);
  const health = await fetch(`${svc.url}/_/health`);
  await health.body?.cancel();
  const fresh = await waitForLines(path, 1);
  assert.equal(fresh.length, 1, JSON.stringify(fresh));
  assert.equal(fresh[0].path, "/_/health");
  assert.equal(fresh[0].status, 200);
  assert.equal((await readLines(`${path}.1`)).length, before);
  // Shutdown flushes what is queued: a request right before SIGTERM is in the file.
  const last = await fetch(`${svc.url}/_/health?last=1`);
  await last.body?.cancel();
  await svc.stop();
  const final = await readLines(path);
  assert.equal(final.length, 2, JSON.stringify(final));
  assert.equal(final[1].query, "last=1");
  await Deno.remove(dir, { recursive: true });
});
