/**
 * Black-box test of the admin leftovers made fleet-wide (issue 30): three svc instances over one
 * S3 store behind HAProxy (tests/helpers/fleet.ts), each asked directly. A browse-only session's
 * S3 key pair answers on every instance and works for S3 there, and a logout ends it everywhere;
 * a rule run on one instance shows in `GET /jobs/<id>/runs` on the others; a quota counts the
 * writes made through every instance. Skips without haproxy.
 */
import assert from "node:assert/strict";
import {
  ListObjectsV2Command,
  PutObjectCommand,
  S3Client,
  S3ServiceException,
} from "@aws-sdk/client-s3";
import { AdminClient } from "./helpers/admin.ts";
import { type Fleet, fleetReason, startFleet } from "./helpers/fleet.ts";
import type { CreatedUser } from "./helpers/iam.ts";
import { waitFor } from "./helpers/webhook-receiver.ts";

const STORAGE_YAML = `  buckets:
    capped:
      quota_bytes: 3000
  lifecycle:
    enabled: true
    tick_interval: 1h
    rules:
      - name: tidy
        enabled: true
        bucket: data
        action: delete
        expire_after: 1d
`;

/** The `name=value` pairs of every `Set-Cookie` of a response, by name. */
function cookiesOf(response: Response): Map<string, string> {
  const out = new Map<string, string>();
  for (const line of response.headers.getSetCookie()) {
    const pair = line.split(";")[0];
    out.set(pair.slice(0, pair.indexOf("=")), pair);
  }
  return out;
}

async function adminOf(url: string): Promise<AdminClient> {
  const admin = new AdminClient(url);
  await admin.login();
  return admin;
}

function s3As(url: string, pair: { access_key_id: string; secret_access_key: string }) {
  return new S3Client({
    endpoint: url,
    region: "us-east-1",
    forcePathStyle: true,
    credentials: { accessKeyId: pair.access_key_id, secretAccessKey: pair.secret_access_key },
    maxAttempts: 1,
  });
}

async function credentialsAt(url: string, cookie: string) {
  const response = await fetch(`${url}/_/api/admin/session/s3-credentials`, {
    headers: { cookie },
  });
  const body = await response.json() as Record<string, unknown>;
  return { status: response.status, body };
}

async function browsePanel(fleet: Fleet) {
  const [first] = fleet.instances;
  const admin = await adminOf(first.url);
  const viewer = await admin.json<CreatedUser>("POST", "/users", {
    name: "viewer",
    permissions: [{ effect: "Allow", actions: ["read", "list"], resources: ["*"] }],
  }, 201);
  const pair = { access_key_id: viewer.access_key_id, secret_access_key: viewer.secret_access_key };
  // Every instance knows the user (config sync) before the session is opened.
  for (const instance of fleet.instances) {
    await waitFor(`viewer known on ${instance.url}`, async () => {
      const response = await fetch(`${instance.url}/_/api/admin/login-as`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify(pair),
      });
      await response.body?.cancel();
      return response.status === 403; // known, but not an admin
    });
  }
  const connected = await fetch(`${first.url}/_/api/admin/session/browser-connect`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(pair),
  });
  assert.equal(connected.status, 200);
  await connected.body?.cancel();
  const cookies = cookiesOf(connected);
  const session = cookies.get("svc_session")!, sealed = cookies.get("svc_browse")!;
  assert.ok(session && sealed, `both cookies set: ${[...cookies.keys()]}`);
  assert.ok(!sealed.includes(pair.secret_access_key), "the secret is sealed");
  const both = `${session}; ${sealed}`;

  for (const instance of fleet.instances) {
    const { status, body } = await credentialsAt(instance.url, both);
    assert.equal(status, 200);
    assert.deepEqual(body, { stored: true, ...pair }, `the pair on ${instance.url}`);
    // The pair signs S3 requests there.
    const s3 = s3As(instance.url, body as typeof pair);
    const listed = await s3.send(new ListObjectsV2Command({ Bucket: "data" }));
    assert.equal(listed.$metadata.httpStatusCode, 200);
    s3.destroy();
  }
  // Through the load balancer (round robin: every instance in turn) as the console asks.
  for (let i = 0; i < fleet.instances.length; i++) {
    assert.equal((await credentialsAt(fleet.url, both)).body.stored, true, "through the balancer");
  }
  // The session cookie alone: only the instance that stored the pair holds it in memory.
  assert.equal((await credentialsAt(fleet.instances[1].url, session)).body.stored, false);
  // A sealed pair is bound to its session: another session of the user cannot open it.
  const other = await fetch(`${fleet.instances[2].url}/_/api/admin/session/browser-connect`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(pair),
  });
  await other.body?.cancel();
  const otherSession = cookiesOf(other).get("svc_session")!;
  const swapped = await credentialsAt(fleet.instances[1].url, `${otherSession}; ${sealed}`);
  assert.equal(swapped.body.stored, false);

  // Logout through another instance ends the session, and the pair, everywhere.
  const logout = await fetch(`${fleet.instances[1].url}/_/api/admin/logout`, {
    method: "POST",
    headers: { cookie: both },
  });
  assert.equal(logout.status, 200);
  await logout.body?.cancel();
  const cleared = logout.headers.getSetCookie();
  assert.ok(cleared.some((line) => /^svc_browse=;/.test(line) && /Max-Age=0/.test(line)));
  for (const instance of fleet.instances) {
    await waitFor(`the pair refused on ${instance.url}`, async () => {
      return (await credentialsAt(instance.url, both)).status === 401;
    }, 15_000);
  }
}

interface RunRow {
  id: number;
  instance: string;
  triggered_by: string;
  status: string;
  started_at: string;
}

async function runHistory(fleet: Fleet) {
  const [a, b, c] = await Promise.all(fleet.instances.map((i) => adminOf(i.url)));
  const runsOf = async (admin: AdminClient) =>
    (await admin.json<{ runs: RunRow[] }>("GET", "/jobs/lifecycle:tidy/runs")).runs;
  // The boot tick may be running the rule somewhere: run-now waits until it is free.
  const runNow = async (admin: AdminClient) => {
    let report: { status: string } | null = null;
    await waitFor("a run-now accepted", async () => {
      const response = await admin.request("POST", "/jobs/lifecycle:tidy/run-now");
      const body = await response.json();
      if (response.status === 409) return false;
      assert.equal(response.status, 200, JSON.stringify(body));
      report = body;
      return true;
    });
    assert.equal(report!.status, "succeeded");
  };
  await runNow(a);
  const onA = (await runsOf(a)).find((run) => run.triggered_by !== "scheduler");
  assert.ok(onA, "a's own run");
  const ranOnA = onA.instance;
  // B and C show A's run, with the instance that ran it.
  for (const admin of [b, c]) {
    const runs = await runsOf(admin);
    assert.ok(
      runs.some((run) =>
        run.instance === ranOnA && run.id === onA.id && run.started_at === onA.started_at
      ),
      `a's run seen elsewhere: ${JSON.stringify(runs)}`,
    );
  }
  await runNow(b);
  const onC = await runsOf(c);
  const newest = onC[0];
  assert.notEqual(newest.instance, ranOnA, "b's run is the newest, named after b");
  assert.ok(onC.some((run) => run.instance === ranOnA && run.id === onA.id));
  const starts = onC.map((run) => Date.parse(run.started_at));
  assert.deepEqual(starts, [...starts].sort((x, y) => y - x), "newest first");
}

async function quota(fleet: Fleet) {
  const [a, b, c] = fleet.instances.map((_, i) => fleet.instanceClient(i));
  const put = (client: S3Client, key: string, size: number) =>
    client.send(new PutObjectCommand({ Bucket: "capped", Key: key, Body: "x".repeat(size) }));
  // C counts the bucket first (its counter is then kept by its own writes).
  await put(c, "c-first", 100);
  await put(a, "a-1", 1200);
  await put(b, "b-1", 1200);
  // The others' tallies are published within a second; C's view of them is at most 5 s old
  // before it reads them again.
  await new Promise((resolve) => setTimeout(resolve, 6500));
  // 2500 used: 100 more fit, 1000 more do not (C's own counter alone says 100 used).
  await put(c, "c-small", 100);
  const refused = await put(c, "c-big", 1000).then(() => null, (err) => err);
  assert.ok(refused instanceof S3ServiceException, `refused: ${refused}`);
  assert.equal(refused.name, "QuotaExceeded");
  assert.equal(refused.$metadata.httpStatusCode, 403);
  for (const client of [a, b, c]) client.destroy();
}

Deno.test({
  name: "fleet admin: browse key pairs, run history and quotas hold on every instance",
  ignore: fleetReason !== null,
  sanitizeOps: false,
  sanitizeResources: false,
  async fn(t) {
    await using fleet = await startFleet({
      buckets: ["data", "capped"],
      storageYaml: STORAGE_YAML,
    });
    const steps = [
      ["a browse session's key pair works through every instance; logout ends it", browsePanel],
      ["a rule run on one instance shows in the runs of the others", runHistory],
      ["a quota counts the writes made through every instance", quota],
    ] as const;
    for (const [name, step] of steps) {
      if (!await t.step(name, () => step(fleet))) throw new Error(`Step failed: ${name}`);
    }
  },
});
