/**
 * The operator's read side and storage management on the real server: the audit ring, the log
 * ring and its live SSE tail, `/_/stats`, and adding, using and removing a named S3 backend
 * (a second svc) through the admin API.
 */
import assert from "node:assert/strict";
import { CreateBucketCommand, GetObjectCommand, PutObjectCommand } from "@aws-sdk/client-s3";
import { parse } from "yaml";
import { AdminClient } from "./helpers/admin.ts";
import { ACCESS_KEY, SECRET_KEY, startSvc } from "./helpers/svc.ts";

Deno.test("admin ops: audit and logs; the SSE tail receives a new log line within a second", async () => {
  await using svc = await startSvc();
  const admin = new AdminClient(svc.url);
  await admin.login();
  const audit = await admin.json<{ entries: { event: string; fields: Record<string, unknown> }[] }>(
    "GET",
    "/audit?limit=10",
  );
  const login = audit.entries.find((entry) => entry.event === "admin_login");
  assert.ok(login, "the login is audited");
  assert.equal(login.fields.user, "$bootstrap");

  const logs = await admin.json<{ entries: { message: string }[] }>("GET", "/logs?limit=50");
  assert.ok(logs.entries.some((entry) => /listening on/.test(entry.message)));
  const bad = await admin.request("GET", "/logs?level=loud");
  assert.equal(bad.status, 400);
  await bad.body?.cancel();

  const controller = new AbortController();
  const stream = await fetch(`${svc.url}/_/api/admin/logs/stream?q=config%20applied`, {
    headers: { cookie: admin.cookie! },
    signal: controller.signal,
  });
  assert.equal(stream.status, 200);
  assert.match(stream.headers.get("content-type") ?? "", /text\/event-stream/);
  const reader = stream.body!.pipeThrough(new TextDecoderStream()).getReader();
  const started = Date.now();
  // An apply logs "config applied": the tail must carry it.
  // Without a config file the apply persists to ./svc.yaml (the server runs in its data dir).
  const applied = await admin.json("POST", "/config/apply", {
    yaml: "advanced:\n  max_delta_ratio: 0.4\n",
  });
  assert.equal(applied.persisted_path, "./svc.yaml");
  let received = "";
  while (!/config applied/.test(received)) {
    const { value, done } = await reader.read();
    if (done) break;
    received += value;
  }
  assert.match(received, /config applied/);
  assert.ok(Date.now() - started < 1000, `received in ${Date.now() - started} ms`);
  controller.abort();
  await reader.cancel().catch(() => {});
});

Deno.test("admin ops: /_/stats needs a session and counts what S3 clients stored", async () => {
  await using svc = await startSvc();
  const anonymous = await fetch(`${svc.url}/_/stats`);
  assert.equal(anonymous.status, 401);
  await anonymous.body?.cancel();
  const client = svc.client();
  await client.send(new CreateBucketCommand({ Bucket: "stats" }));
  await client.send(new PutObjectCommand({ Bucket: "stats", Key: "a", Body: "12345" }));
  await client.send(new PutObjectCommand({ Bucket: "stats", Key: "b", Body: "123" }));
  const admin = new AdminClient(svc.url);
  await admin.login();
  const stats = await admin.json("GET", "/_/stats?bucket=stats");
  assert.equal(stats.total_objects, 2);
  assert.equal(stats.total_original_size, 8);
  const all = await admin.json("GET", "/_/stats");
  assert.equal(all.total_objects, 2);
  const missing = await admin.request("GET", "/_/stats?bucket=nope");
  assert.equal(missing.status, 404);
  await missing.body?.cancel();
});

Deno.test("admin ops: a named S3 backend is probed, added, used for a bucket, and protected from removal", async () => {
  await using remote = await startSvc({ backing: true });
  const dataDir = await Deno.makeTempDir({ prefix: "svc-admin-ops-" });
  const configFile = `${dataDir}/svc.yaml`;
  await Deno.writeTextFile(
    configFile,
    `storage:\n  backends:\n    - name: local\n      type: filesystem\n      path: ${dataDir}/local\n`,
  );
  await using svc = await startSvc({
    dataDir,
    dataDirFromConfig: true,
    env: { SVC_CONFIG: configFile },
  });
  const admin = new AdminClient(svc.url);
  await admin.login();
  const spec = {
    name: "remote",
    type: "s3",
    endpoint: remote.url,
    access_key_id: ACCESS_KEY,
    secret_access_key: "wrong-secret-for-the-probe",
  };
  const refused = await admin.request("POST", "/backends", spec);
  assert.ok(refused.status >= 400 && refused.status < 600, `probe refused: ${refused.status}`);
  await refused.body?.cancel();
  assert.doesNotMatch(await Deno.readTextFile(configFile), /remote/, "nothing saved");

  const created = await admin.json(
    "POST",
    "/backends",
    { ...spec, secret_access_key: SECRET_KEY },
    201,
  );
  assert.equal((created.backend as Record<string, unknown>).name, "remote");
  const listed = await admin.json<{ backends: Record<string, unknown>[] }>("GET", "/backends");
  const shown = listed.backends.find((b) => b.name === "remote")!;
  assert.equal(shown.credentials_set, true);
  assert.ok(!JSON.stringify(listed).includes(SECRET_KEY), "secrets are never listed");
  const file = parse(await Deno.readTextFile(configFile));
  assert.equal(file.storage.backends[1].name, "remote");

  await admin.json("POST", "/buckets", { name: "far-bucket", backend: "remote" }, 201);
  await svc.client().send(
    new PutObjectCommand({ Bucket: "far-bucket", Key: "k", Body: "stored remotely" }),
  );
  const direct = await remote.client().send(
    new GetObjectCommand({ Bucket: "far-bucket", Key: "k" }),
  );
  assert.equal(await direct.Body!.transformToString(), "stored remotely");

  const inUse = await admin.request("DELETE", "/backends/remote");
  assert.equal(inUse.status, 409);
  await inUse.body?.cancel();
  const isDefault = await admin.request("DELETE", "/backends/local");
  assert.equal(isDefault.status, 409);
  await isDefault.body?.cancel();
  const audit = JSON.stringify(await admin.json("GET", "/audit"));
  assert.match(audit, /backend_created/);
  assert.match(audit, /bucket_created/);
  assert.ok(!audit.includes(SECRET_KEY));
});
