/**
 * Two svc processes in front of one S3 store share a replication rule through lease objects in
 * the coordination bucket (advanced.config_sync_bucket): asked to run it at the same moment,
 * exactly one runs and the other answers 409; once the run ends the lease is free again.
 */
import assert from "node:assert/strict";
import { CreateBucketCommand, PutObjectCommand } from "@aws-sdk/client-s3";
import { AdminClient } from "./helpers/admin.ts";
import { frontOfStore } from "./helpers/s3-front.ts";
import { startSvc, type SvcProcess } from "./helpers/svc.ts";

const front = (store: SvcProcess) =>
  frontOfStore(
    store,
    "advanced:\n  config_sync_bucket: coord\n",
    `  replication:
    rules:
      - name: mirror
        enabled: false
        source: { bucket: src }
        destination: { bucket: dst }
`,
  );

Deno.test("two svc instances sharing a rule never run it at once", async () => {
  await using store = await startSvc({ backing: true });
  const s3 = store.client();
  for (const bucket of ["coord", "src", "dst"]) {
    await s3.send(new CreateBucketCommand({ Bucket: bucket }));
  }
  for (let i = 0; i < 300; i++) {
    await s3.send(new PutObjectCommand({ Bucket: "src", Key: `k/${i}`, Body: `object ${i}` }));
  }
  await using a = await front(store);
  await using b = await front(store);
  const admins = [new AdminClient(a.url), new AdminClient(b.url)];
  for (const admin of admins) await admin.login();

  const answers = await Promise.all(
    admins.map((admin) => admin.request("POST", "/jobs/replication:mirror/run-now")),
  );
  const statuses = answers.map((answer) => answer.status).sort();
  const bodies = await Promise.all(answers.map((answer) => answer.json()));
  assert.deepEqual(statuses, [200, 409], JSON.stringify(bodies));
  const ran = bodies[answers.findIndex((answer) => answer.status === 200)];
  const refused = bodies[answers.findIndex((answer) => answer.status === 409)];
  assert.equal(ran.status, "succeeded", JSON.stringify(ran));
  assert.equal(ran.objects_affected, 300);
  assert.match(refused.message, /leased by another runner/);

  // The lease went back: the other instance runs it now, and finds nothing left to copy.
  const loser = admins[answers.findIndex((answer) => answer.status === 409)];
  const second = await loser.json("POST", "/jobs/replication:mirror/run-now");
  assert.equal(second.status, "succeeded");
  assert.equal(second.objects_affected, 0);
  const runs = await Promise.all(
    admins.map((admin) =>
      admin.json<{ runs: { instance: string }[] }>("GET", "/jobs/replication:mirror/runs")
    ),
  );
  // Run history is fleet-wide: each instance shows both runs, one run by each instance.
  assert.deepEqual(runs.map((r) => r.runs.length), [2, 2], "both runs on each instance");
  for (const { runs: list } of runs) {
    assert.equal(new Set(list.map((run) => run.instance)).size, 2, "one run on each instance");
  }
});
