/**
 * The config database on the real server: a bootstrap hash that does not open it (S3 503 until
 * recovery, the right hash restoring it later), a password change while S3 traffic runs, and no
 * secret readable in the file.
 */
import assert from "node:assert/strict";
import { CreateBucketCommand, PutObjectCommand, S3Client } from "@aws-sdk/client-s3";
import { ADMIN_PASSWORD, ADMIN_PASSWORD_HASH, AdminClient } from "./helpers/admin.ts";
import { fileContains, HASH_B } from "./helpers/config-db.ts";
import { startSvc, type SvcProcess } from "./helpers/svc.ts";

/** The plaintext of HASH_B (tests/helpers/config-db.ts). */
const PASSWORD_B = "b";

async function s3Status(svc: SvcProcess): Promise<number> {
  const response = await fetch(`${svc.url}/`, { method: "GET" });
  await response.body?.cancel();
  return response.status;
}

async function put(client: S3Client, key: string): Promise<void> {
  await client.send(new PutObjectCommand({ Bucket: "dbtest", Key: key, Body: `body of ${key}` }));
}

Deno.test("config DB: a wrong bootstrap hash at boot sets the DB aside, S3 answers 503 until recovery; the right hash restores it", async () => {
  const dataDir = await Deno.makeTempDir({ prefix: "svc-admin-db-" });
  let svc = await startSvc({ dataDir });
  try {
    const first = new AdminClient(svc.url);
    await first.login();
    const firstCookie = first.cookie;
    await svc.stop();

    // Another hash: the DB it encrypted cannot be opened, and the log says so (not "damaged").
    svc = await startSvc({ dataDir, env: { SVC_BOOTSTRAP_PASSWORD_HASH: HASH_B } });
    const said = svc.logs.join("\n");
    assert.match(said, /another hash encrypted it\)/);
    assert.doesNotMatch(said, /is damaged/);
    const s3 = await fetch(`${svc.url}/`);
    assert.equal(s3.status, 503);
    assert.match(await s3.text(), /<Code>ServiceUnavailable<\/Code>.*recover-db/s);
    const ready = await fetch(`${svc.url}/_/ready`);
    assert.equal(ready.status, 503);
    assert.match(await ready.text(), /config_db/);
    const aside = [...Deno.readDirSync(`${dataDir}/.svc`)].map((e) => e.name)
      .filter((name) => name.startsWith("config.db.mismatch-"));
    assert.equal(aside.length, 1, "the old file is kept aside, never deleted");

    const operator = new AdminClient(svc.url);
    const refused = await operator.request("POST", "/recover-db", { password: ADMIN_PASSWORD });
    assert.equal(refused.status, 401, "recovery needs the password in force");
    await refused.body?.cancel();
    await operator.json("POST", "/recover-db", { password: PASSWORD_B });
    assert.equal(await s3Status(svc), 403, "S3 serves again (an unsigned request is refused)");
    const readyAgain = await fetch(`${svc.url}/_/ready`);
    assert.equal(readyAgain.status, 200);
    const checks = (await readyAgain.json()).checks;
    assert.equal(checks.config_db.status, "ok");
    assert.ok(checks.config_db.schema_version >= 1, "the schema version is readable");
    await svc.stop();

    // The original hash again: its database comes back, with the session made under it.
    svc = await startSvc({ dataDir, env: { SVC_BOOTSTRAP_PASSWORD_HASH: ADMIN_PASSWORD_HASH } });
    assert.equal(await s3Status(svc), 403);
    const back = new AdminClient(svc.url);
    back.cookie = firstCookie;
    assert.deepEqual(await back.json("GET", "/session"), { valid: true, admin_gui: true });
  } finally {
    await svc.stop();
  }
});

Deno.test("config DB: a damaged file is called damaged, with what recover-db keeps and loses", async () => {
  const dataDir = await Deno.makeTempDir({ prefix: "svc-admin-db-" });
  let svc = await startSvc({ dataDir });
  try {
    await new AdminClient(svc.url).login();
    await svc.stop();
    // The right hash, a file overwritten with garbage.
    await Deno.writeFile(`${dataDir}/.svc/config.db`, crypto.getRandomValues(new Uint8Array(8192)));
    svc = await startSvc({ dataDir });
    const said = svc.logs.join("\n");
    assert.match(said, /the config database is damaged/);
    assert.match(said, /keeps the config file, the objects and the moved-aside file/);
    assert.match(said, /loses IAM users, groups and keys/);
    assert.equal(await s3Status(svc), 503);
  } finally {
    await svc.stop();
    await Deno.remove(dataDir, { recursive: true }).catch(() => {});
  }
});

Deno.test("config DB: a temp file a crash left mid password change is removed at boot", async () => {
  const dataDir = await Deno.makeTempDir({ prefix: "svc-admin-db-" });
  await Deno.mkdir(`${dataDir}/.svc`, { recursive: true });
  const leftover = `${dataDir}/.svc/bootstrap-password.bcrypt.tmp-0123456789ab`;
  await Deno.writeTextFile(leftover, "$2b$12$an.uncommitted.hash\n");
  const svc = await startSvc({ dataDir });
  try {
    await assert.rejects(Deno.stat(leftover), Deno.errors.NotFound);
    assert.match(svc.logs.join("\n"), /removed files an interrupted write left behind/);
  } finally {
    await svc.stop();
    await Deno.remove(dataDir, { recursive: true }).catch(() => {});
  }
});

Deno.test("config DB: a password change re-encrypts while S3 requests run; no secret is readable in the file", async () => {
  const dataDir = await Deno.makeTempDir({ prefix: "svc-admin-db-" });
  // No hash given: svc generates a password, prints it once, and keeps only the hash.
  let svc = await startSvc({ dataDir, unsetEnv: ["SVC_BOOTSTRAP_PASSWORD_HASH"] });
  try {
    const banner = svc.logs.findIndex((line) => /shown this ONCE/.test(line));
    assert.ok(banner >= 0, "the generated password is announced");
    const generated = svc.logs.slice(banner).find((line) => /^ {4}\S+$/.test(line))!.trim();
    const admin = new AdminClient(svc.url);
    await admin.login(generated);
    const client = svc.client();
    await client.send(new CreateBucketCommand({ Bucket: "dbtest" }));

    let running = true;
    let writes = 0;
    const traffic = (async () => {
      while (running) await put(client, `k${writes++}`);
    })();
    const newPassword = "a-new-admin-password-42";
    await new Promise((resolve) => setTimeout(resolve, 100));
    const oldCookie = admin.cookie;
    await admin.json("PUT", "/password", {
      current_password: generated,
      new_password: newPassword,
    });
    await new Promise((resolve) => setTimeout(resolve, 100));
    running = false;
    await traffic;
    assert.ok(writes > 2, "S3 writes went on during the change");

    assert.deepEqual(await admin.json("GET", "/session"), { valid: true, admin_gui: true });
    const old = await fetch(`${svc.url}/_/api/admin/config`, { headers: { cookie: oldCookie! } });
    assert.equal(old.status, 401, "cookies of the old key are dead");
    await old.body?.cancel();
    const stale = await new AdminClient(svc.url).request("POST", "/login", {
      password: generated,
    });
    assert.equal(stale.status, 401);
    await stale.body?.cancel();

    const dbFile = `${dataDir}/.svc/config.db`;
    const token = admin.cookie!.split("=")[1];
    for (const secret of [generated, newPassword, token, "$bootstrap"]) {
      assert.ok(!await fileContains(dbFile, secret), `"${secret}" is not readable in the file`);
    }
    await svc.stop();

    svc = await startSvc({ dataDir, unsetEnv: ["SVC_BOOTSTRAP_PASSWORD_HASH"] });
    assert.ok(!svc.logs.some((line) => /shown this ONCE/.test(line)), "no new password");
    await new AdminClient(svc.url).login(newPassword);
  } finally {
    await svc.stop();
  }
});
