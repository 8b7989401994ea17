/**
 * Replication and lifecycle rules on the jobs surface, driven like an operator: their rows in
 * GET /jobs, the action matrix (405 naming the supported actions), pause/resume persisted across
 * a restart, the 409s of run-now and kill, and delete removing the rule from the config file with
 * its row and history. What the runs themselves do is tested in replication_test.ts and
 * lifecycle_test.ts.
 */
import assert from "node:assert/strict";
import { parse } from "yaml";
import { AdminClient } from "./helpers/admin.ts";
import { startSvc, type SvcProcess } from "./helpers/svc.ts";

type Row = Record<string, unknown>;

async function writeConfig(dir: string): Promise<string> {
  const file = `${dir}/svc.yaml`;
  // Both kinds switched off for the scheduler, so nothing runs behind the test's back.
  await Deno.writeTextFile(
    file,
    `storage:
  filesystem: ${dir}/objects
  replication:
    tick_interval: 1h
    rules:
      - name: mirror
        enabled: false
        source: { bucket: src, prefix: "logs/" }
        destination: { bucket: dst }
  lifecycle:
    enabled: false
    rules:
      - name: tidy
        enabled: true
        bucket: src
        action: delete
        expire_after: 30d
`,
  );
  return file;
}

const start = (dir: string, file: string) => startSvc({ dataDir: dir, args: ["--config", file] });

async function rows(admin: AdminClient): Promise<Map<string, Row>> {
  const { jobs } = await admin.json<{ jobs: Row[] }>("GET", "/jobs");
  return new Map(jobs.map((job) => [String(job.id), job]));
}

Deno.test("rules on the jobs surface: rows, matrix, pause across a restart, 409s, delete", async () => {
  const dir = await Deno.makeTempDir({ prefix: "svc-rule-jobs-" });
  const file = await writeConfig(dir);
  let svc: SvcProcess = await start(dir, file);
  try {
    let admin = new AdminClient(svc.url);
    await admin.login();

    const listed = await rows(admin);
    const mirror = listed.get("replication:mirror")!;
    assert.equal(mirror.kind, "replication");
    assert.equal(mirror.status, "idle");
    assert.equal(mirror.paused, false);
    assert.equal(mirror.enabled, false);
    assert.equal(mirror.last_run, null);
    assert.deepEqual(mirror.scope, { bucket: "src", prefix: "logs/", target: "dst/logs/" });
    assert.deepEqual(mirror.actions, ["pause", "resume", "run-now", "verify", "kill", "delete"]);
    const tidy = listed.get("lifecycle:tidy")!;
    assert.equal(tidy.type, "delete");
    assert.equal(tidy.enabled, false, "lifecycle is off globally");
    assert.deepEqual(tidy.actions, ["pause", "resume", "run-now", "preview", "delete"]);

    // The matrix: 405 naming what the kind supports.
    for (const [id, action] of [["lifecycle:tidy", "kill"], ["replication:mirror", "preview"]]) {
      const refused = await admin.request("POST", `/jobs/${id}/${action}`);
      assert.equal(refused.status, 405, `${id} ${action}`);
      const body = await refused.json();
      assert.ok(Array.isArray(body.details?.supported ?? body.supported), JSON.stringify(body));
    }
    assert.equal((await admin.request("GET", "/jobs/replication:nope")).status, 404);
    await admin.request("GET", "/jobs/replication:nope").then((r) => r.body?.cancel());

    // 409s: lifecycle run-now needs the kind enabled; kill needs a run in flight.
    const runNow = await admin.request("POST", "/jobs/lifecycle:tidy/run-now");
    assert.equal(runNow.status, 409);
    assert.match((await runNow.json()).message, /lifecycle is disabled/);
    const kill = await admin.request("POST", "/jobs/replication:mirror/kill");
    assert.equal(kill.status, 409);
    await kill.body?.cancel();

    // Pause is persisted: a restart keeps it.
    const paused = await admin.json("POST", "/jobs/replication:mirror/pause");
    assert.equal(paused.paused, true);
    await svc.stop();
    svc = await start(dir, file);
    admin = new AdminClient(svc.url);
    await admin.login();
    assert.equal((await rows(admin)).get("replication:mirror")!.paused, true);
    const resumed = await admin.json("POST", "/jobs/replication:mirror/resume");
    assert.equal(resumed.paused, false);

    // Delete: gone from the file, the rows and the API.
    assert.deepEqual(await admin.json("POST", "/jobs/lifecycle:tidy/delete"), {
      deleted: "lifecycle:tidy",
    });
    const document = parse(await Deno.readTextFile(file));
    assert.deepEqual(document.storage.lifecycle.rules, []);
    assert.equal(document.storage.replication.rules[0].name, "mirror");
    assert.equal((await rows(admin)).has("lifecycle:tidy"), false);
    const gone = await admin.request("GET", "/jobs/lifecycle:tidy");
    assert.equal(gone.status, 404);
    await gone.body?.cancel();

    const audit = JSON.stringify(await admin.json("GET", "/audit"));
    for (const event of ["job_resumed", "job_deleted"]) assert.match(audit, new RegExp(event));
  } finally {
    await svc.stop();
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
});
