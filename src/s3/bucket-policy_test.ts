import assert from "node:assert/strict";
import { validateConfig } from "../config/schema/schema.ts";
import { bucketPolicy, bucketPolicySource } from "./bucket-policy.ts";

const config = validateConfig({
  storage: {
    buckets: {
      mirror: { replication_target_only: true, quota_bytes: 10 },
      "mirror-alias": { alias: "mirror" },
      shadow: { alias: "real-target" },
      "real-target": { replication_target_only: true },
      open: { public_prefixes: ["pub/"] },
      site: { public: true },
    },
  },
});

Deno.test("target-only on the bucket itself", () => {
  assert.equal(bucketPolicy(config, "mirror").targetOnlyBy, "mirror");
  assert.equal(bucketPolicy(config, "mirror").quotaBytes, 10);
});

Deno.test("target-only holds through an alias to the same real bucket", () => {
  assert.equal(bucketPolicy(config, "mirror-alias").targetOnlyBy, "mirror");
  assert.equal(bucketPolicy(config, "shadow").targetOnlyBy, "real-target");
});

Deno.test("a bucket without a policy entry is refused when a target-only alias names it", () => {
  const c = validateConfig({
    storage: { buckets: { "ro-view": { alias: "data", replication_target_only: true } } },
  });
  assert.equal(bucketPolicy(c, "data").targetOnlyBy, "ro-view");
  assert.equal(bucketPolicy(c, "ro-view").targetOnlyBy, "ro-view");
  assert.equal(bucketPolicy(c, "other").targetOnlyBy, undefined);
});

Deno.test("the same real name on another backend is another bucket", () => {
  const c = validateConfig({
    storage: {
      filesystem: "/tmp/svc-policy-test",
      backends: [{ name: "cold", type: "filesystem", path: "/tmp/svc-policy-cold" }],
      buckets: {
        archive: { backend: "cold", replication_target_only: true },
        "archive-view": { backend: "cold", alias: "archive" },
        "archive-local": { alias: "archive" },
      },
    },
  });
  assert.equal(bucketPolicy(c, "archive").targetOnlyBy, "archive");
  assert.equal(bucketPolicy(c, "archive-view").targetOnlyBy, "archive");
  assert.equal(bucketPolicy(c, "archive-local").targetOnlyBy, undefined);
});

Deno.test("public prefixes and defaults", () => {
  assert.deepEqual(bucketPolicy(config, "open").publicPrefixes, ["pub/"]);
  assert.deepEqual(bucketPolicy(config, "site").publicPrefixes, [""]);
  assert.deepEqual(bucketPolicy(config, "nothing"), { bucket: "nothing", publicPrefixes: [] });
});

Deno.test("bucketPolicySource follows the current snapshot", () => {
  let current = config;
  const source = bucketPolicySource(() => current);
  assert.equal(source("mirror").targetOnlyBy, "mirror");
  current = validateConfig({});
  assert.equal(source("mirror").targetOnlyBy, undefined);
});
