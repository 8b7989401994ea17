/**
 * Admin and browse sessions for IAM users, through the real server: login-as for an IAM admin,
 * browse-only sessions for everyone else (and for open access), the per-session S3 key pair of
 * the browse panel, losing a session when the user is disabled, and POST /migrate turning the
 * bootstrap key pair into an IAM admin user.
 */
import assert from "node:assert/strict";
import {
  CreateBucketCommand,
  GetObjectCommand,
  PutObjectCommand,
  S3Client,
} from "@aws-sdk/client-s3";
import { AdminClient } from "./helpers/admin.ts";
import { type CreatedUser } from "./helpers/iam.ts";
import { ACCESS_KEY, SECRET_KEY, startSvc, type SvcProcess } from "./helpers/svc.ts";

function pairOf(user: CreatedUser) {
  return { access_key_id: user.access_key_id, secret_access_key: user.secret_access_key };
}

async function withUsers(svc: SvcProcess) {
  const admin = new AdminClient(svc.url);
  await admin.login();
  const boss = await admin.json<CreatedUser>("POST", "/users", {
    name: "boss",
    permissions: [{ effect: "Allow", actions: ["*"], resources: ["*"] }],
  }, 201);
  const viewer = await admin.json<CreatedUser>("POST", "/users", {
    name: "viewer",
    permissions: [{ effect: "Allow", actions: ["read", "list"], resources: ["*"] }],
  }, 201);
  return { admin, boss, viewer };
}

Deno.test("iam sessions: login-as gives an IAM admin an admin session; others are refused", async () => {
  await using svc = await startSvc();
  const { boss, viewer } = await withUsers(svc);

  const bossClient = new AdminClient(svc.url);
  const login = await bossClient.json<{ user: string; admin_gui: boolean }>(
    "POST",
    "/login-as",
    pairOf(boss),
  );
  assert.deepEqual([login.user, login.admin_gui], ["boss", true]);
  const users = await bossClient.json<{ users: { name: string }[] }>("GET", "/users");
  assert.deepEqual(users.users.map((u) => u.name).sort(), ["boss", "viewer"]);
  const whoami = await bossClient.json<{ user: string; mode: string }>("GET", "/_/api/whoami");
  assert.deepEqual([whoami.user, whoami.mode], ["boss", "iam"]);

  const viewerClient = new AdminClient(svc.url);
  const refused = await viewerClient.request("POST", "/login-as", pairOf(viewer));
  assert.equal(refused.status, 403);
  assert.match((await refused.json()).message, /browser-connect/);
  const wrong = await viewerClient.request("POST", "/login-as", {
    access_key_id: boss.access_key_id,
    secret_access_key: "not-the-secret",
  });
  assert.equal(wrong.status, 401);
  await wrong.body?.cancel();
  assert.equal(viewerClient.cookie, null);
});

Deno.test("iam sessions: a browse session reaches only the browse routes and keeps its own key pair", async () => {
  await using svc = await startSvc();
  const { admin, viewer } = await withUsers(svc);
  const browser = new AdminClient(svc.url);
  const connected = await browser.json<{ user: string; admin_gui: boolean }>(
    "POST",
    "/session/browser-connect",
    pairOf(viewer),
  );
  assert.deepEqual([connected.user, connected.admin_gui], ["viewer", false]);
  const session = await browser.json<{ valid: boolean; admin_gui: boolean }>("GET", "/session");
  assert.deepEqual(session, { valid: true, admin_gui: false });

  for (const [method, path] of [["GET", "/users"], ["GET", "/config"], ["GET", "/_/stats"]]) {
    const res = await browser.request(method, path);
    assert.equal(res.status, 403, `${method} ${path}`);
    await res.body?.cancel();
  }
  const stored = await browser.json("GET", "/session/s3-credentials");
  assert.deepEqual(stored, { stored: true, ...pairOf(viewer) });
  // Another user's pair is not the browse session's to hold.
  const foreign = await browser.request("PUT", "/session/s3-credentials", {
    access_key_id: ACCESS_KEY,
    secret_access_key: SECRET_KEY,
  });
  assert.equal(foreign.status, 403);
  await foreign.body?.cancel();

  // Disabling the user ends the session at its next request.
  await admin.json("PUT", `/users/${viewer.id}`, { enabled: false });
  const revoked = await browser.request("GET", "/session/s3-credentials");
  assert.equal(revoked.status, 401);
  await revoked.body?.cancel();
  const audit = await admin.json<{ entries: { event: string }[] }>("GET", "/audit?limit=20");
  assert.ok(audit.entries.some((e) => e.event === "admin_session_revoked"));
  assert.ok(audit.entries.some((e) => e.event === "browse_connected"));
});

Deno.test("iam sessions: rotating a user's keys ends its sessions, like disabling it", async () => {
  await using svc = await startSvc();
  const { admin, boss, viewer } = await withUsers(svc);
  const bossClient = new AdminClient(svc.url);
  await bossClient.json("POST", "/login-as", pairOf(boss));
  const browser = new AdminClient(svc.url);
  await browser.json("POST", "/session/browser-connect", pairOf(viewer));
  assert.equal((await bossClient.json<{ users: unknown[] }>("GET", "/users")).users.length, 2);
  assert.deepEqual(await browser.json("GET", "/session/s3-credentials"), {
    stored: true,
    ...pairOf(viewer),
  });

  for (const user of [boss, viewer]) await admin.json("POST", `/users/${user.id}/rotate-keys`);
  for (const [client, path] of [[bossClient, "/users"], [browser, "/session/s3-credentials"]]) {
    const revoked = await (client as AdminClient).request("GET", path as string);
    assert.equal(revoked.status, 401, `${path} after the rotation`);
    await revoked.body?.cancel();
  }
  const audit = await admin.json<{ entries: { event: string; fields: { user?: string } }[] }>(
    "GET",
    "/audit?limit=50",
  );
  const revokedUsers = audit.entries.filter((e) => e.event === "admin_session_revoked")
    .map((e) => e.fields.user).sort();
  assert.deepEqual(revokedUsers, ["boss", "viewer"]);
  // The bootstrap admin's own session is no IAM user's and stays.
  assert.equal((await admin.request("GET", "/users")).status, 200);
});

Deno.test("iam sessions: an admin stores a key pair for the panel; DELETE forgets it", async () => {
  await using svc = await startSvc();
  const { admin, viewer } = await withUsers(svc);
  const bad = await admin.request("PUT", "/session/s3-credentials", {
    access_key_id: viewer.access_key_id,
    secret_access_key: "wrong",
  });
  assert.equal(bad.status, 400);
  await bad.body?.cancel();
  await admin.json("PUT", "/session/s3-credentials", pairOf(viewer));
  assert.deepEqual(await admin.json("GET", "/session/s3-credentials"), {
    stored: true,
    ...pairOf(viewer),
  });
  await admin.json("DELETE", "/session/s3-credentials");
  assert.deepEqual(await admin.json("GET", "/session/s3-credentials"), { stored: false });
});

Deno.test("iam sessions: open browsing only under authentication none", async () => {
  await using closed = await startSvc();
  const refused = await new AdminClient(closed.url).request(
    "POST",
    "/session/open-browser-connect",
  );
  assert.equal(refused.status, 403);
  await refused.body?.cancel();

  await using open = await startSvc({ env: { SVC_AUTHENTICATION: "none" } });
  const browser = new AdminClient(open.url);
  const connected = await browser.json<{ user: string; admin_gui: boolean }>(
    "POST",
    "/session/open-browser-connect",
  );
  assert.deepEqual([connected.user, connected.admin_gui], ["$anonymous", false]);
  const denied = await browser.request("GET", "/users");
  assert.equal(denied.status, 403);
  await denied.body?.cancel();
});

Deno.test("iam sessions: /migrate turns the bootstrap pair into an IAM admin user", async () => {
  await using svc = await startSvc();
  const admin = new AdminClient(svc.url);
  await admin.login();
  const s3 = svc.client();
  await s3.send(new CreateBucketCommand({ Bucket: "mig" }));
  await s3.send(new PutObjectCommand({ Bucket: "mig", Key: "k", Body: "v" }));
  // Only /migrate may hand out the bootstrap key.
  const taken = await admin.request("POST", "/users", {
    name: "thief",
    access_key_id: ACCESS_KEY,
    secret_access_key: SECRET_KEY,
  });
  assert.equal(taken.status, 409);
  await taken.body?.cancel();

  const migrated = await admin.json<{ user: { name: string; access_key_id: string } }>(
    "POST",
    "/migrate",
    { name: "root" },
    201,
  );
  assert.deepEqual(migrated.user.name, "root");
  assert.equal(migrated.user.access_key_id, ACCESS_KEY);
  const again = await admin.request("POST", "/migrate", { name: "root" });
  assert.equal(again.status, 409);
  await again.body?.cancel();

  // The same pair now signs as the IAM user "root": it may log in to the console...
  const rootAdmin = new AdminClient(svc.url);
  const login = await rootAdmin.json<{ user: string }>("POST", "/login-as", {
    access_key_id: ACCESS_KEY,
    secret_access_key: SECRET_KEY,
  });
  assert.equal(login.user, "root");
  // ...and its IAM permissions govern S3: narrowed to read, a write is refused.
  const users = await admin.json<{ users: { id: string; name: string }[] }>("GET", "/users");
  const root = users.users.find((u) => u.name === "root")!;
  await admin.json("PUT", `/users/${root.id}`, {
    permissions: [{ effect: "Allow", actions: ["read", "list"], resources: ["*"] }],
  });
  const client = new S3Client({
    endpoint: svc.url,
    region: "us-east-1",
    forcePathStyle: true,
    credentials: { accessKeyId: ACCESS_KEY, secretAccessKey: SECRET_KEY },
    maxAttempts: 1,
  });
  await assert.rejects(
    client.send(new PutObjectCommand({ Bucket: "mig", Key: "k2", Body: "v" })),
    (err: Error) => err.name === "AccessDenied",
  );
  const read = await client.send(new GetObjectCommand({ Bucket: "mig", Key: "k" }));
  assert.equal(await read.Body!.transformToString(), "v");
});
