import assert from "node:assert/strict";
import type { ObjectInfo } from "../storage/backend.ts";
import { estimateEntryBytes, MetadataCache } from "./metadata-cache.ts";

function info(key: string, extra: Record<string, string> = {}): ObjectInfo {
  return {
    key,
    storedSize: 123456,
    meta: {
      size: 123456,
      etag: "9e107d9d372bb6826bd81d3542a419d6",
      md5: "9e107d9d372bb6826bd81d3542a419d6",
      sha256: "d7a8fbb307d7809469ca9abcb0082e4f8d5651e46d3cdb762d02d0bf37c9e592",
      contentType: "application/octet-stream",
      userMeta: extra,
      headers: {},
      lastModified: 1_700_000_000_000,
      storage: "passthrough",
    },
  };
}

function clock(start = 0) {
  const c = { t: start, now: () => c.t };
  return c;
}

Deno.test("set then get returns a frozen copy; invalidate drops it", () => {
  const cache = new MetadataCache({ megabytes: 1 });
  const value = info("a/b.zip");
  assert.equal(cache.set("bkt", "a/b.zip", value), true);
  value.meta.size = 1; // the caller's object is not the cached one
  const got = cache.get("bkt", "a/b.zip");
  assert.equal(got?.meta.size, 123456);
  assert.ok(Object.isFrozen(got) && Object.isFrozen(got!.meta.userMeta));
  assert.equal(cache.get("other", "a/b.zip"), undefined);
  assert.equal(cache.invalidate("bkt", "a/b.zip"), true);
  assert.equal(cache.get("bkt", "a/b.zip"), undefined);
  const stats = cache.stats();
  assert.deepEqual([stats.hits, stats.misses, stats.entries, stats.sizeBytes], [1, 2, 0, 0]);
});

Deno.test("entries expire after the 10-minute TTL", () => {
  const c = clock(1000);
  const cache = new MetadataCache({ megabytes: 1, now: c.now });
  cache.set("b", "k", info("k"));
  c.t += 10 * 60 * 1000 - 1;
  assert.ok(cache.get("b", "k"));
  c.t += 1;
  assert.equal(cache.get("b", "k"), undefined);
  assert.equal(cache.stats().expirations, 1);
  assert.equal(cache.stats().sizeBytes, 0);
  cache.set("b", "k", info("k"));
  assert.ok(cache.get("b", "k"), "a fresh set restarts the TTL");
});

Deno.test("0 MB disables the cache", () => {
  const cache = new MetadataCache({ megabytes: 0 });
  assert.equal(cache.enabled, false);
  assert.equal(cache.set("b", "k", info("k")), false);
  assert.equal(cache.get("b", "k"), undefined);
  assert.equal(cache.stats().entries, 0);
  assert.throws(() => new MetadataCache({ megabytes: -1 }), RangeError);
});

Deno.test("invalidatePrefix and invalidateBucket stay within their bucket", () => {
  const cache = new MetadataCache({ megabytes: 1 });
  for (const key of ["a/1", "a/2", "ab", "b/1"]) {
    cache.set("b1", key, info(key));
    cache.set("b10", key, info(key));
  }
  assert.equal(cache.invalidatePrefix("b1", "a/"), 2);
  assert.equal(cache.get("b1", "ab")?.key, "ab");
  assert.equal(cache.get("b10", "a/1")?.key, "a/1", "bucket b10 is not a prefix match of b1");
  assert.equal(cache.invalidateBucket("b1"), 2);
  assert.equal(cache.get("b1", "b/1"), undefined);
  assert.equal(cache.stats().entries, 4);
});

Deno.test("the size bound holds over many entries, evicting least recently used first", () => {
  const cache = new MetadataCache({ megabytes: 1 });
  const per = estimateEntryBytes("bkt", "k/000000", info("k/000000"));
  for (let i = 0; i < 10_000; i++) {
    const key = `k/${String(i).padStart(6, "0")}`;
    cache.set("bkt", key, info(key));
    assert.ok(cache.stats().sizeBytes <= cache.maxBytes);
  }
  const { entries, sizeBytes, evictions } = cache.stats();
  assert.equal(entries, Math.floor(cache.maxBytes / per));
  assert.equal(sizeBytes, entries * per);
  assert.equal(evictions, 10_000 - entries);
  assert.equal(cache.get("bkt", "k/009999")?.key, "k/009999");
  assert.equal(cache.get("bkt", "k/000001"), undefined);
  const oldestKept = `k/${String(10_000 - entries).padStart(6, "0")}`;
  assert.equal(cache.get("bkt", oldestKept)?.key, oldestKept);
});

Deno.test("a recently read entry outlives older unread ones", () => {
  const per = estimateEntryBytes("b", "k1", info("k1"));
  const cache = new MetadataCache({ megabytes: (3 * per) / (1024 * 1024) });
  cache.set("b", "k1", info("k1"));
  cache.set("b", "k2", info("k2"));
  cache.set("b", "k3", info("k3"));
  assert.ok(cache.get("b", "k1"));
  cache.set("b", "k4", info("k4"));
  assert.equal(cache.get("b", "k2"), undefined, "k2 was least recently used");
  assert.ok(cache.get("b", "k1") && cache.get("b", "k3") && cache.get("b", "k4"));
  assert.equal(cache.stats().evictions, 1);
});

Deno.test("the estimate gives about 125K-150K typical entries at 50 MB", () => {
  for (
    const key of ["releases/app/v1.2.3/app-1.2.3.zip", "releases/project/v1.2.3/artifact-x.zip"]
  ) {
    const per = estimateEntryBytes("my-bucket", key, info(key));
    const count = Math.floor(50 * 1024 * 1024 / per);
    assert.ok(count >= 125_000 && count <= 150_000, `${count} entries of ${per} bytes`);
  }
  const key = "releases/app/v1.2.3/app-1.2.3.zip";
  const per = estimateEntryBytes("my-bucket", key, info(key));
  const bigger = estimateEntryBytes("my-bucket", key, info(key, { note: "x".repeat(1000) }));
  assert.ok(bigger > per + 1000, "user metadata is charged");
});
