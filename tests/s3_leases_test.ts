/**
 * Replication leases in a coordination bucket (advanced.config_sync_bucket) against a real svc
 * as the S3 store: conditional writes keep two holders apart, an expired lease is taken over and
 * its old holder's renewal fails, a release only frees one's own lease; svc refuses to start
 * when the bucket cannot hold leases.
 */
import assert from "node:assert/strict";
import { CreateBucketCommand } from "@aws-sdk/client-s3";
import { S3Client as BackendClient } from "../src/storage/s3/s3-client.ts";
import { testOptions } from "../src/testing/s3-test-server.ts";
import { checkConditionalWrites, leaseKey, S3Leases } from "../src/jobs/rules/s3-leases.ts";
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
