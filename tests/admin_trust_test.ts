/**
 * Issue 26 "Trust", as an operator or an attacker meets it over the admin API of the real server:
 * the login limiter is not reset by a valid key pair, no import path can give an IAM user the
 * bootstrap access key id, browse routes refuse `.`/`..` key segments, and a deeply nested JSON
 * body is a 400 that leaves the server up.
 */
import assert from "node:assert/strict";
import {
  CreateBucketCommand,
  GetObjectCommand,
  ListBucketsCommand,
  PutObjectCommand,
  S3Client,
} from "@aws-sdk/client-s3";
import { ADMIN_PASSWORD, AdminClient } from "./helpers/admin.ts";
import { download, upload, type User } from "./helpers/backup.ts";
import { ACCESS_KEY, bytesOf, SECRET_KEY, startSvc, type SvcProcess } from "./helpers/svc.ts";

async function loggedIn(svc: SvcProcess): Promise<AdminClient> {
  const admin = new AdminClient(svc.url);
  await admin.login();
  return admin;
}

function s3With(svc: SvcProcess, accessKeyId: string, secretAccessKey: string): S3Client {
  return new S3Client({
    endpoint: svc.url,
    region: "us-east-1",
    forcePathStyle: true,
    credentials: { accessKeyId, secretAccessKey },
  });
}

/** The bootstrap pair still signs, and `secret` (an attacker's) does not, for ACCESS_KEY. */
async function bootstrapKeyIsIntact(svc: SvcProcess, attackerSecret: string): Promise<void> {
  const listed = await s3With(svc, ACCESS_KEY, SECRET_KEY).send(new ListBucketsCommand({}));
  assert.equal(listed.$metadata.httpStatusCode, 200, "the bootstrap credentials still work");
  await assert.rejects(
    s3With(svc, ACCESS_KEY, attackerSecret).send(new ListBucketsCommand({})),
    (err: Error) => err.name === "SignatureDoesNotMatch",
    "the attacker's secret does not sign as the bootstrap key",
  );
}

async function errorOf(response: Response): Promise<{ error: string; message: string }> {
  assert.match(response.headers.get("content-type") ?? "", /application\/json/);
  return await response.json();
}

Deno.test("trust: a valid key pair between wrong passwords does not reset the login limiter", async () => {
  await using svc = await startSvc();
  const admin = await loggedIn(svc);
  const reader = await admin.json<User>("POST", "/users", {
    name: "reader",
    permissions: [{ actions: ["read", "list"], resources: ["*"] }],
  }, 201);
  const pair = { access_key_id: reader.access_key_id, secret_access_key: reader.secret_access_key };

  const guesser = new AdminClient(svc.url);
  const statuses: number[] = [];
  for (let round = 0; round < 3; round++) {
    for (let guess = 0; guess < 4; guess++) {
      const wrong = await guesser.request("POST", "/login", {
        password: `guess-${round}-${guess}`,
      });
      statuses.push(wrong.status);
      await wrong.body?.cancel();
    }
    const connect = await new AdminClient(svc.url).request(
      "POST",
      "/session/browser-connect",
      pair,
    );
    await connect.body?.cancel();
  }
  assert.equal(statuses.slice(0, 5).every((s) => s === 401), true, JSON.stringify(statuses));
  assert.equal(statuses.at(-1), 429, `the guessing ends in 429: ${JSON.stringify(statuses)}`);
  const locked = await guesser.request("POST", "/login", { password: ADMIN_PASSWORD });
  assert.equal(locked.status, 429, "even the right password waits out the lockout");
  const body = await errorOf(locked);
  assert.equal(body.error, "too_many_requests");
  const recover = await guesser.request("POST", "/recover-db", { password: "another-guess" });
  assert.equal(recover.status, 429, "/recover-db shares the limit");
  await recover.body?.cancel();
});

Deno.test("trust: a backup (zip or legacy JSON) cannot give a user the bootstrap key id", async () => {
  const attackerSecret = "attacker-secret-0000000001";
  // The zip comes from another instance whose own bootstrap key differs, so it could hold a
  // user with this instance's bootstrap key id.
  await using other = await startSvc({
    env: { SVC_ACCESS_KEY_ID: "OTHERBOOTSTRAPKEY001", SVC_SECRET_ACCESS_KEY: "other-secret-00001" },
  });
  const otherAdmin = await loggedIn(other);
  await otherAdmin.json("POST", "/users", {
    name: "intruder",
    access_key_id: ACCESS_KEY,
    secret_access_key: attackerSecret,
    permissions: [{ actions: ["*"], resources: ["*"] }],
  }, 201);
  await otherAdmin.json("POST", "/users", { name: "bystander" }, 201);
  const { zip } = await download(otherAdmin);

  await using svc = await startSvc();
  const admin = await loggedIn(svc);
  const refusedZip = await upload(admin, zip);
  assert.equal(refusedZip.status, 409);
  const zipError = await errorOf(refusedZip);
  assert.equal(zipError.error, "conflict");
  assert.match(zipError.message, /intruder/);
  assert.match(zipError.message, /bootstrap key/);

  const refusedJson = await admin.request("POST", "/backup", {
    users: [
      {
        name: "harmless",
        access_key_id: "HARMLESSKEY0001",
        secret_access_key: "harmless-secret-1",
      },
      { name: "intruder", access_key_id: ACCESS_KEY, secret_access_key: attackerSecret },
    ],
  });
  assert.equal(refusedJson.status, 409);
  const jsonError = await errorOf(refusedJson);
  assert.equal(jsonError.error, "conflict");
  assert.match(jsonError.message, /bootstrap key/);

  const { users } = await admin.json<{ users: User[] }>("GET", "/users");
  assert.deepEqual(users, [], "a refused import changes nothing");
  await bootstrapKeyIsIntact(svc, attackerSecret);
  const audit = JSON.stringify(await admin.json("GET", "/audit"));
  assert.match(audit, /backup_import_refused/);

  // The users API refuses it as before, with the same rule.
  const direct = await admin.request("POST", "/users", {
    name: "intruder",
    access_key_id: ACCESS_KEY,
    secret_access_key: attackerSecret,
  });
  assert.equal(direct.status, 409);
  assert.match((await errorOf(direct)).message, /bootstrap key/);
});

Deno.test("trust: a declarative IAM apply cannot give a user the bootstrap key id (as before)", async () => {
  const attackerSecret = "attacker-secret-0000000002";
  await using svc = await startSvc();
  const admin = await loggedIn(svc);
  const yaml = [
    "access:",
    "  iam_users:",
    "    - name: intruder",
    `      access_key_id: ${ACCESS_KEY}`,
    `      secret_access_key: ${attackerSecret}`,
    "      permissions: [{actions: ['*'], resources: ['*']}]",
  ].join("\n");
  const refused = await admin.request("POST", "/config/declarative-iam-apply", { yaml });
  assert.equal(refused.status, 422);
  const body = await errorOf(refused);
  assert.equal(body.error, "invalid_config");
  // The config validation names it first (lint shows it too); the reconcile applies the same rule.
  assert.match(body.message, /bootstrap/);
  const { users } = await admin.json<{ users: User[] }>("GET", "/users");
  assert.deepEqual(users, []);
  await bootstrapKeyIsIntact(svc, attackerSecret);
});

Deno.test("trust: browse routes refuse . and .. key segments and touch no other bucket", async () => {
  await using svc = await startSvc();
  const root = svc.client();
  for (const bucket of ["a-bucket", "b-bucket"]) {
    await root.send(new CreateBucketCommand({ Bucket: bucket }));
  }
  await root.send(new PutObjectCommand({ Bucket: "b-bucket", Key: "x", Body: "victim" }));
  const admin = await loggedIn(svc);
  const q = (bucket: string, key: string) =>
    `bucket=${encodeURIComponent(bucket)}&key=${encodeURIComponent(key)}`;
  const refusals: Array<[string, Response]> = [];
  const send = (method: string, path: string, body?: unknown) => admin.request(method, path, body);

  refusals.push([
    "upload",
    await fetch(`${admin.base}/objects/upload?${q("a-bucket", "../b-bucket/x")}`, {
      method: "PUT",
      headers: { cookie: admin.cookie!, "content-type": "text/plain" },
      body: "overwritten",
    }),
  ]);
  refusals.push([
    "upload into bucket ..",
    await fetch(`${admin.base}/objects/upload?${q("..", "b-bucket/x")}`, {
      method: "PUT",
      headers: { cookie: admin.cookie!, "content-type": "text/plain" },
      body: "overwritten",
    }),
  ]);
  refusals.push([
    "delete",
    await send("POST", "/objects/delete", { bucket: "a-bucket", keys: ["../b-bucket/x"] }),
  ]);
  refusals.push([
    "delete (the bad key after a good one)",
    await send("POST", "/objects/delete", { bucket: "b-bucket", keys: ["x", "./x"] }),
  ]);
  refusals.push([
    "download",
    await send("GET", `/objects/download?${q("a-bucket", "../b-bucket/x")}`),
  ]);
  refusals.push(["head", await send("GET", `/objects/head?${q("a-bucket", "../b-bucket/x")}`)]);
  refusals.push([
    "zip",
    await send("GET", `/objects/zip?${q("a-bucket", "../b-bucket/x")}`),
  ]);
  refusals.push([
    "storage-kinds",
    await send("POST", "/objects/storage-kinds", { bucket: "a-bucket", keys: ["../b-bucket/x"] }),
  ]);
  refusals.push([
    "copy",
    await send("POST", "/objects/copy", {
      items: [{
        source_bucket: "a-bucket",
        source_key: "../b-bucket/x",
        destination_bucket: "a-bucket",
        destination_key: "stolen",
      }],
    }),
  ]);
  refusals.push([
    "move",
    await send("POST", "/objects/move", {
      items: [{
        source_bucket: "b-bucket",
        source_key: "x",
        destination_bucket: "a-bucket",
        destination_key: "y/../../b-bucket/moved",
      }],
    }),
  ]);
  refusals.push([
    "multipart create",
    await send("POST", `/objects/multipart/create?${q("a-bucket", "a/./../../b-bucket/x")}`),
  ]);
  for (const [what, response] of refusals) {
    assert.equal(response.status, 400, `${what}: ${response.status}`);
    const body = await errorOf(response);
    assert.equal(body.error, "bad_request", what);
    assert.match(body.message, /\.\.?"? (path segment|is not a bucket name)/, what);
  }

  const kept = await root.send(new GetObjectCommand({ Bucket: "b-bucket", Key: "x" }));
  assert.equal(new TextDecoder().decode(await bytesOf(kept.Body)), "victim", "nothing written");
  const listed = await admin.json<{ objects: { key: string }[] }>(
    "GET",
    "/objects/list?bucket=a-bucket",
  );
  assert.deepEqual(listed.objects, [], "nothing copied into the first bucket");
  const audit = JSON.stringify(await admin.json("GET", "/audit"));
  assert.doesNotMatch(audit, /object_uploaded|objects_deleted|objects_copied|objects_moved/);
});

Deno.test("trust: an admin JSON body nested 150,000 deep is a 400 and the server stays up", async () => {
  await using svc = await startSvc();
  const admin = await loggedIn(svc);
  const depth = 150_000;
  const deep = `{"a":`.repeat(depth) + "1" + "}".repeat(depth);
  const deepArray = `{"permissions":` + "[".repeat(depth) + "]".repeat(depth) + "}";
  for (
    const [method, path, body] of [
      ["PUT", "/config", deep],
      ["PUT", "/config/section/access", deep],
      ["POST", "/users", deepArray],
      ["POST", "/backup", deep],
    ] as const
  ) {
    const response = await admin.request(method, path, body);
    assert.equal(response.status, 400, `${method} ${path}: ${response.status}`);
    const error = await errorOf(response);
    assert.equal(error.error, "bad_request");
    assert.match(error.message, /nests deeper than \d+ levels/);
    const next = await admin.request("GET", "/session");
    assert.equal(next.status, 200, "the server answers the next request");
    await next.body?.cancel();
  }
  // A normal body still goes through.
  await admin.json("POST", "/users", { name: "after-the-deep-ones" }, 201);
});
