/**
 * Backup and restore, black-box: a populated instance is backed up over the admin API and the zip
 * is imported into a FRESH instance; the old IAM keys then sign S3 requests there (the AWS SDK),
 * with IAM authorization live. Tampered archives, re-imports, the legacy JSON form and
 * declarative mode are driven the same way.
 */
import assert from "node:assert/strict";
import { GetObjectCommand, ListObjectsV2Command, PutObjectCommand } from "@aws-sdk/client-s3";
import { strFromU8, strToU8, unzipSync } from "fflate";
import {
  BUCKET,
  createBuckets,
  download,
  groupsOf,
  loggedIn,
  OTHER_BUCKET,
  populate,
  rezip,
  s3As,
  upload,
  type User,
  usersOf,
} from "./helpers/backup.ts";
import { bytesOf, startSvc } from "./helpers/svc.ts";

Deno.test("backup of a populated instance restores users, groups, memberships and working keys into a fresh one", async () => {
  await using source = await startSvc();
  const sourceAdmin = await loggedIn(source);
  const users = await populate(sourceAdmin);
  const { response, zip } = await download(sourceAdmin);
  assert.equal(response.headers.get("content-type"), "application/zip");
  assert.match(
    response.headers.get("content-disposition") ?? "",
    /^attachment; filename="svc-backup-\d{8}T\d{6}Z\.zip"$/,
  );
  const files = unzipSync(zip);
  assert.deepEqual(Object.keys(files).sort(), [
    "config.yaml",
    "iam.json",
    "manifest.json",
    "secrets.json",
  ]);
  assert.equal(strFromU8(files["iam.json"]).includes(users.alice.secret_access_key!), false);
  const exportAudit = JSON.stringify(await sourceAdmin.json("GET", "/audit"));
  assert.match(exportAudit, /backup_exported/);
  assert.equal(exportAudit.includes(users.alice.secret_access_key!), false);

  await using target = await startSvc();
  await createBuckets(target);
  const admin = await loggedIn(target);
  const imported = await upload(admin, zip);
  assert.equal(imported.status, 200);
  const counters = await imported.json();
  assert.deepEqual(
    {
      users_created: counters.users_created,
      users_skipped: counters.users_skipped,
      groups_created: counters.groups_created,
      groups_skipped: counters.groups_skipped,
      memberships_created: counters.memberships_created,
      external_identities_created: counters.external_identities_created,
      external_identities_skipped: counters.external_identities_skipped,
    },
    {
      users_created: 3,
      users_skipped: 0,
      groups_created: 2,
      groups_skipped: 0,
      memberships_created: 2,
      external_identities_created: 0,
      external_identities_skipped: 0,
    },
  );
  assert.equal(counters.config.applied, false);
  assert.deepEqual(await usersOf(admin), await usersOf(sourceAdmin));
  assert.deepEqual(await groupsOf(admin), await groupsOf(sourceAdmin));

  // The old keys sign S3 requests on the fresh instance, and IAM decides what they may do.
  const alice = s3As(target, users.alice);
  await alice.send(new PutObjectCommand({ Bucket: BUCKET, Key: "a.txt", Body: "restored" }));
  const got = await alice.send(new GetObjectCommand({ Bucket: BUCKET, Key: "a.txt" }));
  assert.equal(new TextDecoder().decode(await bytesOf(got.Body)), "restored");
  const listed = await alice.send(new ListObjectsV2Command({ Bucket: BUCKET }));
  assert.deepEqual(listed.Contents?.map((o) => o.Key), ["a.txt"]);
  await assert.rejects(
    alice.send(new PutObjectCommand({ Bucket: OTHER_BUCKET, Key: "x", Body: "no" })),
    (err: Error) => err.name === "AccessDenied",
  );
  await assert.rejects(
    s3As(target, users.bob).send(
      new PutObjectCommand({ Bucket: BUCKET, Key: "shared/b", Body: "no" }),
    ),
    (err: Error) => err.name === "AccessDenied",
  );
  // carol was disabled at backup time and stays disabled.
  await assert.rejects(
    s3As(target, users.carol).send(new GetObjectCommand({ Bucket: BUCKET, Key: "a.txt" })),
  );

  // The same backup again: everything skipped, nothing changed, the index version unmoved.
  const versionBefore = await admin.json<{ version: number }>("GET", "/iam/version");
  const again = await (await upload(admin, zip)).json();
  assert.equal(again.users_created, 0);
  assert.equal(again.users_skipped, 3);
  assert.equal(again.groups_created, 0);
  assert.equal(again.groups_skipped, 2);
  assert.equal(again.memberships_created, 0);
  assert.deepEqual(again.skipped_users.map((s: { reason: string }) => s.reason), [
    "name_exists",
    "name_exists",
    "name_exists",
  ]);
  assert.deepEqual(await admin.json("GET", "/iam/version"), versionBefore);
  const metrics = await (await fetch(`${target.url}/_/metrics`)).text();
  assert.match(metrics, /svc_admin_requests_total\{area="backup",method="POST",status="200"\} 2/);
  const importAudit = JSON.stringify(await admin.json("GET", "/audit"));
  assert.match(importAudit, /backup_imported/);
  assert.equal(importAudit.includes(users.alice.secret_access_key!), false);
});

Deno.test("a tampered or damaged backup is refused with nothing changed", async () => {
  await using source = await startSvc();
  const sourceAdmin = await loggedIn(source);
  await populate(sourceAdmin);
  const { zip } = await download(sourceAdmin);

  await using target = await startSvc();
  const admin = await loggedIn(target);
  await admin.json("POST", "/users", { name: "resident" }, 201);
  const before = await usersOf(admin);
  const groupsBefore = await groupsOf(admin);

  const grantAll = rezip(zip, (files) => {
    const iam = JSON.parse(strFromU8(files["iam.json"]));
    iam.users[0].permissions = [{ actions: ["*"], resources: ["*"] }];
    files["iam.json"] = strToU8(JSON.stringify(iam));
  });
  const editedManifest = rezip(zip, (files) => {
    const manifest = JSON.parse(strFromU8(files["manifest.json"]));
    manifest.parts["secrets.json"].sha256 = "0".repeat(64);
    files["manifest.json"] = strToU8(JSON.stringify(manifest));
  });
  const extraPart = rezip(zip, (files) => {
    files["iam-extra.json"] = strToU8("{}");
  });
  const flipped = zip.slice();
  flipped[Math.floor(flipped.length / 2)] ^= 0xff;
  const truncated = zip.slice(0, zip.length - 30);

  for (
    const [what, body] of [
      ["a part edited", grantAll],
      ["the manifest edited", editedManifest],
      ["an unlisted part added", extraPart],
      ["a byte flipped", flipped],
      ["the end cut off", truncated],
    ] as const
  ) {
    const response = await upload(admin, body);
    const answer = await response.json();
    assert.equal(response.status, 400, `${what}: ${JSON.stringify(answer)}`);
    assert.equal(answer.error, "bad_request", what);
  }
  assert.deepEqual(await usersOf(admin), before);
  assert.deepEqual(await groupsOf(admin), groupsBefore);
  assert.match(JSON.stringify(await admin.json("GET", "/audit")), /backup_import_refused/);

  // Not a zip at all, and a body over the limit's declared length.
  const notZip = await fetch(`${admin.base}/backup`, {
    method: "POST",
    headers: { cookie: admin.cookie!, "content-type": "text/plain" },
    body: "hello",
  });
  assert.equal(notZip.status, 415);
  await notZip.body?.cancel();
  const tooLarge = await fetch(`${admin.base}/backup`, {
    method: "POST",
    headers: { cookie: admin.cookie!, "content-type": "application/zip" },
    body: new Uint8Array(17 << 20),
  });
  assert.equal(tooLarge.status, 413);
  assert.equal((await tooLarge.json()).error, "payload_too_large");
  assert.deepEqual(await usersOf(admin), before);
});

Deno.test("an encrypted backup needs its password; a wrong one changes nothing", async () => {
  await using source = await startSvc();
  const sourceAdmin = await loggedIn(source);
  const users = await populate(sourceAdmin);
  const password = { "x-svc-backup-password": "correct horse battery staple" };
  const short = await sourceAdmin.request("GET", "/backup", undefined, {
    "x-svc-backup-password": "short",
  });
  assert.equal(short.status, 400);
  await short.body?.cancel();
  const { zip } = await download(sourceAdmin, password);
  const files = unzipSync(zip);
  assert.equal(JSON.parse(strFromU8(files["manifest.json"])).encryption.algorithm, "AES-256-GCM");
  assert.equal(strFromU8(files["secrets.json"]).includes(users.alice.secret_access_key!), false);
  assert.equal(strFromU8(files["iam.json"]).includes("alice"), false);

  await using target = await startSvc();
  const admin = await loggedIn(target);
  for (
    const headers of [{}, { "x-svc-backup-password": "not the right password" }] as Record<
      string,
      string
    >[]
  ) {
    const refused = await upload(admin, zip, headers);
    assert.equal(refused.status, 400);
    await refused.body?.cancel();
  }
  assert.deepEqual(await usersOf(admin), []);
  const imported = await upload(admin, zip, password);
  assert.equal(imported.status, 200);
  assert.equal((await imported.json()).users_created, 3);
  assert.deepEqual(await usersOf(admin), await usersOf(sourceAdmin));
});

Deno.test("the legacy JSON-only form imports; a key held by another user is skipped and reported", async () => {
  await using svc = await startSvc();
  await createBuckets(svc);
  const admin = await loggedIn(svc);
  const resident = await admin.json<User>("POST", "/users", { name: "resident" }, 201);
  const legacy = {
    users: [
      {
        name: "legacy-user",
        access_key_id: "LEGACYKEY0000001",
        secret_access_key: "legacy-secret-0000000001",
        enabled: true,
      },
      {
        name: "key-thief",
        access_key_id: resident.access_key_id,
        secret_access_key: "another-secret-00000001",
      },
    ],
    groups: [{
      name: "legacy-readers",
      permissions: [{ actions: ["read", "list"], resources: [BUCKET] }],
      members: ["legacy-user"],
    }],
  };
  const answer = await admin.json<Record<string, unknown>>("POST", "/backup", legacy);
  assert.equal(answer.format, "legacy_json");
  assert.equal(answer.users_created, 1);
  assert.equal(answer.users_skipped, 1);
  assert.equal(answer.groups_created, 1);
  assert.equal(answer.memberships_created, 1);
  assert.deepEqual(answer.skipped_users, [
    { name: "key-thief", reason: "access_key_in_use", held_by: "resident" },
  ]);
  await svc.client().send(new PutObjectCommand({ Bucket: BUCKET, Key: "k", Body: "legacy" }));
  const reader = s3As(svc, {
    access_key_id: "LEGACYKEY0000001",
    secret_access_key: "legacy-secret-0000000001",
  });
  const got = await reader.send(new GetObjectCommand({ Bucket: BUCKET, Key: "k" }));
  assert.equal(new TextDecoder().decode(await bytesOf(got.Body)), "legacy");
  await assert.rejects(
    reader.send(new PutObjectCommand({ Bucket: BUCKET, Key: "k2", Body: "no" })),
    (err: Error) => err.name === "AccessDenied",
  );

  // An invalid legacy record refuses the whole body.
  const bad = await admin.request("POST", "/backup", {
    users: [
      { name: "ok-user", access_key_id: "OKKEY000001", secret_access_key: "ok-secret-0001" },
      {
        name: "$reserved",
        access_key_id: "BADKEY00001",
        secret_access_key: "bad-secret-0001",
      },
    ],
  });
  assert.equal(bad.status, 400);
  await bad.body?.cancel();
  const names = (await usersOf(admin)).map((u) => u.name);
  assert.deepEqual(names, ["legacy-user", "resident"]);
});

Deno.test("declarative IAM mode refuses an import (the YAML is authoritative)", async () => {
  const dir = await Deno.makeTempDir({ prefix: "svc-backup-decl-" });
  try {
    const config = `${dir}/svc.yaml`;
    await Deno.writeTextFile(config, "access:\n  iam_mode: declarative\n");
    await using svc = await startSvc({ args: ["--config", config] });
    const admin = await loggedIn(svc);
    const exported = await admin.request("GET", "/backup");
    assert.equal(exported.status, 200);
    const zip = new Uint8Array(await exported.arrayBuffer());
    const refused = await upload(admin, zip);
    assert.equal(refused.status, 403);
    assert.equal((await refused.json()).error, "iam_declarative");
    const legacy = await admin.request("POST", "/backup", { users: [] });
    assert.equal(legacy.status, 403);
    await legacy.body?.cancel();
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("backups need an admin session", async () => {
  await using svc = await startSvc();
  const anonymous = await fetch(`${svc.url}/_/api/admin/backup`);
  assert.equal(anonymous.status, 401);
  await anonymous.body?.cancel();
});
