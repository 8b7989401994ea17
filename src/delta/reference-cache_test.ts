import assert from "node:assert/strict";
import { ReferenceCache, sha256Hex } from "./reference-cache.ts";

function bytes(n: number, fill = 1): Uint8Array {
  return new Uint8Array(n).fill(fill);
}

Deno.test("get returns cached bytes when the sha256 matches and counts hits and misses", () => {
  const cache = new ReferenceCache(1000);
  const a = bytes(100, 7);
  assert.equal(cache.get("a", sha256Hex(a)), undefined);
  assert.equal(cache.set("a", a), true);
  assert.equal(cache.get("a", sha256Hex(a)), a);
  assert.equal(cache.get("a", sha256Hex(a).toUpperCase()), a);
  assert.deepEqual(cache.stats(), {
    hits: 2,
    misses: 1,
    verifyFailures: 0,
    evictions: 0,
    sizeBytes: 100,
    entries: 1,
    maxBytes: 1000,
  });
});

Deno.test("a corrupted entry is evicted and never returned", () => {
  const cache = new ReferenceCache(1000);
  const a = bytes(100, 7);
  const sha = sha256Hex(a);
  cache.set("a", a);
  a[50] ^= 0xff; // the cache holds the same array: this corrupts the cached baseline
  assert.equal(cache.get("a", sha), undefined);
  assert.equal(cache.stats().entries, 0);
  assert.equal(cache.stats().sizeBytes, 0);
  assert.equal(cache.stats().verifyFailures, 1);
  a[50] ^= 0xff;
  assert.equal(cache.get("a", sha), undefined, "stays evicted even once the bytes are right again");
});

Deno.test("a changed baseline (other expected sha256) evicts the stale entry", () => {
  const cache = new ReferenceCache(1000);
  cache.set("a", bytes(10, 1));
  assert.equal(cache.get("a", sha256Hex(bytes(10, 2))), undefined);
  assert.deepEqual(cache.keys(), []);
});

Deno.test("set refuses bytes that do not match the expected sha256", () => {
  const cache = new ReferenceCache(1000);
  assert.equal(cache.set("a", bytes(10, 1), sha256Hex(bytes(10, 2))), false);
  assert.equal(cache.stats().entries, 0);
  assert.equal(cache.set("a", bytes(10, 1), sha256Hex(bytes(10, 1))), true);
});

Deno.test("eviction is least recently used first, by bytes", () => {
  const cache = new ReferenceCache(1000);
  const a = bytes(400, 1);
  const b = bytes(300, 2);
  const c = bytes(200, 3);
  cache.set("a", a);
  cache.set("b", b);
  cache.set("c", c);
  assert.ok(cache.get("a", sha256Hex(a)), "a becomes most recently used");
  assert.deepEqual(cache.keys(), ["b", "c", "a"]);
  // 900 + 250 > 1000: dropping b (300) suffices, c stays.
  cache.set("d", bytes(250, 4));
  assert.deepEqual(cache.keys(), ["c", "a", "d"]);
  // 850 + 500 > 1000: c (200) is not enough, a (400) goes too.
  cache.set("e", bytes(500, 5));
  assert.deepEqual(cache.keys(), ["d", "e"]);
  assert.equal(cache.stats().sizeBytes, 750);
  assert.equal(cache.stats().evictions, 3);
});

Deno.test("an entry larger than the cache is not cached and evicts nothing", () => {
  const cache = new ReferenceCache(1000);
  cache.set("a", bytes(500));
  assert.equal(cache.set("huge", bytes(1001)), false);
  assert.deepEqual(cache.keys(), ["a"]);
  assert.equal(cache.set("exact", bytes(1000)), true);
  assert.deepEqual(cache.keys(), ["exact"]);
});

Deno.test("replacing a key frees its old bytes; evict and evictPrefix drop entries", () => {
  const cache = ReferenceCache.fromMegabytes(1);
  assert.equal(cache.maxBytes, 1024 * 1024);
  cache.set("b1/a/", bytes(100));
  cache.set("b1/a/", bytes(300));
  assert.equal(cache.stats().sizeBytes, 300);
  cache.set("b1/c/", bytes(10));
  cache.set("b2/a/", bytes(20));
  assert.equal(cache.evict("b2/a/"), true);
  assert.equal(cache.evict("b2/a/"), false);
  assert.equal(cache.evictPrefix("b1/"), 2);
  assert.deepEqual(cache.stats().sizeBytes, 0);
});

Deno.test("a zero-byte cache caches nothing", () => {
  const cache = new ReferenceCache(0);
  assert.equal(cache.set("a", bytes(1)), false);
  assert.equal(cache.get("a", sha256Hex(bytes(1))), undefined);
  assert.throws(() => new ReferenceCache(-1), RangeError);
});
