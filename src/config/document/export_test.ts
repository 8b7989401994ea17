/**
 * Canonical export: defaults omitted deeply, secrets stripped (omitted), `public: true` collapse,
 * per-section export, and the fixed point `export(validate(parse(export(c)))) === export(c)`.
 * Documents that use fields the schema does not know yet still validate (unknown keys are either
 * accepted or stripped), so these tests hold while the schema grows.
 */
import assert from "node:assert/strict";
import { parse } from "yaml";
import { ConfigError, validateConfig } from "../schema/schema.ts";
import { exportConfig, exportDocument } from "./export.ts";

const LEAK = "LEAKED-SECRET-0123456789";

/** validate, export, parse, validate, export: both exports must be identical. */
function assertFixedPoint(document: unknown): string {
  const first = exportConfig(validateConfig(document));
  const second = exportConfig(validateConfig(parse(first)));
  assert.equal(second, first, `export is not a fixed point for ${JSON.stringify(document)}`);
  return first;
}

Deno.test("export: an all-default configuration exports as an empty document", () => {
  assert.deepEqual(parse(exportConfig(validateConfig({}))), {});
  const spelledOut = {
    access: { iam_mode: "gui" },
    advanced: { listen_addr: "0.0.0.0:9000", request_timeout_secs: 300, log_format: "text" },
    storage: {},
  };
  assert.deepEqual(parse(exportConfig(validateConfig(spelledOut))), {});
});

Deno.test("export: keeps non-default values, drops defaults deeply", () => {
  const config = validateConfig({
    access: { iam_mode: "declarative", access_key_id: "AKIAEXAMPLE" },
    storage: {
      backend: { type: "s3", endpoint: "http://minio:9000", region: "us-east-1" },
    },
    advanced: { listen_addr: "127.0.0.1:9100", max_concurrent_requests: 1024, debug_headers: true },
  });
  assert.deepEqual(exportDocument(config), {
    access: { iam_mode: "declarative", access_key_id: "AKIAEXAMPLE" },
    storage: { backend: { type: "s3", endpoint: "http://minio:9000" } },
    advanced: { listen_addr: "127.0.0.1:9100", debug_headers: true },
  });
});

Deno.test("export: a non-default nested value survives (force_path_style false)", () => {
  const doc = exportDocument(validateConfig({
    storage: { backend: { type: "s3", endpoint: "http://x", force_path_style: false } },
  }));
  assert.deepEqual(doc, {
    storage: { backend: { type: "s3", endpoint: "http://x", force_path_style: false } },
  });
});

Deno.test("export: secrets are stripped (omitted) wherever they appear", () => {
  const config = validateConfig({
    access: { access_key_id: "AKIAEXAMPLE", secret_access_key: LEAK },
    storage: {
      backend: {
        type: "s3",
        endpoint: "http://x",
        access_key_id: "backend-id",
        secret_access_key: LEAK,
      },
    },
  });
  // Fields the schema may not model yet are injected after validation: the walk still strips them.
  const withMore = structuredClone(config) as Record<string, Record<string, unknown>>;
  withMore.advanced.bootstrap_password_hash = LEAK;
  withMore.storage.backend_encryption = { mode: "aes256-gcm-proxy", key: LEAK, key_id: "k1" };
  withMore.storage.backends = [{
    name: "kms",
    type: "s3",
    encryption: { mode: "sse-kms", kms_key_id: LEAK, legacy_key: LEAK, legacy_key_id: "old" },
  }];
  withMore.access.auth_providers = [{ name: "idp", client_id: "id", client_secret: LEAK }];
  withMore.advanced.event_delivery = {
    format: "slack",
    slack_bot_token: LEAK,
    slack_channel: "#x",
    webhook_secret: LEAK,
  };
  const yaml = exportConfig(withMore as never);
  assert.ok(!yaml.includes(LEAK), yaml);
  const doc = parse(yaml);
  assert.equal(doc.access.access_key_id, "AKIAEXAMPLE");
  assert.equal(doc.storage.backend.access_key_id, "backend-id");
  assert.ok(!("secret_access_key" in doc.access));
  assert.deepEqual(doc.storage.backend_encryption, { mode: "aes256-gcm-proxy", key_id: "k1" });
  assert.deepEqual(doc.storage.backends[0].encryption, { mode: "sse-kms", legacy_key_id: "old" });
  assert.deepEqual(doc.access.auth_providers, [{ name: "idp", client_id: "id" }]);
  assert.deepEqual(doc.advanced.event_delivery, { format: "slack", slack_channel: "#x" });
  // `key` is only a secret inside an encryption block.
  const other = structuredClone(config) as Record<string, Record<string, unknown>>;
  other.advanced.tls = { key_path: "/k", key: "not-a-secret" };
  assert.deepEqual(parse(exportConfig(other as never)).advanced.tls, {
    key_path: "/k",
    key: "not-a-secret",
  });
});

Deno.test("export: includeSecrets keeps them", () => {
  const config = validateConfig({ access: { access_key_id: "a", secret_access_key: LEAK } });
  assert.ok(exportConfig(config, { includeSecrets: true }).includes(LEAK));
});

Deno.test('export: public_prefixes [""] collapses to public: true', () => {
  const config = validateConfig({}) as unknown as Record<string, Record<string, unknown>>;
  config.storage.buckets = {
    site: { public_prefixes: [""], quota_bytes: 5 },
    both: { public: true, public_prefixes: [""] },
    dirs: { public_prefixes: ["public/"] },
    plain: {},
    conflicting: { public: false, public_prefixes: [""] },
  };
  const doc = parse(exportConfig(config as never));
  assert.deepEqual(doc.storage.buckets, {
    site: { public: true, quota_bytes: 5 },
    both: { public: true },
    dirs: { public_prefixes: ["public/"] },
    plain: {},
    conflicting: { public: false, public_prefixes: [""] },
  });
});

Deno.test("export: per-section export wraps one section; unknown sections throw", () => {
  const config = validateConfig({
    access: { iam_mode: "declarative" },
    advanced: { listen_addr: ":9", debug_headers: true },
  });
  assert.deepEqual(parse(exportConfig(config, { section: "advanced" })), {
    advanced: { listen_addr: ":9", debug_headers: true },
  });
  assert.deepEqual(parse(exportConfig(config, { section: "access" })), {
    access: { iam_mode: "declarative" },
  });
  assert.deepEqual(parse(exportConfig(config, { section: "storage" })), {});
  assert.throws(() => exportConfig(config, { section: "bogus" }), ConfigError);
});

Deno.test("export: fixed point over documents covering every section", () => {
  const documents: unknown[] = [
    {},
    { access: { authentication: "none" } },
    {
      access: { iam_mode: "declarative", access_key_id: "AKIA1", secret_access_key: LEAK },
      storage: {
        backend: { type: "s3", endpoint: "https://s3.example.com", region: "eu-west-1" },
      },
      advanced: {
        listen_addr: "[::1]:9443",
        log_level: "warn",
        max_object_size: 0,
        log_format: "json",
        ready_cache_ttl_secs: 10,
      },
      admission: {
        blocks: [{
          name: "deny-net",
          match: { source_ip_list: ["203.0.113.0/24"] },
          action: "deny",
        }],
      },
    },
    { storage: { filesystem: "/srv/data" }, advanced: { trust_proxy_headers: true } },
    {
      storage: { backend: { type: "filesystem", path: "./data" } },
      admission: {
        blocks: [{ name: "r", action: { type: "reject", status: 503, message: "down" } }],
      },
    },
    {
      access: {
        iam_mode: "declarative",
        iam_groups: [{
          name: "readers",
          permissions: [{ effect: "Allow", actions: ["read"], resources: ["*"] }],
        }],
        iam_users: [{
          name: "alice",
          access_key_id: "alice-key",
          secret_access_key: LEAK,
          groups: ["readers"],
        }],
      },
      storage: {
        backends: [
          { name: "local", type: "filesystem", path: "./data" },
          {
            name: "remote",
            type: "s3",
            endpoint: "https://s3.example.com",
            secret_access_key: LEAK,
          },
        ],
        default_backend: "local",
        buckets: {
          site: { public: true },
          docs: { public_prefixes: ["public/"], quota_bytes: 1024, backend: "remote" },
          plain: {},
        },
      },
      advanced: {
        tls: { enabled: true },
        event_delivery: { enabled: true, webhook_url: "https://hook" },
      },
    },
  ];
  for (const document of documents) {
    const yaml = assertFixedPoint(document);
    assert.ok(!yaml.includes(LEAK));
  }
  const rich = parse(exportConfig(validateConfig(documents[documents.length - 1])));
  assert.ok(
    rich.storage === undefined || rich.storage.buckets === undefined ||
      rich.storage.buckets.site.public === true,
  );
});

Deno.test("export: output is deterministic (schema order, not input order)", () => {
  const a = exportConfig(validateConfig({
    advanced: { debug_headers: true, listen_addr: ":1" },
    access: { authentication: "none" },
  }));
  const b = exportConfig(validateConfig({
    access: { authentication: "none" },
    advanced: { listen_addr: ":1", debug_headers: true },
  }));
  assert.equal(a, b);
});
