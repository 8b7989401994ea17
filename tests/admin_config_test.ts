/**
 * The configuration API as an operator drives it: log in, read, patch, validate, apply, persist,
 * restart, and what happens when the file cannot be written or the process dies mid-apply.
 */
import assert from "node:assert/strict";
import { parse } from "yaml";
import { AdminClient } from "./helpers/admin.ts";
import { SECRET_KEY, startSvc } from "./helpers/svc.ts";

async function withConfigFile(text: string) {
  const dataDir = await Deno.makeTempDir({ prefix: "svc-admin-config-" });
  const configFile = `${dataDir}/svc.yaml`;
  await Deno.writeTextFile(configFile, text);
  return { dataDir, configFile };
}

Deno.test("config API: apply is validated, applied live, persisted, and read again after a restart", async () => {
  const { dataDir, configFile } = await withConfigFile("advanced:\n  max_delta_ratio: 0.5\n");
  let svc = await startSvc({ dataDir, env: { SVC_CONFIG: configFile } });
  try {
    const admin = new AdminClient(svc.url);
    await admin.login();
    const yaml = "advanced:\n  max_delta_ratio: 0.3\n  request_timeout_secs: 30\n";

    // A dry run changes nothing.
    const dry = await admin.json("POST", "/config/validate", { yaml });
    assert.ok((dry.warnings as string[]).some((w) => /request_timeout_secs/.test(w)));
    assert.match(await Deno.readTextFile(configFile), /0\.5/);

    const invalid = await admin.request("POST", "/config/validate", {
      yaml: "advanced:\n  max_delta_ratio: 7\n",
    });
    assert.equal(invalid.status, 422);
    const problem = await invalid.json();
    assert.equal(problem.error, "invalid_config");
    assert.match(problem.message, /max_delta_ratio/);

    const applied = await admin.json("POST", "/config/apply", { yaml });
    assert.deepEqual(applied.applied, ["advanced.max_delta_ratio"]);
    assert.deepEqual(applied.requires_restart, ["advanced.request_timeout_secs"]);
    assert.equal(applied.persisted, true);
    assert.equal(applied.persisted_path, configFile);
    const written = parse(await Deno.readTextFile(configFile));
    assert.equal(written.advanced.max_delta_ratio, 0.3);
    const fileText = await Deno.readTextFile(configFile);
    assert.ok(!fileText.includes(SECRET_KEY), "environment credentials never reach the file");

    const section = await admin.json("GET", "/config/section/advanced");
    assert.equal(((section.advanced ?? section) as Record<string, unknown>).max_delta_ratio, 0.3);

    const audit = await admin.json<{ entries?: unknown[] } | unknown[]>("GET", "/audit");
    assert.match(JSON.stringify(audit), /config_changed/);

    await svc.stop();
    svc = await startSvc({ dataDir, env: { SVC_CONFIG: configFile } });
    const again = new AdminClient(svc.url);
    await again.login();
    const after = await again.json("GET", "/config/section/advanced");
    const advanced = (after.advanced ?? after) as Record<string, unknown>;
    assert.equal(advanced.max_delta_ratio, 0.3);
    assert.equal(advanced.request_timeout_secs, 30);
  } finally {
    await svc.stop();
  }
});

Deno.test("config API: a file that cannot be written is 500 persist_failed and nothing changes", async () => {
  const { dataDir, configFile } = await withConfigFile("advanced:\n  max_delta_ratio: 0.5\n");
  const svc = await startSvc({ dataDir, env: { SVC_CONFIG: configFile } });
  try {
    const admin = new AdminClient(svc.url);
    await admin.login();
    await Deno.chmod(configFile, 0o444);
    const response = await admin.request("POST", "/config/apply", {
      yaml: "advanced:\n  max_delta_ratio: 0.2\n",
    });
    assert.equal(response.status, 500);
    assert.equal((await response.json()).error, "persist_failed");
    const section = await admin.json("GET", "/config/section/advanced");
    const advanced = (section.advanced ?? section) as Record<string, unknown>;
    assert.equal(advanced.max_delta_ratio, 0.5, "the running config is unchanged");
    assert.equal(await Deno.readTextFile(configFile), "advanced:\n  max_delta_ratio: 0.5\n");
  } finally {
    await Deno.chmod(configFile, 0o644);
    await svc.stop();
  }
});

Deno.test("config API: merge patch keeps absent keys, null deletes, objects merge, secrets survive a round trip", async () => {
  const { dataDir, configFile } = await withConfigFile(
    "storage:\n  buckets:\n    keep:\n      quota_bytes: 1000\n",
  );
  const svc = await startSvc({ dataDir, env: { SVC_CONFIG: configFile } });
  try {
    const admin = new AdminClient(svc.url);
    await admin.login();
    await admin.json("PUT", "/config/section/storage", {
      buckets: { keep: { compression: false }, gone: { quota_bytes: 5 } },
    });
    let file = parse(await Deno.readTextFile(configFile));
    assert.deepEqual(file.storage.buckets.keep, { quota_bytes: 1000, compression: false });
    assert.deepEqual(file.storage.buckets.gone, { quota_bytes: 5 });
    await admin.json("PUT", "/config/section/storage", { buckets: { gone: null } });
    file = parse(await Deno.readTextFile(configFile));
    assert.equal(file.storage.buckets.gone, undefined);
    assert.deepEqual(file.storage.buckets.keep, { quota_bytes: 1000, compression: false });

    // A credential in the file: GET hides it, PUTting the section back keeps it.
    await admin.json("PUT", "/config/section/access", {
      access_key_id: "AKIAFILEKEY000000000",
      secret_access_key: "file-secret-value-1234",
    });
    const access = await admin.json("GET", "/config/section/access");
    assert.ok(!JSON.stringify(access).includes("file-secret-value-1234"));
    await admin.json("PUT", "/config/section/access", access.access ?? access);
    file = parse(await Deno.readTextFile(configFile));
    assert.equal(file.access.secret_access_key, "file-secret-value-1234");

    const unknown = await admin.request("GET", "/config/section/nope");
    assert.equal(unknown.status, 404);
    assert.equal((await unknown.json()).error, "not_found");
  } finally {
    await svc.stop();
  }
});

Deno.test("config API: kill -9 during applies leaves a whole config file and a server that starts", async () => {
  const { dataDir, configFile } = await withConfigFile("advanced:\n  max_delta_ratio: 0.5\n");
  let svc = await startSvc({ dataDir, env: { SVC_CONFIG: configFile } });
  try {
    const admin = new AdminClient(svc.url);
    await admin.login();
    const applies = (async () => {
      for (let i = 0; i < 200; i++) {
        const ratio = (i % 9 + 1) / 10;
        const response = await admin.request("POST", "/config/apply", {
          yaml: `advanced:\n  max_delta_ratio: ${ratio}\n`,
        }).catch(() => null);
        if (response === null) return;
        await response.body?.cancel();
      }
    })();
    await new Promise((resolve) => setTimeout(resolve, 300));
    svc.kill("SIGKILL");
    await applies;
    await svc.stop();
    const file = parse(await Deno.readTextFile(configFile));
    assert.equal(typeof file.advanced.max_delta_ratio, "number", "the file is whole");
    svc = await startSvc({ dataDir, env: { SVC_CONFIG: configFile } });
    const again = new AdminClient(svc.url);
    // The config DB survived too: the session made before the kill is still there.
    again.cookie = admin.cookie;
    assert.deepEqual(await again.json("GET", "/session"), { valid: true, admin_gui: true });
    const section = await again.json("GET", "/config/section/advanced");
    const advanced = (section.advanced ?? section) as Record<string, unknown>;
    assert.equal(advanced.max_delta_ratio, file.advanced.max_delta_ratio);
  } finally {
    await svc.stop();
  }
});
