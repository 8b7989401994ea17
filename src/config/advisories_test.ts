/** Unit tests of the config advisories: warnings that never block a load. */
import assert from "node:assert/strict";
import { configAdvisories } from "./advisories.ts";
import { validateConfig } from "./schema/schema.ts";

function advisoriesOf(document: Record<string, unknown>): string[] {
  return configAdvisories(validateConfig(document), document);
}

const BIG_CACHE = { cache_size_mb: 2048 };

Deno.test("a default-cache config has only the cache advisory", () => {
  const advisories = advisoriesOf({});
  assert.equal(advisories.length, 1);
  assert.match(advisories[0], /^advanced\.cache_size_mb: 100 MB is under 1024/);
  assert.deepEqual(advisoriesOf({ advanced: BIG_CACHE }), []);
});

Deno.test("rate limiting set while trust_proxy_headers is false", () => {
  const advisories = advisoriesOf({ advanced: { ...BIG_CACHE, rate_limit_max_attempts: 5 } });
  assert.equal(advisories.length, 1);
  assert.match(advisories[0], /^advanced\.rate_limit_max_attempts: .*trust_proxy_headers/);
  assert.deepEqual(
    advisoriesOf({
      advanced: { ...BIG_CACHE, rate_limit_max_attempts: 5, trust_proxy_headers: true },
    }),
    [],
  );
});

Deno.test("quota_bytes 0 freezes the bucket", () => {
  const advisories = advisoriesOf({
    advanced: BIG_CACHE,
    storage: { buckets: { abc: { quota_bytes: 0 }, def: { quota_bytes: 10 } } },
  });
  assert.deepEqual(advisories.length, 1);
  assert.match(advisories[0], /^storage\.buckets\.abc\.quota_bytes: 0 freezes/);
});

Deno.test("public_prefixes while authentication is none", () => {
  const advisories = advisoriesOf({
    advanced: BIG_CACHE,
    access: { authentication: "none" },
    storage: { buckets: { abc: { public_prefixes: ["pub/"] } } },
  });
  assert.equal(advisories.length, 1);
  assert.match(advisories[0], /^storage\.buckets\.abc\.public_prefixes: .*authentication is none/);
  assert.deepEqual(
    advisoriesOf({
      advanced: BIG_CACHE,
      storage: { buckets: { abc: { public_prefixes: ["p/"] } } },
    }),
    [],
  );
});

Deno.test("a wholly public bucket is called out", () => {
  const advisories = advisoriesOf({
    advanced: BIG_CACHE,
    storage: { buckets: { abc: { public: true } } },
  });
  assert.deepEqual(advisories, ["storage.buckets.abc: the whole bucket is public (empty prefix)"]);
});

Deno.test("a replay window shorter than the signature validity", () => {
  const advisories = advisoriesOf({ advanced: { ...BIG_CACHE, replay_window_secs: 2 } });
  assert.equal(advisories.length, 1);
  assert.match(advisories[0], /^advanced\.replay_window_secs: 2 s is less than twice/);
  for (const replay_window_secs of [0, 600]) {
    assert.deepEqual(advisoriesOf({ advanced: { ...BIG_CACHE, replay_window_secs } }), []);
  }
  const skew = { ...BIG_CACHE, clock_skew_seconds: 60, replay_window_secs: 120 };
  assert.deepEqual(advisoriesOf({ advanced: skew }), []);
});
