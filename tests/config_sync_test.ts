/**
 * Black-box test of config sync (`advanced.config_sync_bucket`): two svc instances in front of one
 * S3 store share their IAM. A user created on one signs requests on the other within a poll;
 * disabling and deleting travel the same way; a third instance started later adopts the state at
 * boot. Each step is audited.
 */
import assert from "node:assert/strict";
import { CreateBucketCommand, ListObjectsV2Command, PutObjectCommand } from "@aws-sdk/client-s3";
import { AdminClient } from "./helpers/admin.ts";
import { clientAs, type CreatedUser } from "./helpers/iam.ts";
import { frontOfStore } from "./helpers/s3-front.ts";
import { startSvc, type SvcProcess } from "./helpers/svc.ts";
import { waitFor } from "./helpers/webhook-receiver.ts";

const front = (store: SvcProcess) =>
  frontOfStore(store, "advanced:\n  config_sync_bucket: coord\n  config_sync_poll_secs: 1\n");

/** Whether `user`'s key lists bucket `data` through `svc` (false on 403). */
async function canList(svc: SvcProcess, user: CreatedUser): Promise<boolean> {
  const s3 = clientAs(svc, user);
  try {
    await s3.send(new ListObjectsV2Command({ Bucket: "data" }));
    return true;
  } catch (err) {
    if ((err as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode === 403) {
      return false;
    }
    throw err;
  } finally {
    s3.destroy();
  }
}

Deno.test("config sync: IAM made on one instance holds on the others", async () => {
  await using store = await startSvc({ backing: true });
  const s3 = store.client();
  for (const bucket of ["coord", "data"]) {
    await s3.send(new CreateBucketCommand({ Bucket: bucket }));
  }
  await s3.send(new PutObjectCommand({ Bucket: "data", Key: "k", Body: "v" }));
  await using a = await front(store);
  await using b = await front(store);
  const adminA = new AdminClient(a.url);
  const adminB = new AdminClient(b.url);
  await adminA.login();
  await adminB.login();

  const reader = await adminA.json<CreatedUser>("POST", "/users", {
    name: "reader",
    permissions: [{ effect: "Allow", actions: ["list", "read"], resources: ["data", "data/*"] }],
  }, 201);
  assert.equal(await canList(a, reader), true);
  await waitFor("reader on b", () => canList(b, reader), 15_000);
  const onB = await adminB.json<{ users: { name: string; id: string }[] }>("GET", "/users");
  assert.deepEqual(onB.users.map((u) => u.name), ["reader"]);

  // Changed on b: disabled, then travels back to a.
  await adminB.json("PUT", `/users/${onB.users[0].id}`, { enabled: false });
  assert.equal(await canList(b, reader), false);
  await waitFor("reader disabled on a", async () => !(await canList(a, reader)), 15_000);

  // A third instance started now adopts the state at boot.
  await using c = await front(store);
  const adminC = new AdminClient(c.url);
  await adminC.login();
  const onC = await adminC.json<{ users: { name: string; enabled: boolean }[] }>("GET", "/users");
  assert.deepEqual(onC.users.map((u) => [u.name, u.enabled]), [["reader", false]]);

  // Deleted on c: gone on a once adopted.
  await adminC.request("DELETE", `/users/${onB.users[0].id}`);
  await waitFor("reader deleted on a", async () => {
    const users = await adminA.json<{ users: unknown[] }>("GET", "/users");
    return users.users.length === 0;
  }, 15_000);

  const audit = await adminB.json<{ entries: { event: string }[] }>("GET", "/audit?limit=200");
  assert.ok(audit.entries.some((e) => e.event === "config_sync_adopted"), "adoption is audited");
  const metrics = await (await fetch(`${b.url}/_/metrics`)).text();
  assert.match(metrics, /^svc_config_sync_total\{outcome="adopted"\} [1-9]/m);
  assert.match(metrics, /^svc_config_sync_total\{outcome="published"\} [1-9]/m);
});
