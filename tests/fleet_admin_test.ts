/**
 * Black-box test of admin in a fleet: three svc instances over one S3 store, sharing IAM and
 * session revocations through config sync (`advanced.config_sync_bucket`), as behind a
 * round-robin load balancer. A session opened on one instance works on the others; a logout or
 * a password change on one ends it on every instance once synced (`POST /config/sync-now` pulls
 * at once); usage shows the writes of every instance on each.
 */
import assert from "node:assert/strict";
import {
  CreateBucketCommand,
  DeleteObjectCommand,
  PutObjectCommand,
  S3Client,
} from "@aws-sdk/client-s3";
import { ADMIN_PASSWORD, ADMIN_PASSWORD_HASH, AdminClient } from "./helpers/admin.ts";
import { type S3Server, startSvcServer } from "./helpers/s3-servers.ts";
import { ACCESS_KEY, SECRET_KEY, startSvc, type SvcProcess } from "./helpers/svc.ts";
import { waitFor } from "./helpers/webhook-receiver.ts";

/**
 * A fleet member: its hash in svc's own hash file (the same on every member, as an operator
 * copies it), so the password can be changed through the API; polling is slow, so only
 * sync-now and the member's own publishing move state in this test.
 */
async function member(store: S3Server, storageYaml = ""): Promise<SvcProcess> {
  const dir = await Deno.makeTempDir({ prefix: "svc-fleet-" });
  await Deno.mkdir(`${dir}/data/.svc`, { recursive: true, mode: 0o700 });
  await Deno.writeTextFile(`${dir}/data/.svc/bootstrap-password.bcrypt`, ADMIN_PASSWORD_HASH, {
    mode: 0o600,
  });
  await Deno.writeTextFile(
    `${dir}/svc.yaml`,
    `storage:
  s3: ${store.endpoint}
  access_key_id: ${store.accessKeyId}
  secret_access_key: ${store.secretAccessKey}
${storageYaml}advanced:
  config_sync_bucket: coord
  config_sync_poll_secs: 3600
`,
  );
  return await startSvc({
    dataDir: dir,
    args: ["--config", `${dir}/svc.yaml`],
    unsetEnv: ["SVC_S3_ENDPOINT", "SVC_BOOTSTRAP_PASSWORD_HASH"],
    // A bucket another instance created shows in this one's listing at once.
    env: { SVC_BACKEND_LIST_FRESH_SECS: "0" },
  });
}

/** An admin client of `svc` holding `cookie` (a session opened elsewhere). */
function withCookie(svc: SvcProcess, cookie: string | null): AdminClient {
  const client = new AdminClient(svc.url);
  client.cookie = cookie;
  return client;
}

async function status(client: AdminClient, method: string, path: string, body?: unknown) {
  const response = await client.request(method, path, body);
  await response.body?.cancel();
  return response.status;
}

async function syncNow(svc: SvcProcess): Promise<string> {
  const admin = new AdminClient(svc.url);
  await admin.login();
  const answer = await admin.json<{ ok: boolean; outcome: string; bucket: string }>(
    "POST",
    "/config/sync-now",
  );
  assert.equal(answer.bucket, "coord");
  return answer.outcome;
}

function s3Of(svc: SvcProcess): S3Client {
  return new S3Client({
    endpoint: svc.url,
    region: "us-east-1",
    forcePathStyle: true,
    credentials: { accessKeyId: ACCESS_KEY, secretAccessKey: SECRET_KEY },
  });
}

Deno.test("fleet admin: sessions hold on every instance; logout and password change end them everywhere", async () => {
  const store = await startStore();
  const a = await member(store);
  const b = await member(store);
  const c = await member(store);
  try {
    // Logged in on a, used on b and c.
    const onA = new AdminClient(a.url);
    await onA.login();
    const cookie = onA.cookie;
    const onB = withCookie(b, cookie), onC = withCookie(c, cookie);
    for (const client of [onB, onC]) {
      const whoami = await client.json<{ user: string | null }>("GET", "/_/api/whoami");
      assert.equal(whoami.user, "$bootstrap");
    }
    assert.deepEqual(await onB.json("GET", "/users"), { users: [] });
    // Made through c, listed through a at once (IAM requests sync first).
    await onC.json("POST", "/users", { name: "fleet-user" }, 201);
    const users = await onA.json<{ users: { name: string }[] }>("GET", "/users");
    assert.deepEqual(users.users.map((u) => u.name), ["fleet-user"]);
    // sync-now answers what it did; nothing is left to pull here.
    const forced = await onA.json<{ ok: boolean; outcome: string; bucket: string }>(
      "POST",
      "/config/sync-now",
    );
    assert.deepEqual(forced, { ok: true, outcome: "unchanged", bucket: "coord" });

    // Logout on b: refused on b at once, on c and a within seconds (admin requests sync).
    assert.equal(await status(onB, "POST", "/logout"), 200);
    assert.equal(await status(withCookie(b, cookie), "GET", "/users"), 401);
    for (const svc of [c, a]) {
      await waitFor(
        `logout holds on ${svc.url}`,
        async () => (await status(withCookie(svc, cookie), "GET", "/users")) === 401,
        10_000,
      );
    }
    await waitFor("whoami on a forgets the logged-out cookie", async () => {
      const who = await withCookie(a, cookie).json<{ user: string | null }>("GET", "/_/api/whoami");
      return who.user === null;
    }, 10_000);
    // A pull forced on c adopts nothing new now.
    assert.equal(await syncNow(c), "unchanged");

    // A password change on a ends every session opened before it, on every instance.
    const before = new AdminClient(b.url);
    await before.login();
    assert.equal(await status(withCookie(a, before.cookie), "GET", "/users"), 200);
    assert.equal(await status(withCookie(c, before.cookie), "GET", "/users"), 200);
    const changer = new AdminClient(a.url);
    await changer.login();
    await changer.json("PUT", "/password", {
      current_password: ADMIN_PASSWORD,
      new_password: "a brand new fleet password",
    });
    assert.equal(await status(changer, "GET", "/users"), 200, "the changer's new cookie works");
    assert.equal(await status(withCookie(a, before.cookie), "GET", "/users"), 401);
    for (const svc of [b, c]) {
      await waitFor(
        `the password change holds on ${svc.url}`,
        async () => (await status(withCookie(svc, before.cookie), "GET", "/users")) === 401,
        10_000,
      );
    }
    const audit = await onC.json<{ entries: { event: string }[] }>("GET", "/audit?limit=200")
      .catch(() => null);
    assert.equal(audit, null, "the first cookie is gone on c too");
    const entries = await changer.json<{ entries: { event: string }[] }>("GET", "/audit?limit=200");
    assert.ok(entries.entries.some((e) => e.event === "config_sync_forced"));
  } finally {
    await Promise.all([a.stop(), b.stop(), c.stop()]);
    await store.stop();
  }
});

async function startStore(): Promise<S3Server> {
  const store = await startSvcServer();
  const direct = new S3Client({
    endpoint: store.endpoint,
    region: "us-east-1",
    forcePathStyle: true,
    credentials: { accessKeyId: store.accessKeyId, secretAccessKey: store.secretAccessKey },
  });
  await direct.send(new CreateBucketCommand({ Bucket: "coord" }));
  direct.destroy();
  return store;
}

interface Usage {
  object_count: number;
  logical_bytes: number;
}

Deno.test("fleet admin: usage shows the writes of every instance on each", async () => {
  const store = await startStore();
  const a = await member(store);
  const b = await member(store);
  const s3a = s3Of(a), s3b = s3Of(b);
  try {
    const adminA = new AdminClient(a.url);
    await adminA.login();
    const adminB = withCookie(b, adminA.cookie);
    await s3a.send(new CreateBucketCommand({ Bucket: "data" }));
    // b counts the (empty) bucket once; from then on only the tallies bring a's writes to it.
    const seeded = await adminB.json<Usage>("POST", "/usage/refresh?bucket=data");
    assert.equal(seeded.object_count, 0);
    for (const [key, size] of [["a1", 10], ["a2", 20]] as const) {
      await s3a.send(new PutObjectCommand({ Bucket: "data", Key: key, Body: "x".repeat(size) }));
    }
    for (const [key, size] of [["b1", 1], ["b2", 2], ["b3", 3]] as const) {
      await s3b.send(new PutObjectCommand({ Bucket: "data", Key: key, Body: "y".repeat(size) }));
    }
    const fleetTotal = (count: number, logical: number) => async () => {
      for (const admin of [adminA, adminB]) {
        const usage = await admin.json<Usage>("GET", "/usage/bucket/data");
        if (usage.object_count !== count || usage.logical_bytes !== logical) return false;
      }
      return true;
    };
    await waitFor("5 objects, 36 bytes on a and b", fleetTotal(5, 36), 15_000);
    const stats = await adminA.json<{ total_objects: number; total_original_size: number }>(
      "GET",
      "/_/stats?bucket=data",
    );
    assert.deepEqual([stats.total_objects, stats.total_original_size], [5, 36]);
    const all = await adminB.json<{ buckets: Record<string, Usage> }>("GET", "/usage");
    assert.equal(all.buckets.data.object_count, 5);

    await s3b.send(new DeleteObjectCommand({ Bucket: "data", Key: "a2" }));
    await waitFor("4 objects, 16 bytes on a and b", fleetTotal(4, 16), 15_000);
  } finally {
    s3a.destroy();
    s3b.destroy();
    await Promise.all([a.stop(), b.stop()]);
    await store.stop();
  }
});

const LIFECYCLE = `  lifecycle:
    enabled: true
    tick_interval: 1h
    rules:
      - name: tidy
        enabled: true
        bucket: data
        action: delete
        expire_after: 1d
`;

interface Row {
  id: string;
  paused: boolean;
  leased_by?: unknown;
  fleet_last_run?: unknown;
}

async function runsOf(admin: AdminClient): Promise<number> {
  const answer = await admin.json<{ runs: unknown[] }>("GET", "/jobs/lifecycle:tidy/runs");
  return answer.runs.length;
}

Deno.test("fleet admin: a lifecycle rule runs on one instance; pause and resume hold everywhere", async () => {
  const store = await startStore();
  const direct = new S3Client({
    endpoint: store.endpoint,
    region: "us-east-1",
    forcePathStyle: true,
    credentials: { accessKeyId: store.accessKeyId, secretAccessKey: store.secretAccessKey },
  });
  await direct.send(new CreateBucketCommand({ Bucket: "data" }));
  direct.destroy();
  // Both start due at once: one runs the rule, the other finds it leased or just run.
  const a = await member(store, LIFECYCLE);
  const b = await member(store, LIFECYCLE);
  try {
    const adminA = new AdminClient(a.url);
    await adminA.login();
    const adminB = withCookie(b, adminA.cookie);
    await waitFor("the boot run", async () => (await runsOf(adminA)) + (await runsOf(adminB)) > 0);
    // Long enough for the other instance's first tick to have decided.
    await new Promise((resolve) => setTimeout(resolve, 2000));
    // Run history is fleet-wide: both instances show the one run, wherever it ran.
    assert.deepEqual([await runsOf(adminA), await runsOf(adminB)], [1, 1], "one run in the fleet");

    // Paused through b: a's row says so and a refuses to run it.
    await adminB.json("POST", "/jobs/lifecycle:tidy/pause");
    const rows = await adminA.json<{ jobs: Row[] }>("GET", "/jobs");
    const row = rows.jobs.find((job) => job.id === "lifecycle:tidy");
    assert.equal(row?.paused, true);
    assert.ok(row && "leased_by" in row, "the row tells who holds the lease");
    const last = row?.fleet_last_run as { instance: string; trigger: string } | null;
    assert.equal(last?.trigger, "scheduler", "a's row shows the boot run, wherever it ran");
    const refused = await adminA.request("POST", "/jobs/lifecycle:tidy/run-now");
    assert.equal(refused.status, 409);
    assert.match((await refused.json()).message, /paused/);
    // Resumed through a: b runs it.
    await adminA.json("POST", "/jobs/lifecycle:tidy/resume");
    const before = await runsOf(adminB);
    const report = await adminB.json<{ status: string }>("POST", "/jobs/lifecycle:tidy/run-now");
    assert.equal(report.status, "succeeded");
    assert.equal(await runsOf(adminB), before + 1);
  } finally {
    await Promise.all([a.stop(), b.stop()]);
    await store.stop();
  }
});

/** HAProxy balancing round robin over `servers`, one request per connection. */
async function roundRobin(servers: SvcProcess[]) {
  const probe = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (probe.addr as Deno.NetAddr).port;
  probe.close();
  const dir = await Deno.makeTempDir({ prefix: "svc-haproxy-" });
  const lines = [
    "defaults",
    "  mode http",
    "  option httpclose",
    "  timeout connect 5s",
    "  timeout client 30s",
    "  timeout server 30s",
    "frontend admin",
    `  bind 127.0.0.1:${port}`,
    "  default_backend fleet",
    "backend fleet",
    "  balance roundrobin",
    ...servers.map((svc, i) => `  server s${i} ${new URL(svc.url).host}`),
  ];
  await Deno.writeTextFile(`${dir}/haproxy.cfg`, lines.join("\n") + "\n");
  const child = new Deno.Command("/usr/sbin/haproxy", {
    args: ["-f", `${dir}/haproxy.cfg`, "-db"],
    stdout: "null",
    stderr: "null",
  }).spawn();
  const url = `http://127.0.0.1:${port}`;
  await waitFor("haproxy", async () => {
    try {
      await (await fetch(`${url}/_/api/whoami`)).body?.cancel();
      return true;
    } catch {
      return false;
    }
  }, 10_000);
  return {
    url,
    async stop() {
      child.kill();
      await child.status;
      await Deno.remove(dir, { recursive: true });
    },
  };
}

Deno.test("fleet admin: a console behind a round-robin balancer keeps its session", async () => {
  const store = await startStore();
  const a = await member(store);
  const b = await member(store);
  const balancer = await roundRobin([a, b]);
  try {
    const admin = new AdminClient(balancer.url);
    await admin.login();
    const whoami = await admin.json<{ user: string | null }>("GET", "/_/api/whoami");
    assert.equal(whoami.user, "$bootstrap");
    // Each change lands on the other instance than the one before: every one starts from the
    // last (a stale start would lose the config sync race and drop it), and each list shows all.
    for (let i = 0; i < 4; i++) {
      await admin.json("POST", "/users", { name: `console-${i}` }, 201);
      const listed = await admin.json<{ users: { name: string }[] }>("GET", "/users");
      assert.equal(listed.users.length, i + 1, JSON.stringify(listed.users));
      // Three requests a round: the next change goes to the other instance.
      await (await admin.request("GET", "/session")).body?.cancel();
    }
    // Both instances served the console's changes with the one cookie.
    for (const svc of [a, b]) {
      const direct = withCookie(svc, admin.cookie);
      const audit = await direct.json<{ entries: { event: string }[] }>("GET", "/audit?limit=200");
      assert.ok(
        audit.entries.some((e) => e.event === "iam_user_created"),
        `${svc.url} created a user`,
      );
    }
    assert.equal(await status(admin, "POST", "/logout"), 200);
  } finally {
    await balancer.stop();
    await Promise.all([a.stop(), b.stop()]);
    await store.stop();
  }
});

Deno.test("fleet admin: sync-now without config sync is a 409 naming the setting", async () => {
  await using svc = await startSvc();
  const admin = new AdminClient(svc.url);
  await admin.login();
  const response = await admin.request("POST", "/config/sync-now");
  assert.equal(response.status, 409);
  const body = await response.json();
  assert.equal(body.error, "conflict");
  assert.match(body.message, /config_sync_bucket/);
});
