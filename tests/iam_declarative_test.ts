/**
 * Declarative IAM as an operator drives it (SPEC "Declarative IAM", "IAM mode transitions"): a
 * YAML `access` section applied through the config API becomes the users whose keys sign S3
 * requests (no restart), a bad YAML changes nothing, the preview and summary lines and the audit
 * ring tell what happened, admin IAM mutations are locked, the empty-YAML gate holds, and an
 * export applied back changes nothing.
 */
import assert from "node:assert/strict";
import {
  CreateBucketCommand,
  GetObjectCommand,
  PutObjectCommand,
  S3Client,
} from "@aws-sdk/client-s3";
import { stringify } from "yaml";
import { AdminClient } from "./helpers/admin.ts";
import { startSvc, type SvcProcess } from "./helpers/svc.ts";

const ALICE = { id: "AKIAALICEDECL0001", secret: "alice-secret-key-123" };
const BOB = { id: "AKIABOBDECL000001", secret: "bob-secret-key-12345" };

function clientAs(svc: SvcProcess, key: { id: string; secret: string }): S3Client {
  return new S3Client({
    endpoint: svc.url,
    region: "us-east-1",
    forcePathStyle: true,
    credentials: { accessKeyId: key.id, secretAccessKey: key.secret },
  });
}

/** "ok", or the S3 error code the GET was refused with. */
async function getAs(svc: SvcProcess, key: typeof ALICE, bucket: string, name: string) {
  try {
    const answer = await clientAs(svc, key).send(
      new GetObjectCommand({ Bucket: bucket, Key: name }),
    );
    await answer.Body?.transformToByteArray();
    return "ok";
  } catch (err) {
    return (err as { name?: string }).name ?? String(err);
  }
}

function accessYaml(access: Record<string, unknown>): string {
  return stringify({ access });
}

const readers = {
  name: "readers",
  description: "read the data bucket",
  permissions: [{ effect: "Allow", actions: ["read", "list"], resources: ["data"] }],
};
const alice = {
  name: "alice",
  access_key_id: ALICE.id,
  secret_access_key: ALICE.secret,
  groups: ["readers"],
};
const bob = {
  name: "bob",
  access_key_id: BOB.id,
  secret_access_key: BOB.secret,
  permissions: [{ actions: ["*"], resources: ["*"] }],
};

async function seedBuckets(svc: SvcProcess) {
  const root = svc.client();
  for (const bucket of ["data", "private"]) {
    await root.send(new CreateBucketCommand({ Bucket: bucket }));
    await root.send(new PutObjectCommand({ Bucket: bucket, Key: "a.txt", Body: `in ${bucket}` }));
  }
}

async function iamVersion(admin: AdminClient): Promise<number> {
  return (await admin.json<{ version: number }>("GET", "/iam/version")).version;
}

async function auditEvents(
  admin: AdminClient,
): Promise<{ event: string; level: string; fields: Record<string, unknown> }[]> {
  const answer = await admin.json<unknown>("GET", "/audit");
  const entries = Array.isArray(answer) ? answer : (answer as { entries: unknown[] }).entries;
  return entries as { event: string; level: string; fields: Record<string, unknown> }[];
}

Deno.test("declarative IAM: YAML users sign S3 requests live; bad YAML changes nothing; removal revokes", async () => {
  await using svc = await startSvc();
  await seedBuckets(svc);
  const admin = new AdminClient(svc.url);
  await admin.login();
  const wanted = { iam_mode: "declarative", iam_groups: [readers], iam_users: [alice, bob] };

  // Dry runs preview and write nothing.
  const dry = await admin.json<{ warnings: string[] }>("POST", "/config/validate", {
    yaml: accessYaml(wanted),
  });
  assert.ok(
    dry.warnings.includes(
      "declarative IAM preview: users(+2/~0/-0) groups(+1/~0/-0) providers(+0/~0/-0) mapping_rules=keep",
    ),
    dry.warnings.join("\n"),
  );
  const sectionDry = await admin.json<{ warnings: string[] }>(
    "POST",
    "/config/section/access/validate",
    wanted,
  );
  assert.ok(sectionDry.warnings.some((w) => w.startsWith("declarative IAM preview: users(+2/")));
  assert.equal(await iamVersion(admin), 0);
  assert.equal(await getAs(svc, ALICE, "data", "a.txt"), "InvalidAccessKeyId");

  const applied = await admin.json<{ warnings: string[] }>("POST", "/config/apply", {
    yaml: accessYaml(wanted),
  });
  assert.ok(
    applied.warnings.includes(
      "declarative IAM reconciled: 2 users (+2/~0/-0), 1 groups (+1/~0/-0), 0 providers " +
        "(+0/~0/-0), 0 mapping rules replaced",
    ),
    applied.warnings.join("\n"),
  );
  const version = await iamVersion(admin);
  assert.equal(version, 1);

  // The keys work at once, and permissions decide.
  assert.equal(await getAs(svc, ALICE, "data", "a.txt"), "ok");
  assert.equal(await getAs(svc, ALICE, "private", "a.txt"), "AccessDenied");
  assert.equal(await getAs(svc, BOB, "private", "a.txt"), "ok");

  // The audit ring shows the reconcile and the mode change (WARN).
  const events = await auditEvents(admin);
  for (const event of ["iam_reconcile_user_create", "iam_reconcile_group_create"]) {
    const entry = events.find((e) => e.event === event);
    assert.ok(entry, `${event} recorded`);
    assert.equal(entry.fields.tag, "declarative");
  }
  assert.deepEqual(
    events.filter((e) => e.event === "iam_reconcile_user_create").map((e) => e.fields.name).sort(),
    ["alice", "bob"],
  );
  assert.equal(events.find((e) => e.event === "iam_mode_changed")?.level, "warn");
  assert.ok(!JSON.stringify(events).includes(ALICE.secret), "no secret in the audit ring");

  // Admin-API IAM mutations are locked; reads stay open.
  const locked = await admin.request("POST", "/users", { name: "mallory" });
  assert.equal(locked.status, 403);
  assert.equal((await locked.json()).error, "iam_declarative");
  const listed = await admin.json<{ users: { name: string }[] }>("GET", "/users");
  assert.deepEqual(listed.users.map((u) => u.name), ["alice", "bob"]);

  // Re-applying the same YAML is a no-op: no summary line, no version bump.
  const again = await admin.json<{ warnings: string[] }>("POST", "/config/apply", {
    yaml: accessYaml(wanted),
  });
  assert.ok(!again.warnings.some((w) => w.startsWith("declarative IAM reconciled")));
  assert.equal(await iamVersion(admin), version);

  // Bad YAML: refused whole, nothing changes.
  const bad = [
    { ...wanted, iam_users: [{ ...alice, groups: ["ghosts"] }, bob] },
    { ...wanted, iam_users: [alice, { ...bob, access_key_id: ALICE.id }] },
    { ...wanted, iam_users: [alice, { ...bob, name: "$root" }] },
  ];
  for (const access of bad) {
    const refused = await admin.request("POST", "/config/apply", { yaml: accessYaml(access) });
    assert.equal(refused.status, 422);
    const problem = await refused.json();
    assert.equal(problem.error, "invalid_config");
  }
  // A check only the database can make: a YAML key that a deleted user holds.
  const stolen = await admin.request("POST", "/config/apply", {
    yaml: accessYaml({ ...wanted, iam_users: [alice, { ...bob, name: "eve" }] }),
  });
  assert.equal(stolen.status, 422);
  assert.match((await stolen.json()).message, /belongs to user "bob", which this apply deletes/);
  assert.equal(await iamVersion(admin), version);
  assert.equal(await getAs(svc, BOB, "private", "a.txt"), "ok");

  // A user removed from YAML (through a section PUT) loses access on the next request.
  const removed = await admin.json<{ warnings: string[] }>("PUT", "/config/section/access", {
    iam_users: [alice],
  });
  assert.ok(
    removed.warnings.includes(
      "declarative IAM reconciled: 1 users (+0/~0/-1), 1 groups (+0/~0/-0), 0 providers " +
        "(+0/~0/-0), 0 mapping rules replaced",
    ),
    removed.warnings.join("\n"),
  );
  assert.equal(await getAs(svc, BOB, "private", "a.txt"), "InvalidAccessKeyId");
  assert.equal(await getAs(svc, ALICE, "data", "a.txt"), "ok");
  assert.ok((await auditEvents(admin)).some((e) => e.event === "iam_reconcile_user_delete"));
});

Deno.test("declarative IAM: the empty-YAML gate, and declarative → declarative empty clears all", async () => {
  await using svc = await startSvc();
  await seedBuckets(svc);
  const admin = new AdminClient(svc.url);
  await admin.login();
  // gui → declarative with no users and no groups: refused (dry run warns), nothing changes.
  const empty = accessYaml({ iam_mode: "declarative" });
  const dry = await admin.json<{ warnings: string[] }>("POST", "/config/validate", { yaml: empty });
  assert.ok(dry.warnings.some((w) => /a live apply would be refused/.test(w)));
  const refused = await admin.request("POST", "/config/apply", { yaml: empty });
  assert.equal(refused.status, 422);
  assert.match((await refused.json()).message, /add the users and groups .* or keep iam_mode: gui/);
  const section = await admin.json<{ iam_mode: string }>("GET", "/config/section/access");
  assert.equal(section.iam_mode, "gui");

  await admin.json("POST", "/config/apply", {
    yaml: accessYaml({ iam_mode: "declarative", iam_groups: [readers], iam_users: [alice] }),
  });
  assert.equal(await getAs(svc, ALICE, "data", "a.txt"), "ok");
  const cleared = await admin.json<{ warnings: string[] }>("POST", "/config/apply", {
    yaml: empty,
  });
  assert.ok(
    cleared.warnings.some((w) => w.startsWith("declarative IAM reconciled: 0 users (+0/~0/-1)")),
  );
  assert.equal(await getAs(svc, ALICE, "data", "a.txt"), "InvalidAccessKeyId");
  assert.deepEqual((await admin.json<{ users: unknown[] }>("GET", "/users")).users, []);

  // declarative → gui: no database change, mutations unlock.
  await admin.json("POST", "/config/apply", { yaml: accessYaml({ iam_mode: "gui" }) });
  const created = await admin.request("POST", "/users", { name: "carol" });
  assert.equal(created.status, 201, await created.text());
});

Deno.test("declarative IAM: export → apply → export is identical, with and without secrets", async () => {
  await using svc = await startSvc();
  await seedBuckets(svc);
  const admin = new AdminClient(svc.url);
  await admin.login();
  // Built in gui mode through the IAM API.
  const group = await admin.json<{ id: string }>("POST", "/groups", readers, 201);
  const user = await admin.json<{ id: string; access_key_id: string; secret_access_key: string }>(
    "POST",
    "/users",
    { name: "dora", groups: ["readers"] },
    201,
  );
  assert.ok(group.id);
  const version = await iamVersion(admin);

  const exported = await (await admin.request("GET", "/config/declarative-iam-export")).text();
  assert.match(exported, /iam_mode: declarative/);
  assert.match(exported, /secret_access_key: ""/);
  assert.ok(!exported.includes(user.secret_access_key));

  const preview = await admin.json<{ warnings: string[] }>(
    "POST",
    "/config/declarative-iam-validate",
    {
      yaml: exported,
    },
  );
  assert.ok(
    preview.warnings.includes("declarative IAM preview: no IAM changes (idempotent apply)"),
  );
  const applied = await admin.json<{ warnings: string[]; persisted: boolean }>(
    "POST",
    "/config/declarative-iam-apply",
    { yaml: exported },
  );
  assert.ok(!applied.warnings.some((w) => w.startsWith("declarative IAM reconciled")));
  assert.equal(applied.persisted, true);
  assert.equal(await iamVersion(admin), version, "nothing changed");
  const section = await admin.json<{ iam_mode: string }>("GET", "/config/section/access");
  assert.equal(section.iam_mode, "declarative", "the apply switched the mode");
  assert.equal(
    await (await admin.request("GET", "/config/declarative-iam-export")).text(),
    exported,
  );
  const dora = { id: user.access_key_id, secret: user.secret_access_key };
  assert.equal(await getAs(svc, dora, "data", "a.txt"), "ok", "the stored secret was kept");

  const full =
    await (await admin.request("GET", "/config/declarative-iam-export?include_secrets=true"))
      .text();
  assert.ok(full.includes(user.secret_access_key));
  assert.match(full, /auth_source: local/);
  assert.match(full, /external_identities: \[\]/);
  const again = await admin.json<{ warnings: string[] }>("POST", "/config/declarative-iam-apply", {
    yaml: full,
  });
  assert.ok(!again.warnings.some((w) => w.startsWith("declarative IAM reconciled")));
  assert.equal(await iamVersion(admin), version);
  const fullAgain = await admin.request(
    "GET",
    "/config/declarative-iam-export?include_secrets=true",
  );
  assert.equal(await fullAgain.text(), full);
  assert.ok((await auditEvents(admin)).some((e) => e.event === "iam_declarative_export"));

  // A fragment is IAM only.
  const foreign = await admin.request("POST", "/config/declarative-iam-apply", {
    yaml: "access:\n  authentication: none\n",
  });
  assert.equal(foreign.status, 400);
});

Deno.test("declarative IAM: the config file is reconciled at startup and on SIGHUP", async () => {
  const dataDir = await Deno.makeTempDir({ prefix: "svc-declarative-boot-" });
  const configFile = `${dataDir}/svc.yaml`;
  await Deno.writeTextFile(
    configFile,
    accessYaml({ iam_mode: "declarative", iam_groups: [readers], iam_users: [alice] }),
  );
  try {
    await using svc = await startSvc({ dataDir, env: { SVC_CONFIG: configFile } });
    await seedBuckets(svc);
    assert.equal(await getAs(svc, ALICE, "data", "a.txt"), "ok", "alice exists from the start");
    assert.ok(svc.logs.some((l) => l.includes("declarative IAM reconciled: 1 users (+1/~0/-0)")));

    // An edit of the file reaches the database on SIGHUP (the same apply path).
    await Deno.writeTextFile(
      configFile,
      accessYaml({ iam_mode: "declarative", iam_groups: [readers], iam_users: [bob] }),
    );
    svc.kill("SIGHUP");
    let answer = "";
    for (let i = 0; i < 50 && answer !== "ok"; i++) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      answer = await getAs(svc, BOB, "private", "a.txt");
    }
    assert.equal(answer, "ok");
    assert.equal(await getAs(svc, ALICE, "data", "a.txt"), "InvalidAccessKeyId");
  } finally {
    await Deno.remove(dataDir, { recursive: true }).catch(() => {});
  }
});
