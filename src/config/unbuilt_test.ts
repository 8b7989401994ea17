import assert from "node:assert/strict";
import { buildConfig } from "./load.ts";
import { unbuiltSettings } from "./unbuilt.ts";

const env = {};

Deno.test("unbuilt settings: a default configuration warns about nothing", () => {
  const { config } = buildConfig({ access: { authentication: "none" } }, { env });
  assert.deepEqual(unbuiltSettings(config, {}), []);
});

Deno.test("unbuilt settings: each one the operator sets is named with what really happens", () => {
  const document = {
    access: {
      authentication: "none",
      iam_users: [{ name: "ann", access_key_id: "AKIAANN0000000000000", secret_access_key: "s" }],
    },
    storage: {
      filesystem: "./data",
      backend_encryption: { mode: "aes256-gcm-proxy", key: "a".repeat(64) },
    },
    advanced: {
      tls: { enabled: true },
      max_total_multipart_bytes: 1024,
      max_passthrough_object_size: 4096,
      blocking_threads: 8,
    },
  };
  const { config, warnings } = buildConfig(document, { env });
  const found = unbuiltSettings(config, document);
  assert.ok(found.some((w) => w.startsWith("access.iam_users:") && /ignored/.test(w)));
  // Encryption at rest is built (storage/encryption/): no warning for it.
  assert.ok(!found.some((w) => w.startsWith("storage.backend_encryption")));
  // TLS is built (http/tls-material.ts): no warning for it.
  assert.ok(!found.some((w) => w.startsWith("advanced.tls")));
  assert.ok(!found.some((w) => w.startsWith("advanced.max_total_multipart_bytes")), "built");
  assert.ok(!found.some((w) => w.startsWith("advanced.max_passthrough_object_size")), "built");
  assert.ok(found.some((w) => w.startsWith("advanced.blocking_threads:")));
  for (const warning of found) assert.ok(warnings.includes(warning), "load reports it too");
});

Deno.test("unbuilt settings: encryption blocks, of any mode, are not a warning", () => {
  const document = {
    access: { authentication: "none" },
    storage: {
      backends: [
        { name: "a", type: "filesystem", path: "./a", encryption: { mode: "none" } },
        {
          name: "b",
          type: "filesystem",
          path: "./b",
          encryption: { mode: "aes256-gcm-proxy", key: "b".repeat(64) },
        },
        { name: "c", type: "s3", endpoint: "http://s3", encryption: { mode: "sse-s3" } },
      ],
    },
  };
  const { config } = buildConfig(document, { env });
  assert.deepEqual(unbuiltSettings(config, document), []);
});

Deno.test("unbuilt settings: declarative IAM lists and OIDC providers are built", () => {
  const document = {
    access: {
      authentication: "none",
      iam_mode: "declarative",
      iam_groups: [{ name: "team" }],
      iam_users: [{ name: "ann", access_key_id: "AKIAANN0000000000000", secret_access_key: "s" }],
      auth_providers: [{ name: "idp", client_id: "c", issuer_url: "https://idp.example" }],
    },
  };
  const { config } = buildConfig(document, { env });
  const found = unbuiltSettings(config, document);
  assert.equal(found.some((w) => /^access\.(iam_mode|iam_users|iam_groups)/.test(w)), false);
  assert.ok(!found.some((w) => w.startsWith("access.auth_providers")), "OIDC login is built");

  const gui = { access: { ...document.access, iam_mode: "gui" } };
  const inGui = unbuiltSettings(buildConfig(gui, { env }).config, gui);
  assert.ok(inGui.some((w) => /^access\.iam_users: ignored while access\.iam_mode is gui/.test(w)));
});

Deno.test("unbuilt settings: lifecycle rules run (jobs/lifecycle/): no warning", () => {
  const document = {
    access: { authentication: "none" },
    storage: {
      lifecycle: {
        enabled: true,
        rules: [{ name: "l", enabled: true, bucket: "b", action: "delete", expire_after: "1d" }],
      },
    },
  };
  const { config } = buildConfig(document, { env });
  assert.equal(
    unbuiltSettings(config, document).some((w) => w.startsWith("storage.lifecycle")),
    false,
  );
});

Deno.test("unbuilt settings: replication rules and their knobs are built and never warn", () => {
  const document = {
    access: { authentication: "none" },
    storage: {
      replication: {
        rules: [{ name: "r", source: { bucket: "a" }, destination: { bucket: "b" } }],
      },
    },
    advanced: { parity_head_concurrency: 8, parity_max_objects: 5000, replication_transfers: 8 },
  };
  const { config } = buildConfig(document, { env });
  assert.deepEqual(unbuiltSettings(config, document), []);
});
