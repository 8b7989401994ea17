/**
 * Replication leases in a coordination bucket (advanced.config_sync_bucket) against a real svc
 * as the S3 store: conditional writes keep two holders apart, an expired lease is taken over and
 * its old holder's renewal fails, a release only frees one's own lease; in a fleet a scheduled
 * run skips a rule just run elsewhere, a kill from another instance ends the holder's lease, and
 * the pause switch is shared; svc refuses to start when the bucket cannot hold leases.
 */
import assert from "node:assert/strict";
import { CreateBucketCommand } from "@aws-sdk/client-s3";
import { S3Client as BackendClient } from "../src/storage/s3/s3-client.ts";
import { testOptions } from "../src/testing/s3-test-server.ts";
import { checkConditionalWrites, leaseKey, S3Leases } from "../src/jobs/rules/s3-leases.ts";
import { S3FleetRules } from "../src/jobs/rules/fleet-rules.ts";
import { ACCESS_KEY, SECRET_KEY, startSvc } from "./helpers/svc.ts";

Deno.test("S3 leases: one holder at a time, takeover after expiry, own release only", async () => {
  await using store = await startSvc({ backing: true });
  await store.client().send(new CreateBucketCommand({ Bucket: "coord" }));
  const client = new BackendClient(
    testOptions(store.url, { accessKeyId: ACCESS_KEY, secretAccessKey: SECRET_KEY }),
  );
  await checkConditionalWrites(client, "coord");

  let later = 0; // B's clock runs `later` ms ahead (an expiry seen from B)
  const a = new S3Leases(client, "coord", "instance-a");
  const b = new S3Leases(client, "coord", "instance-b", () => Date.now() + later);
  const id = "replication:mirror";
  assert.equal(leaseKey(id), "_svc/leases/replication/mirror.json");

  const leaseA = await a.acquire(id, 60_000);
  assert.ok(leaseA, "the first acquisition succeeds");
  assert.equal(await b.acquire(id, 60_000), null, "a held lease is refused");
  assert.equal((await b.holder(id))?.holder, "instance-a");
  assert.equal(await a.renew(leaseA, 60_000), true);

  later = 120_000; // A stopped renewing long ago, as B sees it
  const leaseB = await b.acquire(id, 60_000);
  assert.ok(leaseB, "an expired lease is taken over");
  assert.equal(await a.renew(leaseA, 60_000), false, "the old holder learns it lost the lease");
  await a.release(leaseA);
  assert.equal((await b.holder(id))?.holder, "instance-b", "a lost lease's release frees nothing");
  await b.release(leaseB);
  later = 0;
  assert.equal(await a.holder(id), null);

  // Racing holders: exactly one conditional write wins.
  const racers = Array.from({ length: 5 }, (_, i) => new S3Leases(client, "coord", `r${i}`));
  const won = await Promise.all(racers.map((racer) => racer.acquire("replication:race", 60_000)));
  assert.equal(won.filter((lease) => lease !== null).length, 1);
});

Deno.test("S3 leases in a fleet: a recent run is skipped, a kill elsewhere ends the holder's lease; pause is shared", async () => {
  await using store = await startSvc({ backing: true });
  await store.client().send(new CreateBucketCommand({ Bucket: "coord" }));
  const client = new BackendClient(
    testOptions(store.url, { accessKeyId: ACCESS_KEY, secretAccessKey: SECRET_KEY }),
  );
  const a = new S3Leases(client, "coord", "instance-a");
  const b = new S3Leases(client, "coord", "instance-b");
  const id = "lifecycle:tidy";

  const first = await a.acquire(id, 60_000);
  assert.ok(first);
  await a.release(first, { status: "succeeded", trigger: "scheduler" });
  const after = await new S3FleetRules(client, "coord", b).lease(id);
  assert.equal(after.holder, null);
  assert.deepEqual(
    after.lastRun && [after.lastRun.holder, after.lastRun.status, after.lastRun.trigger],
    ["instance-a", "succeeded", "scheduler"],
    "every instance sees how the last run ended",
  );
  // A scheduled run on b: a ran it a moment ago. A run-now (no option) still gets it.
  assert.equal(await b.acquire(id, 60_000, { notRunWithinMs: 60_000 }), null);
  assert.ok(await b.acquire(id, 60_000, { notRunWithinMs: 0 }));

  // b holds it now; a kill through a expires it, and b's next renewal fails.
  const fleetA = new S3FleetRules(client, "coord", a);
  const held = await b.acquire(id, 60_000);
  assert.ok(held, "b takes over its own lease");
  assert.equal((await fleetA.lease(id)).holder?.holder, "instance-b");
  assert.equal(await fleetA.killElsewhere(id), true);
  assert.equal(await b.renew(held, 60_000), false, "the holder learns its run was killed");
  assert.equal(await fleetA.killElsewhere(id), false, "nothing is held any more");

  // The pause switch: absent, then whatever was set last anywhere.
  const fleetB = new S3FleetRules(client, "coord", b);
  assert.equal(await fleetB.paused(id), null);
  await fleetA.setPaused(id, true, "alice");
  assert.equal(await fleetB.paused(id), true);
  await fleetB.setPaused(id, false, "bob");
  assert.equal(await fleetA.paused(id), false);
});

Deno.test("svc refuses to start when the coordination bucket cannot hold leases", async () => {
  // On the filesystem backend: not an S3 backend.
  await assert.rejects(
    () =>
      startSvc({
        env: { SVC_CONFIG_SYNC_BUCKET: "coord" },
        unsetEnv: ["SVC_S3_ENDPOINT"],
      }).then((svc) => svc.stop()),
    /config_sync_bucket "coord" must live on an S3 backend/,
  );
  // On an S3 backend without the bucket.
  await using store = await startSvc({ backing: true });
  await assert.rejects(
    () =>
      startSvc({
        env: {
          SVC_CONFIG_SYNC_BUCKET: "missing",
          SVC_S3_ENDPOINT: store.url,
          SVC_BE_AWS_ACCESS_KEY_ID: ACCESS_KEY,
          SVC_BE_AWS_SECRET_ACCESS_KEY: SECRET_KEY,
        },
      }).then((svc) => svc.stop()),
    /config_sync_bucket "missing" cannot hold leases/,
  );
});
