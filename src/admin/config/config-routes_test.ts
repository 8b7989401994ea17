/**
 * The configuration API through a real Hono app (the admin error renderer, a context middleware,
 * the routes mounted at /_/api/admin) over the real config modules (validation, export, JSON
 * Schema, admission chain) and a real AuditRing. Only the ConfigPort is a stand-in
 * (tests/helpers/fake-config-port.ts): it runs the real validation and records what it is given.
 */
import assert from "node:assert/strict";
import { Hono } from "hono";
import { parse as parseYaml } from "yaml";
import { FakeConfigPort } from "../../../tests/helpers/fake-config-port.ts";
import { applyEnvironment } from "../../config/env.ts";
import { exportConfig } from "../../config/document/export.ts";
import { expandPlaceholders } from "../../config/load.ts";
import { AuditRing } from "../../observability/audit-ring.ts";
import type { AdminEnv } from "../admin-env.ts";
import { renderAdminError } from "../admin-error.ts";
import { configRoutes } from "./config-routes.ts";

const SECRETS = [
  "operator-secret-123",
  "fast-secret-456",
  "$2b$04$/M04MqciaDk2C.yCWs2lnOEtEe1b.BLR11Xkb9vwOGzree2zQuD5S",
];

const DOCUMENT = {
  access: { access_key_id: "AKIAOPERATOR", secret_access_key: "operator-secret-123" },
  storage: {
    backends: [
      { name: "local", type: "filesystem", path: "/tmp/svc-local" },
      {
        name: "fast",
        type: "s3",
        endpoint: "http://fast.invalid:9000",
        access_key_id: "AKIAFAST",
        secret_access_key: "fast-secret-456",
      },
    ],
    default_backend: "local",
    buckets: {
      site: { public_prefixes: ["assets/"], backend: "fast" },
      logs: { quota_bytes: 1000 },
    },
  },
  advanced: {
    log_level: "info",
    bootstrap_password_hash: "$2b$04$/M04MqciaDk2C.yCWs2lnOEtEe1b.BLR11Xkb9vwOGzree2zQuD5S",
  },
};

type Doc = typeof DOCUMENT;

function setup(
  document: Record<string, unknown> = DOCUMENT,
  maxBodyBytes?: number,
  toRunning?: (document: Record<string, unknown>) => Record<string, unknown>,
) {
  const port = new FakeConfigPort(document, { toRunning });
  const ring = new AuditRing();
  const app = new Hono<AdminEnv>();
  app.onError(renderAdminError);
  app.use("*", async (c, next) => {
    c.set("clientIp", "198.51.100.7");
    c.set("requestId", "req-1");
    c.set("principal", { user: "$bootstrap", admin: true, sessionId: "s-1" });
    await next();
  });
  app.route(
    "/_/api/admin",
    configRoutes({
      config: port,
      audit: (event, fields, level) => ring.record(event, fields, level),
      maxBodyBytes,
    }),
  );
  const call = async (method: string, path: string, body?: unknown) => {
    const init: RequestInit = { method };
    if (body !== undefined) {
      init.body = typeof body === "string" ? body : JSON.stringify(body);
      init.headers = { "content-type": "application/json" };
    }
    const response = await app.request(`/_/api/admin${path}`, init);
    const text = await response.text();
    const type = response.headers.get("content-type") ?? "";
    const json = type.includes("json") ? JSON.parse(text) : undefined;
    return { status: response.status, text, json, headers: response.headers };
  };
  return { port, ring, call };
}

function assertNoSecret(text: string) {
  for (const secret of SECRETS) assert.ok(!text.includes(secret), `secret leaked: ${secret}`);
}

Deno.test("GET /config: the running config, sectioned, defaults filled in, no secret", async () => {
  const { call } = setup();
  const { status, json, text, headers } = await call("GET", "/config");
  assert.equal(status, 200);
  assert.deepEqual(Object.keys(json), ["admission", "access", "storage", "advanced"]);
  assert.equal(json.advanced.listen_addr, "0.0.0.0:9000");
  assert.equal(json.storage.backends[1].endpoint, "http://fast.invalid:9000");
  assert.equal(json.access.access_key_id, "AKIAOPERATOR");
  assert.equal(headers.get("cache-control"), "no-store");
  assertNoSecret(text);
});

Deno.test("PUT /config: merge patch over the operator's document, applied and persisted", async () => {
  const { port, call } = setup();
  const patch = { advanced: { log_level: "debug" }, storage: { buckets: { logs: null } } };
  const { status, json } = await call("PUT", "/config", patch);
  assert.equal(status, 200, JSON.stringify(json));
  assert.equal(port.requests.length, 1);
  const [request] = port.requests;
  assert.equal(request.dryRun, false);
  assert.equal(request.persist, true);
  assert.equal(request.source, "admin_api");
  assert.deepEqual(request.actor, { user: "$bootstrap", ip: "198.51.100.7" });
  const sent = request.document as Doc;
  assert.equal(sent.advanced.log_level, "debug");
  assert.deepEqual(Object.keys(sent.storage.buckets), ["site"], "null deletes");
  assert.deepEqual(sent.storage.buckets.site, DOCUMENT.storage.buckets.site, "absent kept");
  assert.equal(sent.advanced.bootstrap_password_hash, DOCUMENT.advanced.bootstrap_password_hash);
  assert.equal(sent.access.secret_access_key, "operator-secret-123");
  assert.deepEqual(json.persisted, true);
  assert.equal(json.persisted_path, "/etc/svc/config.yaml");
  assert.ok(json.applied.includes("advanced.log_level"), JSON.stringify(json.applied));
  assert.equal(port.current().advanced.log_level, "debug");
});

Deno.test("PUT /config/section: nested merge keeps siblings, null deletes a secret", async () => {
  const { port, call } = setup();
  const nested = await call("PUT", "/config/section/storage", {
    buckets: { site: { quota_bytes: 5000 } },
  });
  assert.equal(nested.status, 200, nested.text);
  const sent = port.requests[0].document as Doc & {
    storage: { buckets: { site: { quota_bytes?: number } } };
  };
  assert.deepEqual(sent.storage.buckets.site, {
    public_prefixes: ["assets/"],
    backend: "fast",
    quota_bytes: 5000,
  });
  assert.equal(sent.storage.backends[1].secret_access_key, "fast-secret-456");
  assert.deepEqual(sent.access, DOCUMENT.access, "other sections untouched");

  const cleared = await call("PUT", "/config/section/advanced", {
    bootstrap_password_hash: null,
  });
  assert.equal(cleared.status, 200, cleared.text);
  const after = port.requests[1].document as Doc;
  assert.equal(after.advanced.bootstrap_password_hash, undefined);
  assert.equal(after.advanced.log_level, "info");
});

Deno.test("GET, edit, PUT never clears a credential (JSON section, YAML export)", async () => {
  const { port, call } = setup();
  // JSON: read the storage section, edit one backend, send the whole section back.
  const got = await call("GET", "/config/section/storage");
  assertNoSecret(got.text);
  const section = got.json;
  section.backends[1].endpoint = "http://fast2.invalid:9000";
  const put = await call("PUT", "/config/section/storage", section);
  assert.equal(put.status, 200, put.text);
  const sent = port.requests[0].document as Doc;
  assert.equal(sent.storage.backends[1].endpoint, "http://fast2.invalid:9000");
  assert.equal(sent.storage.backends[1].secret_access_key, "fast-secret-456");

  // YAML: the canonical export, edited and applied whole.
  const exported = await call("GET", "/config/export");
  assertNoSecret(exported.text);
  const edited = exported.text.replace("quota_bytes: 1000", "quota_bytes: 2000");
  assert.notEqual(edited, exported.text);
  const applied = await call("POST", "/config/apply", { yaml: edited });
  assert.equal(applied.status, 200, applied.text);
  const whole = port.requests[1].document as Doc;
  assert.equal(whole.storage.buckets.logs.quota_bytes, 2000);
  assert.equal(whole.access.secret_access_key, "operator-secret-123");
  assert.equal(whole.storage.backends[1].secret_access_key, "fast-secret-456");
  assert.equal(whole.advanced.bootstrap_password_hash, DOCUMENT.advanced.bootstrap_password_hash);
});

Deno.test("unknown section: 404 not_found on every route that names one", async () => {
  const { port, call } = setup();
  const routes: [string, string, unknown?][] = [
    ["GET", "/config/section/nope"],
    ["PUT", "/config/section/nope", {}],
    ["POST", "/config/section/nope/validate", {}],
    ["GET", "/config/export?section=nope"],
    ["GET", "/config/defaults?section=nope"],
  ];
  for (const [method, path, body] of routes) {
    const { status, json } = await call(method, path, body);
    assert.equal(status, 404, `${method} ${path}`);
    assert.equal(json.error, "not_found");
    assert.match(json.message, /Unknown config section "nope" \(expected one of admission/);
  }
  assert.equal(port.requests.length, 0);
});

Deno.test("GET /config/section?format=yaml: the same section as YAML", async () => {
  const { call } = setup();
  const json = await call("GET", "/config/section/storage");
  const yaml = await call("GET", "/config/section/storage?format=yaml");
  assert.equal(yaml.status, 200);
  assert.match(yaml.headers.get("content-type") ?? "", /^application\/yaml/);
  assert.deepEqual(parseYaml(yaml.text), json.json);
  assertNoSecret(yaml.text);
  const bad = await call("GET", "/config/section/storage?format=xml");
  assert.equal(bad.status, 400);
  assert.equal(bad.json.error, "bad_request");
});

Deno.test("validate routes are dry runs: apply is never called live, nothing changes", async () => {
  const { port, ring, call } = setup();
  const section = await call("POST", "/config/section/advanced/validate", { log_level: "debug" });
  assert.equal(section.status, 200, section.text);
  assert.equal(section.json.ok, true);
  assert.deepEqual(section.json.requires_restart, []);
  assert.ok(Array.isArray(section.json.warnings));
  const yaml = exportConfig(port.current()).replace("log_level: info", "log_level: warn");
  const whole = await call("POST", "/config/validate", { yaml });
  assert.equal(whole.status, 200, whole.text);
  assert.equal(whole.json.ok, true);
  assert.equal(whole.json.persisted, false);
  assert.equal(port.requests.length, 2);
  assert.ok(port.requests.every((request) => request.dryRun && !request.persist));
  assert.equal(port.current().advanced.log_level, "info");
  // An invalid document is a 422 on a validate route too, and audits nothing.
  const invalid = await call("POST", "/config/section/advanced/validate", { listen_addr: "x" });
  assert.equal(invalid.status, 422);
  assert.equal(invalid.json.error, "invalid_config");
  assert.equal(port.liveRequests.length, 0);
  assert.equal(ring.size, 0);
});

Deno.test("invalid document: 422 naming the field, nothing changed, the refusal audited", async () => {
  const { port, ring, call } = setup();
  const { status, json } = await call("PUT", "/config/section/advanced", { listen_addr: "nope" });
  assert.equal(status, 422);
  assert.equal(json.error, "invalid_config");
  assert.match(json.message, /advanced\.listen_addr: expected host:port, got "nope"/);
  assert.equal(port.current().advanced.listen_addr, "0.0.0.0:9000");
  assert.deepEqual(port.document().advanced, DOCUMENT.advanced);
  const [entry] = ring.snapshot();
  assert.equal(entry.event, "config_change_refused");
  assert.equal(entry.fields.user, "$bootstrap");
  assert.equal(entry.fields.ip, "198.51.100.7");
  assert.equal(entry.fields.section, "advanced");
  assert.equal(entry.fields.error, "invalid_config");
});

Deno.test("POST /config/apply: a YAML syntax error is a 422 naming the line", async () => {
  const { port, call } = setup();
  const yaml = "access:\n  access_key_id: AKIA\nstorage:\n  buckets: [unclosed\n";
  const { status, json } = await call("POST", "/config/apply", { yaml });
  assert.equal(status, 422);
  assert.equal(json.error, "invalid_config");
  assert.match(json.message, /line \d+/);
  assert.equal(port.requests.length, 0);
  const notString = await call("POST", "/config/apply", { yaml: 42 });
  assert.equal(notString.status, 400);
  const notJson = await call("POST", "/config/apply", "yaml: {");
  assert.equal(notJson.status, 400);
  assert.match(notJson.json.message, /not valid JSON/);
});

Deno.test("POST /config/apply: the body's placeholders are passed on unexpanded", async () => {
  const { port, call } = setup();
  Deno.env.set("SVC_TEST_PLACEHOLDER", "expanded-value");
  try {
    const yaml = exportConfig(port.current(), { includeSecrets: true }).replace(
      "access_key_id: AKIAOPERATOR",
      "access_key_id: ${env:SVC_TEST_PLACEHOLDER}",
    );
    const { status, text } = await call("POST", "/config/apply", { yaml });
    assert.equal(status, 200, text);
    const sent = port.requests[0].document as Doc;
    assert.equal(sent.access.access_key_id, "${env:SVC_TEST_PLACEHOLDER}");
  } finally {
    Deno.env.delete("SVC_TEST_PLACEHOLDER");
  }
});

Deno.test("persist failure: 500 persist_failed as the port throws it, nothing changed", async () => {
  const { port, ring, call } = setup();
  port.failPersist = true;
  const { status, json } = await call("PUT", "/config/section/advanced", { log_level: "debug" });
  assert.equal(status, 500);
  assert.equal(json.error, "persist_failed");
  assert.match(json.message, /read-only file system/);
  assert.equal(port.current().advanced.log_level, "info");
  assert.equal(ring.snapshot()[0].fields.error, "persist_failed");
});

Deno.test("GET /config/export: canonical YAML without secrets, whole or one section", async () => {
  const { port, call } = setup();
  const whole = await call("GET", "/config/export");
  assert.equal(whole.status, 200);
  assert.match(whole.headers.get("content-type") ?? "", /^application\/yaml/);
  assertNoSecret(whole.text);
  assert.equal(whole.text, exportConfig(port.current()));
  const storage = await call("GET", "/config/export?section=storage");
  assert.deepEqual(Object.keys(parseYaml(storage.text)), ["storage"]);
  assertNoSecret(storage.text);
});

Deno.test("GET /config/defaults: the JSON Schema, whole or one section", async () => {
  const { call } = setup();
  const whole = await call("GET", "/config/defaults");
  assert.equal(whole.status, 200);
  assert.equal(whole.json.title, "svc configuration");
  assert.ok(whole.json.properties.advanced);
  const advanced = await call("GET", "/config/defaults?section=advanced");
  assert.equal(advanced.json.title, "svc configuration: advanced");
  assert.equal(advanced.json.properties.listen_addr.default, "0.0.0.0:9000");
});

Deno.test("body size limit: 413 before anything is parsed or applied", async () => {
  const { port, call } = setup(DOCUMENT, 256);
  const { status, json } = await call("POST", "/config/apply", { yaml: "#".repeat(1000) });
  assert.equal(status, 413);
  assert.equal(json.error, "payload_too_large");
  assert.equal(port.requests.length, 0);
});

Deno.test("config trace: POST and GET say which block decided, over the running config", async () => {
  const { call } = setup({
    ...DOCUMENT,
    admission: {
      blocks: [{ name: "block-lab", match: { source_ip: "203.0.113.9" }, action: "deny" }],
    },
  });
  const posted = await call("POST", "/config/trace", {
    method: "GET",
    path: "/site/assets/a.css",
    source_ip: "203.0.113.9",
  });
  assert.equal(posted.status, 200, posted.text);
  assert.deepEqual(posted.json.decided_by, { name: "block-lab", action: "deny", index: 0 });
  assert.equal(posted.json.outcome, "deny");
  const anonymous = await call("GET", "/config/trace?method=GET&path=/site/assets/a.css");
  assert.equal(anonymous.json.decided_by.name, "public-prefix:site");
  assert.equal(anonymous.json.outcome, "anonymous");
  const signed = await call(
    "GET",
    "/config/trace?method=GET&path=/site/assets/a.css&authenticated=true",
  );
  assert.equal(signed.json.outcome, "authenticate");
  const none = await call("GET", "/config/trace?method=PUT&bucket=logs&key=x");
  assert.equal(none.json.explanation, "no block matched: falls through to authentication");
  const bad = await call("GET", "/config/trace?method=GET&path=/x&authenticated=maybe");
  assert.equal(bad.status, 400);
  const noPath = await call("POST", "/config/trace", { method: "GET" });
  assert.equal(noPath.status, 400);
  assert.match(noPath.json.message, /needs a path or a bucket/);
  const badIp = await call("POST", "/config/trace", { path: "/a", source_ip: "999.1.1.1" });
  assert.equal(badIp.status, 400);
});

Deno.test("config trace follows an applied change", async () => {
  const { call } = setup();
  const before = await call("GET", "/config/trace?path=/logs/x");
  assert.equal(before.json.decided_by, null);
  const put = await call("PUT", "/config/section/admission", {
    blocks: [{ name: "logs-off", match: { bucket: "logs" }, action: "deny" }],
  });
  assert.equal(put.status, 200, put.text);
  const after = await call("GET", "/config/trace?path=/logs/x");
  assert.equal(after.json.decided_by.name, "logs-off");
});

Deno.test("GET, edit, PUT writes only the edit: no defaults, placeholders and env values kept out", async () => {
  // The running config is the document with placeholders expanded and SVC_* overrides on top, as
  // the runtime builds it (the real loader functions).
  const env = { AKID: "AKIAEXPANDED", SVC_LOG_LEVEL: "debug" };
  const toRunning = (doc: Record<string, unknown>) => {
    const expanded = expandPlaceholders(doc, env) as Record<string, unknown>;
    applyEnvironment(expanded, env);
    return expanded;
  };
  const document = {
    access: { access_key_id: "${env:AKID}", secret_access_key: "operator-secret-123" },
    advanced: { log_level: "info" },
  };
  const { port, call } = setup(document, undefined, toRunning);
  assert.equal(port.current().advanced.log_level, "debug");

  const whole = await call("GET", "/config");
  assert.equal(whole.json.access.access_key_id, "AKIAEXPANDED");
  const unchanged = await call("PUT", "/config", whole.json);
  assert.equal(unchanged.status, 200, unchanged.text);
  assert.deepEqual(port.requests[0].document, document, "an echo changes nothing in the file");

  const section = (await call("GET", "/config/section/advanced")).json;
  section.listen_addr = "127.0.0.1:9100";
  const edited = await call("PUT", "/config/section/advanced", section);
  assert.equal(edited.status, 200, edited.text);
  assert.deepEqual(port.requests[1].document, {
    ...document,
    advanced: { log_level: "info", listen_addr: "127.0.0.1:9100" },
  });
});
