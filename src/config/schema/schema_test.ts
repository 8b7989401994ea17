/**
 * Table-driven tests of the configuration model: valid documents with their filled values,
 * invalid documents whose message must name the dotted path, and the cross-field rules
 * (exclusive single backend, public shorthand, default_backend clearing, encryption keys,
 * IAM records, admission blocks, replication/lifecycle rules).
 */
import assert from "node:assert/strict";
import {
  ConfigError,
  effectiveMaxTotalMultipartBytes,
  parseDuration,
  validateConfig,
  validateConfigWithWarnings,
} from "./schema.ts";

const KEY = "a".repeat(64);

function rejects(document: unknown, ...fragments: string[]): void {
  assert.throws(() => validateConfig(document), (err: unknown) => {
    assert.ok(err instanceof ConfigError, `expected ConfigError, got ${err}`);
    for (const fragment of fragments) {
      assert.ok(err.message.includes(fragment), `"${fragment}" not in: ${err.message}`);
    }
    return true;
  });
}

/** [description, document, fragments the message must contain (the path first)]. */
const INVALID: [string, unknown, string[]][] = [
  ["unknown bucket key", { storage: { buckets: { releases: { publc: true } } } }, [
    "storage.buckets.releases.publc: unknown key",
  ]],
  ["unknown section", { extras: {} }, ["extras: unknown key"]],
  ["unknown advanced key", { advanced: { listen: ":1" } }, ["advanced.listen: unknown key"]],
  ["public_prefixes not a list", { storage: { buckets: { x1y: { public_prefixes: "a/" } } } }, [
    "storage.buckets.x1y.public_prefixes: expected a list",
  ]],
  ["prefix with ..", { storage: { buckets: { abc: { public_prefixes: ["a/../b"] } } } }, [
    "storage.buckets.abc.public_prefixes.0",
  ]],
  ["prefix with //", { storage: { buckets: { abc: { public_prefixes: ["a//b"] } } } }, [
    "storage.buckets.abc.public_prefixes.0",
  ]],
  ["prefix with NUL", { storage: { buckets: { abc: { public_prefixes: ["a\0"] } } } }, [
    "storage.buckets.abc.public_prefixes.0",
  ]],
  ["public with prefixes", {
    storage: { buckets: { abc: { public: true, public_prefixes: ["x/"] } } },
  }, ["storage.buckets.abc.public", "cannot be combined"]],
  ["max_delta_ratio above 1", { storage: { buckets: { abc: { max_delta_ratio: 1.5 } } } }, [
    "storage.buckets.abc.max_delta_ratio",
  ]],
  ["unknown deltaspace policy", { storage: { buckets: { abc: { deltaspace: "folder" } } } }, [
    "storage.buckets.abc.deltaspace",
    "auto, parent or template",
  ]],
  ["template without {version}", {
    storage: { buckets: { abc: { deltaspace: "template:builds/*/app.zip" } } },
  }, ["storage.buckets.abc.deltaspace"]],
  ["unknown delta codec", { storage: { buckets: { abc: { delta_codec: "lzma" } } } }, [
    "storage.buckets.abc.delta_codec",
    "auto, xdelta3, zstd",
  ]],
  ["template with an empty pattern", {
    storage: { buckets: { abc: { deltaspace: "template:a/{version}/*;" } } },
  }, ["storage.buckets.abc.deltaspace"]],
  ["negative quota", { storage: { buckets: { abc: { quota_bytes: -1 } } } }, [
    "storage.buckets.abc.quota_bytes",
  ]],
  ["bad bucket name", { storage: { buckets: { AB: {} } } }, ["storage.buckets.AB"]],
  ["bucket backend unknown", {
    storage: {
      backends: [{ name: "a", type: "filesystem", path: "/a" }],
      buckets: { abc: { backend: "b" } },
    },
  }, ["storage.buckets.abc.backend", "unknown backend"]],
  ["s3 shorthand without scheme", { storage: { s3: "minio:9000" } }, [
    "storage.s3",
    "http://",
  ]],
  ["s3 and filesystem", { storage: { s3: "http://m", filesystem: "/d" } }, [
    "storage: only one of backend / s3 / filesystem",
  ]],
  ["companion without s3", { storage: { region: "eu-west-1" } }, ["storage.region"]],
  ["duplicate backend names", {
    storage: {
      backends: [{ name: "a", type: "filesystem", path: "/a" }, {
        name: "a",
        type: "filesystem",
        path: "/b",
      }],
    },
  }, ["storage.backends.1.name", "duplicate"]],
  ["filesystem backend without path", {
    storage: { backends: [{ name: "a", type: "filesystem" }] },
  }, [
    "storage.backends.0.path",
  ]],
  ["backend name pattern", { storage: { backends: [{ name: "a b", type: "s3" }] } }, [
    "storage.backends.0.name",
  ]],
  ["uppercase hex key", {
    storage: { backend_encryption: { mode: "aes256-gcm-proxy", key: KEY.toUpperCase() } },
  }, [
    "storage.backend_encryption.key",
    "64 lowercase hex",
  ]],
  ["short key", { storage: { backend_encryption: { key: "abcd" } } }, [
    "storage.backend_encryption.key",
  ]],
  ["aes without key", { storage: { backend_encryption: { mode: "aes256-gcm-proxy" } } }, [
    "storage.backend_encryption.key",
    "SVC_ENCRYPTION_KEY",
  ]],
  ["named backend aes without key", {
    storage: { backends: [{ name: "eu-1", type: "s3", encryption: { mode: "aes256-gcm-proxy" } }] },
  }, ["storage.backends.0.encryption.key", "SVC_BACKEND_EU_1_ENCRYPTION_KEY"]],
  ["bad key_id", { storage: { backend_encryption: { key_id: "a/b" } } }, [
    "storage.backend_encryption.key_id",
  ]],
  ["bad mode", { storage: { backend_encryption: { mode: "rot13" } } }, [
    "storage.backend_encryption.mode",
  ]],
  ["admission reserved name", {
    admission: { blocks: [{ name: "public-prefix:x", action: "deny" }] },
  }, ["admission.blocks.0.name", "reserved"]],
  ["admission bad name", { admission: { blocks: [{ name: "a b", action: "deny" }] } }, [
    "admission.blocks.0.name",
  ]],
  ["admission long name", { admission: { blocks: [{ name: "a".repeat(129), action: "deny" }] } }, [
    "admission.blocks.0.name",
  ]],
  ["admission duplicate", {
    admission: { blocks: [{ name: "a", action: "deny" }, { name: "a", action: "continue" }] },
  }, ["admission.blocks.1.name", "duplicate"]],
  ["admission method", {
    admission: { blocks: [{ name: "a", action: "deny", match: { method: ["FETCH"] } }] },
  }, ["admission.blocks.0.match.method.0"]],
  ["admission source_ip and list", {
    admission: {
      blocks: [{ name: "a", action: "deny", match: { source_ip: "1.2.3.4", source_ip_list: [] } }],
    },
  }, ["admission.blocks.0.match.source_ip_list", "exclusive"]],
  ["admission bad ip", {
    admission: { blocks: [{ name: "a", action: "deny", match: { source_ip: "1.2.3.256" } }] },
  }, ["admission.blocks.0.match.source_ip"]],
  ["admission bad cidr", {
    admission: {
      blocks: [{ name: "a", action: "deny", match: { source_ip_list: ["10.0.0.0/33"] } }],
    },
  }, ["admission.blocks.0.match.source_ip_list.0"]],
  ["admission list too long", {
    admission: {
      blocks: [{
        name: "a",
        action: "deny",
        match: { source_ip_list: Array.from({ length: 4097 }, () => "10.0.0.1") },
      }],
    },
  }, ["admission.blocks.0.match.source_ip_list", "4096"]],
  ["admission bad action", { admission: { blocks: [{ name: "a", action: "allow" }] } }, [
    "admission.blocks.0.action",
  ]],
  ["admission reject status", {
    admission: { blocks: [{ name: "a", action: { type: "reject", status: 302 } }] },
  }, ["admission.blocks.0.action.status"]],
  ["iam $ name", {
    access: { iam_users: [{ name: "$anonymous", access_key_id: "AK" }] },
  }, ["access.iam_users.0.name", "reserved"]],
  ["iam unknown variable", {
    access: {
      iam_groups: [{
        name: "g",
        permissions: [{ actions: ["read"], resources: ["b/${username}/*"] }],
      }],
    },
  }, ["access.iam_groups.0.permissions.0.resources.0", "${username}"]],
  ["iam unknown group", {
    access: {
      iam_mode: "declarative",
      iam_users: [{ name: "u", access_key_id: "AK", groups: ["ghost"] }],
    },
  }, ["access.iam_users.0.groups.0", "ghost"]],
  ["iam duplicate key", {
    access: {
      iam_users: [{ name: "u", access_key_id: "AK" }, { name: "v", access_key_id: "AK" }],
    },
  }, ["access.iam_users.1.access_key_id", "duplicate"]],
  ["mapping rule unknown provider", {
    access: {
      iam_mode: "declarative",
      iam_groups: [{ name: "g" }],
      group_mapping_rules: [{ provider: "okta", match_value: "x.com", group: "g" }],
    },
  }, ["access.group_mapping_rules.0.provider", "okta"]],
  ["external identities rejected", { access: { external_identities: [] } }, [
    "access.external_identities: unknown key",
  ]],
  ["replication heartbeat >= lease", {
    storage: { replication: { lease_ttl: "30s", heartbeat_interval: "30s" } },
  }, ["storage.replication.heartbeat_interval"]],
  ["replication tick below min", { storage: { replication: { tick_interval: "1s" } } }, [
    "storage.replication.tick_interval",
    "at least 5s",
  ]],
  ["replication rule interval", {
    storage: {
      replication: {
        rules: [{
          name: "r",
          source: { bucket: "a" },
          destination: { bucket: "b" },
          interval: "10s",
        }],
      },
    },
  }, ["storage.replication.rules.0.interval"]],
  ["replication rule name", {
    storage: {
      replication: {
        rules: [{ name: "r r", source: { bucket: "a" }, destination: { bucket: "b" } }],
      },
    },
  }, ["storage.replication.rules.0.name"]],
  ["replication batch size", {
    storage: {
      replication: {
        rules: [{
          name: "r",
          source: { bucket: "a" },
          destination: { bucket: "b" },
          batch_size: 0,
        }],
      },
    },
  }, ["storage.replication.rules.0.batch_size"]],
  ["lifecycle tick", { storage: { lifecycle: { tick_interval: "30s" } } }, [
    "storage.lifecycle.tick_interval",
  ]],
  ["lifecycle delete without expire_after", {
    storage: { lifecycle: { rules: [{ name: "l", bucket: "b", action: "delete" }] } },
  }, ["storage.lifecycle.rules.0.expire_after"]],
  ["lifecycle bad duration", {
    storage: {
      lifecycle: { rules: [{ name: "l", bucket: "b", action: "delete", expire_after: "soon" }] },
    },
  }, ["storage.lifecycle.rules.0.expire_after", "duration"]],
  ["retain-newest count", {
    storage: {
      lifecycle: {
        rules: [{ name: "l", bucket: "b", action: { type: "retain-newest", count: 0 } }],
      },
    },
  }, ["storage.lifecycle.rules.0.action"]],
  ["advanced upload concurrency", { advanced: { upload_concurrency: 17 } }, [
    "advanced.upload_concurrency",
  ]],
  ["advanced replication transfers", { advanced: { replication_transfers: 0 } }, [
    "advanced.replication_transfers",
  ]],
  ["advanced probe", { advanced: { boot_backend_probe: "maybe" } }, [
    "advanced.boot_backend_probe",
  ]],
  ["advanced max_delta_ratio", { advanced: { max_delta_ratio: -0.1 } }, [
    "advanced.max_delta_ratio",
  ]],
  ["tls half", { advanced: { tls: { cert_path: "/c" } } }, ["advanced.tls.key_path"]],
  ["events enabled without url", { advanced: { event_delivery: { enabled: true } } }, [
    "advanced.event_delivery.webhook_url",
  ]],
  ["slack bot without channel", {
    advanced: { event_delivery: { format: "slack", slack_bot_token: "xoxb" } },
  }, ["advanced.event_delivery.slack_channel"]],
  ["events bad duration", { advanced: { event_delivery: { retry_max: "5 parsecs" } } }, [
    "advanced.event_delivery.retry_max",
  ]],
  ["delivery without the outbox", {
    advanced: { event_delivery: { enabled: true, outbox: false, webhook_url: "http://h" } },
  }, ["advanced.event_delivery.outbox"]],
];

for (const [description, document, fragments] of INVALID) {
  Deno.test(`invalid: ${description}`, () => rejects(document, ...fragments));
}

Deno.test("a full valid document loads with its values and defaults", () => {
  const { config, warnings } = validateConfigWithWarnings({
    admission: {
      blocks: [
        {
          name: "office",
          match: {
            method: ["get", "Head"],
            source_ip_list: ["10.0.0.0/8", "::1", "192.168.1.7"],
            bucket: "Releases",
          },
          action: "allow-anonymous",
        },
        {
          name: "maint",
          match: { config_flag: "maintenance_mode" },
          action: { type: "reject", status: 503, message: "later" },
        },
        { name: "rest", action: "continue" },
      ],
    },
    access: {
      iam_mode: "declarative",
      access_key_id: "AKBOOT",
      secret_access_key: "s",
      iam_groups: [{
        name: "readers",
        permissions: [{ actions: ["read", "list"], resources: ["releases/${iam:username}/*"] }],
      }],
      iam_users: [{
        name: "alice",
        access_key_id: "AKALICE",
        secret_access_key: "x",
        groups: ["readers"],
      }],
      auth_providers: [{ name: "okta", client_id: "c", issuer_url: "https://okta.example" }],
      group_mapping_rules: [{ provider: "okta", match_value: "example.com", group: "readers" }],
    },
    storage: {
      backends: [
        { name: "local", type: "filesystem", path: "/srv/a" },
        {
          name: "eu.s3",
          type: "s3",
          endpoint: "https://s3.eu",
          encryption: { mode: "aes256-gcm-proxy", key: KEY, key_id: "k1" },
        },
      ],
      default_backend: "local",
      buckets: {
        releases: { public: true, backend: "eu.s3", quota_bytes: 10, max_delta_ratio: 0.5 },
        "docs.v2": { public_prefixes: ["pub/"], compression: false, deltaspace: "parent" },
        nightly: {
          deltaspace: "template:nightly/{version}/**;b/{version}/*",
          delta_codec: "xdelta3",
        },
      },
      replication: {
        rules: [{
          name: "mirror",
          source: { bucket: "releases" },
          destination: { bucket: "copy" },
        }],
      },
      lifecycle: {
        enabled: true,
        rules: [
          { name: "old", bucket: "releases", action: "delete", expire_after: "30d" },
          {
            name: "keep5",
            bucket: "releases",
            action: { type: "retain-newest", count: 5, qualify: { min_age: "1h" } },
          },
          {
            name: "arch",
            bucket: "releases",
            action: { type: "archive", destination: { bucket: "cold" } },
            expire_after: "7d",
          },
        ],
      },
    },
    advanced: {
      parity_head_concurrency: 500,
      parity_max_objects: 5,
      multipart_part_size: 1,
      stream_copy_threshold: 0,
    },
  });
  assert.deepEqual(warnings, []);
  const [office, maint] = config.admission.blocks;
  assert.deepEqual(office.match.method, ["GET", "HEAD"]);
  assert.equal(office.match.bucket, "releases");
  assert.deepEqual(office.match.source_ip_list, ["10.0.0.0/8", "::1", "192.168.1.7"]);
  assert.deepEqual(maint.action, { type: "reject", status: 503, message: "later" });
  assert.equal(config.access.iam_users?.[0].enabled, true);
  assert.equal(config.access.auth_providers?.[0].scopes, "openid email profile");
  const releases = config.storage.buckets.releases;
  assert.deepEqual(releases.public_prefixes, [""], "public: true folds into the empty prefix");
  assert.equal("public" in releases, false);
  assert.equal(releases.replication_target_only, false);
  assert.equal(config.storage.default_backend, "local");
  assert.equal(config.storage.replication.rules[0].interval, "24h");
  assert.equal(config.storage.replication.rules[0].conflict, "newer-wins");
  assert.equal(
    config.storage.lifecycle.rules[2].action !== "delete" &&
      config.storage.lifecycle.rules[2].action.type,
    "archive",
  );
  assert.equal(config.advanced.parity_head_concurrency, 64, "clamped to 64");
  assert.equal(config.advanced.parity_max_objects, 1000, "floored at 1000");
  assert.equal(config.advanced.multipart_part_size, 5 * 1024 * 1024, "clamped to 5 MiB");
  assert.equal(config.advanced.stream_copy_threshold, 1, "floored at 1");
  // A validated config validates again to itself.
  assert.deepEqual(validateConfig(structuredClone(config)), config);
});

Deno.test("defaults of the new advanced fields", () => {
  const { advanced, storage, admission } = validateConfig({});
  assert.equal(advanced.max_delta_ratio, 0.75);
  assert.equal(advanced.cache_size_mb, 100);
  assert.equal(advanced.metadata_cache_mb, 50);
  assert.ok(advanced.codec_concurrency >= 16);
  assert.equal(advanced.max_passthrough_object_size, 64 * 1024 ** 3);
  assert.equal(advanced.max_total_multipart_bytes, undefined);
  // max_object_size x max uploads / 4 (25 GiB) is raised so one 64 GiB multipart object fits.
  assert.equal(effectiveMaxTotalMultipartBytes(advanced), 64 * 1024 ** 3);
  const wide = validateConfig({ advanced: { max_object_size: 1024 ** 3 } }).advanced;
  assert.equal(effectiveMaxTotalMultipartBytes(wide), 1024 ** 3 * 1000 / 4);
  const small = validateConfig({
    advanced: { max_object_size: 100, max_multipart_uploads: 8, max_passthrough_object_size: 150 },
  }).advanced;
  assert.equal(effectiveMaxTotalMultipartBytes(small), 200);
  const set = validateConfig({ advanced: { max_total_multipart_bytes: 7 } }).advanced;
  assert.equal(effectiveMaxTotalMultipartBytes(set), 7);
  assert.equal(advanced.boot_backend_probe, "enforce");
  assert.equal(advanced.secure_cookies, "auto");
  for (const value of [true, false, "auto"] as const) {
    assert.equal(
      validateConfig({ advanced: { secure_cookies: value } }).advanced.secure_cookies,
      value,
    );
  }
  assert.throws(
    () => validateConfig({ advanced: { secure_cookies: "sometimes" } }),
    /secure_cookies.*expected true, false or auto, got "sometimes"/,
  );
  assert.deepEqual(advanced.tls, { enabled: false });
  assert.equal(advanced.event_delivery.enabled, false);
  assert.deepEqual(storage.backends, []);
  assert.deepEqual(storage.buckets, {});
  assert.equal(storage.lifecycle.enabled, false);
  assert.equal(storage.lifecycle.tick_interval, "1h");
  assert.equal(storage.replication.lease_ttl, "5m");
  assert.deepEqual(admission, { blocks: [] });
});

Deno.test("an invalid default_backend is cleared with a warning, not an error", () => {
  const { config, warnings } = validateConfigWithWarnings({
    storage: { backends: [{ name: "a", type: "filesystem", path: "/a" }], default_backend: "zzz" },
  });
  assert.equal(config.storage.default_backend, undefined);
  assert.equal(warnings.length, 1);
  assert.match(warnings[0], /^storage\.default_backend: "zzz"/);
  assert.match(warnings[0], /cleared/);
});

Deno.test("advanced.encryption_key is ignored with a warning", () => {
  const { config, warnings } = validateConfigWithWarnings({
    advanced: { encryption_key: KEY, max_object_size: 5 },
  });
  assert.equal(config.advanced.max_object_size, 5);
  assert.equal("encryption_key" in config.advanced, false);
  assert.match(warnings.join("\n"), /advanced\.encryption_key is ignored/);
});

Deno.test("encryption blocks accept the documented key shapes", () => {
  const config = validateConfig({
    storage: {
      backend_encryption: {
        mode: "aes256-gcm-proxy",
        key: KEY,
        key_id: "key-2024.v1",
        legacy_key: "0123456789abcdef".repeat(4),
        legacy_key_id: "old",
      },
      backends: [{
        name: "k",
        type: "s3",
        encryption: { mode: "sse-kms", kms_key_id: "alias/x", bucket_key_enabled: true },
      }],
    },
  });
  assert.equal(config.storage.backend_encryption?.key, KEY);
  assert.equal(config.storage.backends[0].encryption?.mode, "sse-kms");
  assert.equal(
    validateConfig({ storage: { backend_encryption: {} } }).storage.backend_encryption?.mode,
    "none",
  );
});

Deno.test("public: false and public_prefixes combine; public with empty prefixes is fine", () => {
  const config = validateConfig({
    storage: {
      buckets: {
        abc: { public: false, public_prefixes: ["a/"] },
        def: { public: true, public_prefixes: [] },
      },
    },
  });
  assert.deepEqual(config.storage.buckets.abc.public_prefixes, ["a/"]);
  assert.deepEqual(config.storage.buckets.def.public_prefixes, [""]);
});

Deno.test("IAM templates: only ${iam:username} and ${iam:access_key_id}", () => {
  const permission = (resource: string) => ({
    access: {
      iam_groups: [{ name: "g", permissions: [{ actions: ["*"], resources: [resource] }] }],
    },
  });
  validateConfig(permission("b/${iam:username}/${iam:access_key_id}/*"));
  rejects(permission("b/${aws:username}"), "access.iam_groups.0.permissions.0.resources.0");
  rejects(
    {
      access: {
        iam_groups: [{
          name: "g",
          permissions: [{
            actions: ["*"],
            resources: ["*"],
            conditions: { StringLike: { "s3:prefix": "${user}" } },
          }],
        }],
      },
    },
    "access.iam_groups.0.permissions.0.conditions.StringLike.s3:prefix",
  );
});

Deno.test("references are only checked in declarative mode", () => {
  validateConfig({
    access: { iam_users: [{ name: "u", access_key_id: "AK", groups: ["in-db"] }] },
  });
});

Deno.test("parseDuration understands humantime", () => {
  assert.equal(parseDuration("30s"), 30);
  assert.equal(parseDuration("5m"), 300);
  assert.equal(parseDuration("24h"), 86400);
  assert.equal(parseDuration("7d"), 604800);
  assert.equal(parseDuration("1h 30m"), 5400);
  assert.equal(parseDuration("500ms"), 0.5);
  assert.equal(parseDuration("2 days"), 172800);
  for (const bad of ["", "30", "5x", "h", "1h junk", "-5s"]) {
    assert.equal(parseDuration(bad), null, bad);
  }
});

Deno.test("schema: a malformed bootstrap password hash is a validation error naming the key", () => {
  const hash = "$2b$04$/M04MqciaDk2C.yCWs2lnOEtEe1b.BLR11Xkb9vwOGzree2zQuD5S";
  const ok = validateConfig({
    access: { authentication: "none" },
    advanced: { bootstrap_password_hash: hash },
  });
  assert.equal(ok.advanced.bootstrap_password_hash, hash);
  validateConfig({
    access: { authentication: "none" },
    advanced: { bootstrap_password_hash: btoa(hash) },
  });
  assert.throws(
    () =>
      validateConfig({
        access: { authentication: "none" },
        advanced: { bootstrap_password_hash: "plaintext-password" },
      }),
    /advanced\.bootstrap_password_hash: expected a bcrypt hash/,
  );
});
