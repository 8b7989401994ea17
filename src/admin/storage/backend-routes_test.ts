import assert from "node:assert/strict";
import { AuditRing } from "../../observability/audit-ring.ts";
import {
  s3rverUnavailable,
  startS3rver,
  startSvcServer,
} from "../../../tests/helpers/s3-servers.ts";
import {
  MemoryConfigPort,
  opsAdminApp,
  TEST_CLIENT_IP,
  TestStorage,
} from "../../../tests/helpers/ops-admin-app.ts";
import { backendRoutes } from "./backend-routes.ts";
import { AdminError } from "../admin-error.ts";
import { pathExists as exists } from "../../lib/path-exists.ts";

const BASE = "/_/api/admin";

interface Fixture {
  dir: string;
  port: MemoryConfigPort;
  storage: TestStorage;
  audit: AuditRing;
  request(method: string, path: string, body?: unknown): Promise<Response>;
}

/** Two real filesystem backends, `main` (default) and `spare`, behind the real routes. */
async function withFixture(
  test: (f: Fixture) => Promise<void>,
  document?: (dir: string) => Record<string, unknown>,
) {
  const dir = await Deno.makeTempDir({ prefix: "svc-admin-backends-" });
  try {
    const port = new MemoryConfigPort(
      document?.(dir) ?? {
        storage: {
          backends: [
            { name: "main", type: "filesystem", path: `${dir}/main` },
            { name: "spare", type: "filesystem", path: `${dir}/spare` },
          ],
          default_backend: "main",
        },
      },
    );
    const storage = await TestStorage.open(port, `${dir}/spool`);
    const audit = new AuditRing();
    const app = opsAdminApp((a) =>
      a.route(
        BASE,
        backendRoutes({
          config: port,
          audit: (event, fields, level) => audit.record(event, fields, level),
          storage: () => storage.view(),
        }),
      )
    );
    const request = async (method: string, path: string, body?: unknown) =>
      await app.request(`${BASE}${path}`, {
        method,
        ...(body === undefined ? {} : {
          body: typeof body === "string" ? body : JSON.stringify(body),
          headers: { "content-type": "application/json" },
        }),
      });
    await test({ dir, port, storage, audit, request });
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

async function errorOf(response: Response, status: number, code: string) {
  const body = await response.json();
  assert.equal(response.status, status, JSON.stringify(body));
  assert.equal(body.error, code, JSON.stringify(body));
  return body as { error: string; message: string } & Record<string, unknown>;
}

Deno.test("backends over a real S3 endpoint (a second svc)", async (t) => {
  const server = await startSvcServer();
  try {
    const good = {
      type: "s3",
      endpoint: server.endpoint,
      access_key_id: server.accessKeyId,
      secret_access_key: server.secretAccessKey,
    };
    const wrongSecret = "wrong-secret-value-do-not-show";

    await t.step("POST /test-s3: right credentials list the buckets; nothing saved", async () => {
      await withFixture(async ({ port, request }) => {
        const ok = await request("POST", "/test-s3", good);
        assert.equal(ok.status, 200);
        const body = await ok.json();
        assert.equal(body.ok, true);
        assert.ok(Array.isArray(body.buckets));
        const bad = await request("POST", "/test-s3", { ...good, secret_access_key: wrongSecret });
        const error = await errorOf(bad, 400, "bad_request");
        assert.equal(error.ok, false);
        assert.equal(error.backend_status, 403);
        assert.ok(!JSON.stringify(error).includes(wrongSecret));
        assert.equal(port.requests.length, 0, "test-s3 never applies");
      });
    });

    await t.step("POST /backends: a wrong secret fails the probe and saves nothing", async () => {
      await withFixture(async ({ port, audit, request }) => {
        const before = port.document();
        const response = await request("POST", "/backends", {
          name: "remote",
          ...good,
          secret_access_key: wrongSecret,
        });
        const error = await errorOf(response, 400, "bad_request");
        assert.match(error.message, /refused/);
        assert.ok(!JSON.stringify(error).includes(wrongSecret));
        assert.equal(port.applied.length, 0);
        assert.deepEqual(port.document(), before);
        assert.equal(audit.size, 0);
      });
    });

    await t.step("POST /backends: an unreachable endpoint is 502, nothing saved", async () => {
      await withFixture(async ({ port, request }) => {
        const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
        const closedPort = listener.addr.port;
        listener.close();
        const response = await request("POST", "/backends", {
          name: "remote",
          ...good,
          endpoint: `http://127.0.0.1:${closedPort}`,
        });
        await errorOf(response, 502, "bad_gateway");
        assert.equal(port.applied.length, 0);
      });
    });

    await t.step("POST /backends then POST /buckets on it; GET shows both", async () => {
      await withFixture(async ({ port, storage, audit, request }) => {
        const created = await request("POST", "/backends", { name: "remote", ...good });
        const body = await created.json();
        assert.equal(created.status, 201, JSON.stringify(body));
        assert.equal(body.persisted, true);
        assert.equal(body.backend.credentials_set, true);
        assert.ok(!JSON.stringify(body).includes(server.secretAccessKey));
        assert.equal(port.applied.length, 1);
        const applied = port.applied[0];
        assert.equal(applied.persist, true);
        assert.equal(applied.source, "admin_api");
        assert.deepEqual(applied.actor, { user: "$bootstrap", ip: TEST_CLIENT_IP });
        const saved = (port.document().storage as { backends: { name: string }[] }).backends;
        assert.deepEqual(saved.map((b) => b.name), ["main", "spare", "remote"]);
        assert.deepEqual(saved[2], { name: "remote", ...good }, "saved as sent, no defaults");

        const [entry] = audit.snapshot(1);
        assert.equal(entry.event, "backend_created");
        assert.equal(entry.fields.backend, "remote");
        assert.equal(entry.fields.ip, TEST_CLIENT_IP);
        assert.ok(!JSON.stringify(audit.snapshot()).includes(server.secretAccessKey));

        const listed = await (await request("GET", "/backends")).json();
        assert.deepEqual(listed.backends.map((b: { name: string }) => b.name), [
          "main",
          "spare",
          "remote",
        ]);
        assert.ok(!JSON.stringify(listed).includes(server.secretAccessKey));

        const duplicate = await request("POST", "/backends", { name: "remote", ...good });
        await errorOf(duplicate, 409, "conflict");

        // A bucket created on the S3 backend: really there, and its route recorded.
        const bucket = `admin-remote-${crypto.randomUUID().slice(0, 8)}`;
        const made = await request("POST", "/buckets", { name: bucket, backend: "remote" });
        const madeBody = await made.json();
        assert.equal(made.status, 201, JSON.stringify(madeBody));
        assert.equal(madeBody.routed, true);
        const onRemote = await storage.backends.get("remote")!.listBuckets();
        assert.ok(onRemote.some((b) => b.name === bucket));
        const policies = (port.document().storage as { buckets: Record<string, unknown> }).buckets;
        assert.deepEqual(policies[bucket], { backend: "remote" });
        const origins = await (await request("GET", "/buckets")).json();
        const origin = origins.buckets.find((b: { name: string }) => b.name === bucket);
        assert.equal(origin.backend, "remote");
        assert.equal(origin.routed, true);

        // Removing the backend is refused while a bucket is routed to it.
        const refused = await errorOf(await request("DELETE", "/backends/remote"), 409, "conflict");
        assert.match(refused.message, /routes/);
      });
    });
  } finally {
    await server.stop();
  }
});

Deno.test("POST /backends: invalid specs are 400, a single-backend config is 409", async () => {
  await withFixture(async ({ port, request }) => {
    for (
      const spec of [
        { name: "x", type: "ftp" },
        { name: "bad name!", type: "filesystem", path: "/tmp/x" },
        { name: "fs", type: "filesystem" },
        { name: "s3", type: "s3", access_key_id: "a", secret_access_key: "b" },
        { name: "extra", type: "filesystem", path: "/tmp/x", colour: "blue" },
      ]
    ) {
      await errorOf(await request("POST", "/backends", spec), 400, "bad_request");
    }
    await errorOf(await request("POST", "/backends", "{not json"), 400, "bad_request");
    await errorOf(
      await request("POST", "/backends", { name: "spare", type: "filesystem", path: "/tmp/y" }),
      409,
      "conflict",
    );
    assert.equal(port.applied.length, 0);
  });
  await withFixture(async ({ dir, port, request }) => {
    const listed = await (await request("GET", "/backends")).json();
    assert.equal(listed.named, false);
    assert.equal(listed.backends[0].name, "default");
    assert.equal(listed.backends[0].configured_as, "storage.filesystem");
    const add = await request("POST", "/backends", {
      name: "more",
      type: "filesystem",
      path: "/tmp/more",
    });
    const error = await errorOf(add, 409, "conflict");
    assert.match(error.message, /storage\.backends/);
    await errorOf(await request("DELETE", "/backends/default"), 409, "conflict");
    const bucket = await request("POST", "/buckets", { name: "single-bucket" });
    assert.equal(bucket.status, 201);
    assert.equal((await bucket.json()).backend, "default");
    assert.ok(await exists(`${dir}/single/single-bucket`));
    await errorOf(
      await request("POST", "/buckets", { name: "other-bucket", backend: "main" }),
      400,
      "bad_request",
    );
    assert.equal(port.applied.length, 0);
  }, (dir) => ({ storage: { filesystem: `${dir}/single` } }));
});

Deno.test("DELETE /backends: refuses default, routed and non-empty; removes an empty one", async () => {
  await withFixture(async ({ dir, port, storage, audit, request }) => {
    await errorOf(await request("DELETE", "/backends/nope"), 404, "not_found");
    // A listing that fails refuses the removal: an error is never read as "no buckets".
    await Deno.remove(`${dir}/spare`, { recursive: true });
    const unlisted = await errorOf(await request("DELETE", "/backends/spare"), 409, "conflict");
    assert.match(unlisted.message, /could not be listed/);
    await Deno.mkdir(`${dir}/spare/.svc/tmp`, { recursive: true });
    const main = await errorOf(await request("DELETE", "/backends/main"), 409, "conflict");
    assert.match(main.message, /default backend/);

    await storage.backends.get("spare")!.createBucket("held-here");
    const held = await errorOf(await request("DELETE", "/backends/spare"), 409, "conflict");
    assert.match(held.message, /"held-here"/);
    await storage.backends.get("spare")!.deleteBucket("held-here");
    assert.equal(port.applied.length, 0);

    const removed = await request("DELETE", "/backends/spare");
    assert.equal(removed.status, 200, await removed.clone().text());
    assert.equal((await removed.json()).deleted, "spare");
    const saved = (port.document().storage as { backends: { name: string }[] }).backends;
    assert.deepEqual(saved.map((b) => b.name), ["main"]);
    assert.equal(port.applied[0].persist, true);
    const [entry] = audit.snapshot(1);
    assert.equal(entry.event, "backend_deleted");
    assert.equal(entry.fields.user, "$bootstrap");
    assert.ok(await exists(`${dir}/spare`), "the backend's data is left alone");
  });
});

Deno.test("POST /buckets on filesystem backends; GET /buckets shows the origins", async () => {
  await withFixture(async ({ dir, port, audit, request }) => {
    const onDefault = await request("POST", "/buckets", { name: "photos" });
    const body = await onDefault.json();
    assert.equal(onDefault.status, 201, JSON.stringify(body));
    assert.deepEqual([body.backend, body.routed], ["main", false]);
    assert.ok(await exists(`${dir}/main/photos`));
    assert.equal(port.applied.length, 0, "the default backend needs no route");
    assert.equal(audit.snapshot(1)[0].event, "bucket_created");

    const onSpare = await request("POST", "/buckets", { name: "archive", backend: "spare" });
    assert.equal(onSpare.status, 201);
    assert.ok(await exists(`${dir}/spare/archive`));
    assert.equal(port.applied.length, 1);
    const policies = (port.document().storage as { buckets: Record<string, unknown> }).buckets;
    assert.deepEqual(policies.archive, { backend: "spare" });

    const origins = await (await request("GET", "/buckets")).json();
    assert.equal(origins.default_backend, "main");
    const byName = Object.fromEntries(
      origins.buckets.map((b: { name: string; backend: string }) => [b.name, b.backend]),
    );
    assert.deepEqual(byName, { archive: "spare", photos: "main" });

    await errorOf(await request("POST", "/buckets", { name: "photos" }), 409, "conflict");
    await errorOf(
      await request("POST", "/buckets", { name: "photos", backend: "spare" }),
      409,
      "conflict",
    );
    await errorOf(
      await request("POST", "/buckets", { name: "archive", backend: "main" }),
      409,
      "conflict",
    );
    for (const name of ["Bad_Name", "ab", "a..b", 42]) {
      await errorOf(await request("POST", "/buckets", { name }), 400, "bad_request");
    }
    await errorOf(
      await request("POST", "/buckets", { name: "fine-name", backend: "elsewhere" }),
      400,
      "bad_request",
    );
    assert.ok(!(await exists(`${dir}/main/fine-name`)));
  });
});

Deno.test("POST /buckets: a route that cannot be saved undoes the bucket", async () => {
  await withFixture(async ({ dir, port, audit, request }) => {
    port.failNextApply = new AdminError("persist_failed", "The config file could not be written");
    const response = await request("POST", "/buckets", { name: "doomed", backend: "spare" });
    await errorOf(response, 500, "persist_failed");
    assert.ok(!(await exists(`${dir}/spare/doomed`)), "the created bucket was removed again");
    assert.equal((port.document().storage as { buckets?: unknown }).buckets, undefined);
    assert.equal(audit.size, 0);
  });
});

Deno.test("POST /test-s3: a server that never answers is 502 within the backend timeouts", async () => {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const held: Deno.Conn[] = [];
  const accepting = (async () => {
    for await (const conn of listener) held.push(conn); // accepted, never answered
  })();
  try {
    await withFixture(async ({ request }) => {
      const started = Date.now();
      const response = await request("POST", "/test-s3", {
        endpoint: `http://127.0.0.1:${listener.addr.port}`,
        access_key_id: "AKIAEXAMPLE",
        secret_access_key: "secret-example",
      });
      const error = await errorOf(response, 502, "bad_gateway");
      assert.equal(error.ok, false);
      const elapsed = Date.now() - started;
      assert.ok(elapsed < 5000, `answered after ${elapsed} ms`);
    }, (dir) => ({
      storage: { backends: [{ name: "main", type: "filesystem", path: `${dir}/main` }] },
      advanced: { s3_connect_timeout_secs: 0.3, s3_read_timeout_secs: 0.5 },
    }));
  } finally {
    listener.close();
    await accepting.catch(() => {});
    for (const conn of held) conn.close();
  }
});

const s3rverMissing = await s3rverUnavailable();

Deno.test({
  // s3rver checks the access key but not SigV4 signatures (its V4 check is unimplemented), so the
  // wrong-secret case is proven against svc above; here an unknown access key must be refused.
  name: "POST /backends over s3rver: an unknown access key refused, the right one saved",
  ignore: s3rverMissing !== undefined,
  async fn() {
    const server = await startS3rver();
    try {
      await withFixture(async ({ port, request }) => {
        const spec = {
          name: "emulated",
          type: "s3",
          endpoint: server.endpoint,
          secret_access_key: server.secretAccessKey,
        };
        const refused = await request("POST", "/backends", { ...spec, access_key_id: "NOBODY" });
        const error = await errorOf(refused, 400, "bad_request");
        assert.equal(error.backend_code, "InvalidAccessKeyId");
        assert.equal(port.applied.length, 0);
        const created = await request("POST", "/backends", {
          ...spec,
          access_key_id: server.accessKeyId,
        });
        assert.equal(created.status, 201, await created.clone().text());
        assert.equal(port.applied.length, 1);
      });
    } finally {
      await server.stop();
    }
  },
});
