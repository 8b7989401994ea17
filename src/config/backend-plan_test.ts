import assert from "node:assert/strict";
import { buildConfig } from "./load.ts";
import { backendFingerprint, backendPlanOf } from "./backend-plan.ts";

const KEY_A = "a1".repeat(32);
const KEY_B = "b2".repeat(32);

function config(encryption: Record<string, unknown> | undefined) {
  const document = {
    access: { authentication: "none" },
    storage: {
      backends: [{ name: "v", type: "filesystem", path: "./v", ...(encryption && { encryption }) }],
    },
  };
  return buildConfig(document, { env: {} }).config;
}

Deno.test("backend plan: each backend carries its encryption block, the single one too", () => {
  const named = backendPlanOf(config({ mode: "aes256-gcm-proxy", key: KEY_A }));
  assert.equal(named.specs[0].encryption?.mode, "aes256-gcm-proxy");
  const single = buildConfig({
    access: { authentication: "none" },
    storage: { filesystem: "./d", backend_encryption: { mode: "aes256-gcm-proxy", key: KEY_A } },
  }, { env: {} }).config;
  assert.equal(backendPlanOf(single).specs[0].encryption?.key, KEY_A);
});

Deno.test("backend fingerprint: an encryption change rebuilds storage; no key shows in it", () => {
  const prints = [
    backendFingerprint(config(undefined)),
    backendFingerprint(config({ mode: "aes256-gcm-proxy", key: KEY_A })),
    backendFingerprint(config({ mode: "aes256-gcm-proxy", key: KEY_B })),
    backendFingerprint(config({ mode: "aes256-gcm-proxy", key: KEY_B, legacy_key: KEY_A })),
  ];
  assert.equal(new Set(prints).size, prints.length);
  assert.equal(prints[1], backendFingerprint(config({ mode: "aes256-gcm-proxy", key: KEY_A })));
  for (const print of prints) assert.ok(!print.includes(KEY_A) && !print.includes("a1a1"));
});

Deno.test("backend fingerprint: the S3 clients' settings rebuild storage, others do not", () => {
  const withAdvanced = (advanced: Record<string, unknown>) =>
    buildConfig({
      access: { authentication: "none" },
      storage: { filesystem: "./v" },
      advanced,
    }, { env: {} }).config;
  const base = backendFingerprint(withAdvanced({}));
  for (
    const changed of [
      { upload_concurrency: 9 },
      { s3_read_timeout_secs: 7 },
      { multipart_part_size: 8 * 1024 * 1024 },
    ]
  ) {
    assert.notEqual(backendFingerprint(withAdvanced(changed)), base, JSON.stringify(changed));
  }
  assert.equal(backendFingerprint(withAdvanced({ max_delta_ratio: 0.5 })), base);
});
