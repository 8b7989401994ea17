import assert from "node:assert/strict";
import {
  type BaselineAcquired,
  type BaselineLease,
  ReferenceCache,
  sha256Hex,
} from "./reference-cache.ts";
import { chunkLength, chunkStart, PROCESS_CHUNK_CHECK } from "./cache-entry.ts";

function bytes(n: number, fill = 1): Uint8Array<ArrayBuffer> {
  return new Uint8Array(n).fill(fill);
}

/** A cache in a fresh directory, removed (and checked for stray temp files) afterwards. */
async function withCache(maxBytes: number, fn: (cache: ReferenceCache) => Promise<void>) {
  const dir = await Deno.makeTempDir({ prefix: "svc-refcache-" });
  try {
    const cache = new ReferenceCache({ dir, maxBytes });
    await fn(cache);
    await cache.settled();
    assert.deepEqual(filesIn(dir), cache.keys().toSorted(), "only cached entries stay on disk");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

function filesIn(dir: string): string[] {
  return [...Deno.readDirSync(dir)].map((e) => e.name).toSorted();
}

const fetcher = (data: Uint8Array<ArrayBuffer>) => () => Promise.resolve(new Blob([data]).stream());

function leased(acquired: BaselineAcquired): BaselineLease {
  assert.ok(!("corrupt" in acquired), "not corrupt");
  return acquired;
}

/** Acquires `data` for `owner` and releases it at once; answers whether it was a hit. */
async function touch(cache: ReferenceCache, owner: string, data: Uint8Array<ArrayBuffer>) {
  const lease = leased(await cache.acquire(owner, sha256Hex(data), fetcher(data)));
  lease.release();
  return lease.cacheHit;
}

Deno.test("reference cache: a miss downloads into <dir>/<sha256>, then hits without a fetch", () =>
  withCache(1000, async (cache) => {
    const a = bytes(100, 7);
    const sha = sha256Hex(a);
    const first = leased(await cache.acquire("b/x/", sha, fetcher(a)));
    assert.equal(first.cacheHit, false);
    assert.equal(first.verified, true);
    assert.equal(first.path, `${cache.dir}/${sha}`);
    assert.deepEqual(await Deno.readFile(first.path), a);
    first.release();
    first.release(); // idempotent
    const noFetch = () => Promise.reject(new Error("must not fetch"));
    const second = leased(await cache.acquire("b/x/", sha.toUpperCase(), noFetch));
    assert.equal(second.cacheHit, true);
    assert.equal(second.verified, false);
    assert.equal(await cache.verify(second), true);
    second.release();
    assert.deepEqual(cache.stats(), {
      hits: 1,
      misses: 1,
      verifyFailures: 0,
      evictions: 0,
      sizeBytes: 100,
      entries: 1,
      maxBytes: 1000,
    });
  }));

Deno.test("reference cache: eviction is least recently used first, by bytes", () =>
  withCache(1000, async (cache) => {
    const [a, b, c, d, e] = [
      bytes(400, 1),
      bytes(300, 2),
      bytes(200, 3),
      bytes(250, 4),
      bytes(500, 5),
    ];
    for (const data of [a, b, c]) await touch(cache, `o${data[0]}`, data);
    assert.equal(await touch(cache, "o1", a), true, "a becomes most recently used");
    assert.deepEqual(cache.keys(), [b, c, a].map(sha256Hex));
    // 900 + 250 > 1000: dropping b (300) suffices, c stays.
    await touch(cache, "o4", d);
    assert.deepEqual(cache.keys(), [c, a, d].map(sha256Hex));
    // 850 + 500 > 1000: c (200) is not enough, a (400) goes too.
    await touch(cache, "o5", e);
    assert.deepEqual(cache.keys(), [d, e].map(sha256Hex));
    assert.equal(cache.stats().sizeBytes, 750);
    assert.equal(cache.stats().evictions, 3);
  }));

Deno.test("reference cache: pinned entries are skipped by LRU and their deletion deferred", () =>
  withCache(1000, async (cache) => {
    const [a, b, c] = [bytes(400, 1), bytes(400, 2), bytes(400, 3)];
    const pinned = leased(await cache.acquire("a", sha256Hex(a), fetcher(a)));
    await touch(cache, "b", b);
    // a is the least recently used but pinned: b goes instead.
    await touch(cache, "c", c);
    assert.deepEqual(cache.keys(), [a, c].map(sha256Hex));
    // Everything else pinned too: a new entry that does not fit is private.
    const pinnedC = leased(await cache.acquire("c", sha256Hex(c), fetcher(c)));
    const big = bytes(300, 9);
    const priv = leased(await cache.acquire("big", sha256Hex(big), fetcher(big)));
    assert.notEqual(priv.path, `${cache.dir}/${sha256Hex(big)}`);
    assert.deepEqual(await Deno.readFile(priv.path), big);
    assert.deepEqual(cache.keys(), [a, c].map(sha256Hex));
    priv.release();
    pinnedC.release();
    // Explicit eviction of a pinned entry: out of the index now, file gone at release.
    assert.equal(cache.evictSha256(sha256Hex(a)), true);
    assert.deepEqual(cache.keys(), [sha256Hex(c)]);
    assert.deepEqual(await Deno.readFile(pinned.path), a, "still readable while leased");
    // A new copy of the same bytes cannot take the doomed path: it is used privately.
    const again = leased(await cache.acquire("a", sha256Hex(a), fetcher(a)));
    assert.notEqual(again.path, pinned.path);
    again.release();
    pinned.release();
    await cache.settled();
    assert.equal(await Deno.stat(pinned.path).then(() => true, () => false), false);
    assert.equal(await touch(cache, "a", a), false, "re-downloaded once the old file is gone");
    assert.deepEqual(cache.keys(), [c, a].map(sha256Hex));
  }));

Deno.test("reference cache: an entry larger than the cache is private and evicts nothing", () =>
  withCache(1000, async (cache) => {
    await touch(cache, "a", bytes(500));
    const huge = bytes(1001, 2);
    const lease = leased(await cache.acquire("h", sha256Hex(huge), fetcher(huge)));
    assert.deepEqual(await Deno.readFile(lease.path), huge);
    assert.equal(lease.verified, true);
    assert.equal(cache.stats().entries, 1);
    lease.release();
    await cache.settled();
    assert.equal(await Deno.stat(lease.path).then(() => true, () => false), false);
    assert.equal(await touch(cache, "x", bytes(1000, 3)), false);
    assert.deepEqual(cache.keys(), [sha256Hex(bytes(1000, 3))]);
  }));

Deno.test("reference cache: a zero-byte cache hands out private files only", () =>
  withCache(0, async (cache) => {
    assert.equal(await touch(cache, "a", bytes(1)), false);
    assert.equal(await touch(cache, "a", bytes(1)), false);
    assert.equal(cache.stats().entries, 0);
    assert.throws(() => new ReferenceCache({ dir: cache.dir, maxBytes: -1 }), RangeError);
  }));

Deno.test("reference cache: a download that does not match its sha256 is corrupt, not cached", () =>
  withCache(1000, async (cache) => {
    const acquired = await cache.acquire("a", sha256Hex(bytes(10, 2)), fetcher(bytes(10, 1)));
    assert.deepEqual(acquired, { corrupt: true });
    assert.equal(cache.stats().verifyFailures, 1);
    assert.equal(cache.stats().entries, 0);
    // A failing fetch rejects and leaves nothing behind either.
    const failing = () => Promise.reject(new Error("backend down"));
    await assert.rejects(cache.acquire("a", sha256Hex(bytes(10)), failing), /backend down/);
  }));

Deno.test("reference cache: concurrent misses of one baseline share one download", () =>
  withCache(1000, async (cache) => {
    const data = bytes(300, 4);
    let fetches = 0;
    let open: () => void = () => {};
    const gate = new Promise<void>((resolve) => open = resolve);
    const slow = async () => {
      fetches++;
      await gate;
      return new Blob([data]).stream();
    };
    const pending = [1, 2, 3].map((n) => cache.acquire(`o${n}`, sha256Hex(data), slow));
    open();
    const leases = (await Promise.all(pending)).map(leased);
    assert.equal(fetches, 1);
    assert.ok(leases.every((l) => l.path === leases[0].path && !l.cacheHit));
    assert.equal(cache.stats().misses, 3);
    // Pinned three times: eviction waits for the last release.
    cache.evictSha256(sha256Hex(data));
    leases[0].release();
    leases[1].release();
    await cache.settled();
    assert.deepEqual(await Deno.readFile(leases[2].path), data);
    leases[2].release();
  }));

Deno.test("reference cache: verify re-hashes a cached file and evicts a corrupt one", () =>
  withCache(1000, async (cache) => {
    const data = bytes(200, 5);
    await touch(cache, "a", data);
    const lease = leased(await cache.acquire("a", sha256Hex(data), fetcher(data)));
    await Deno.writeFile(lease.path, bytes(200, 6));
    const stopped = new AbortController();
    stopped.abort();
    assert.equal(await cache.verify(lease, stopped.signal), false, "cut short: not verified");
    assert.equal(cache.stats().entries, 1, "an abort evicts nothing");
    assert.equal(await cache.verify(lease), false);
    assert.deepEqual(cache.keys(), []);
    assert.equal(cache.stats().verifyFailures, 1);
    lease.release();
    assert.equal(await touch(cache, "a", data), false, "the next use downloads again");
  }));

Deno.test("reference cache: evict and evictPrefix forget owners; shared bytes stay", () =>
  withCache(1000, async (cache) => {
    const shared = bytes(100, 1);
    await touch(cache, "b1/a/", shared);
    await touch(cache, "b2/a/", shared);
    await touch(cache, "b1/c/", bytes(50, 2));
    assert.equal(cache.evictPrefix("b1/"), 1, "only b1/c/ owned its bytes alone");
    assert.deepEqual(cache.keys(), [sha256Hex(shared)]);
    assert.equal(cache.evict("b2/a/"), true);
    assert.equal(cache.evict("b2/a/"), false);
    assert.equal(cache.stats().sizeBytes, 0);
  }));

Deno.test("reference cache: leases carry a seal per chunk; files are 0600", () =>
  withCache(8 << 20, async (cache) => {
    const data = new Uint8Array((2 << 20) + 5);
    for (let i = 0; i < data.length; i++) data[i] = i % 251;
    const lease = leased(await cache.acquire("a", sha256Hex(data), fetcher(data)));
    const chunk = (n: number) =>
      data.slice(chunkStart(n), Math.min(data.length, chunkStart(n) + chunkLength(n)));
    // 128, 256 and 512 KiB, a MiB, then the last 128 KiB and 5 bytes.
    assert.equal(lease.chunks.length, 5);
    for (let n = 0; n < 5; n++) {
      assert.ok(await PROCESS_CHUNK_CHECK.matches(chunk(n), lease.chunks[n]), `chunk ${n}`);
      const other = chunk((n + 1) % 5);
      assert.equal(await PROCESS_CHUNK_CHECK.matches(other, lease.chunks[n]), false);
    }
    assert.equal((await Deno.stat(lease.path)).mode! & 0o777, 0o600);
    await lease.release();
    const hit = leased(await cache.acquire("a", sha256Hex(data), fetcher(data)));
    assert.equal(hit.cacheHit, true);
    assert.deepEqual(hit.chunks, lease.chunks, "kept with the entry");
    await hit.release();
  }));

Deno.test("reference cache: bytes that must not persist are never admitted", () =>
  withCache(1000, async (cache) => {
    const data = bytes(100, 7);
    const sealed = () => Promise.resolve({ body: new Blob([data]).stream(), persist: false });
    const lease = leased(await cache.acquire("a", sha256Hex(data), sealed));
    assert.equal(lease.cacheHit, false);
    assert.deepEqual(cache.keys(), []);
    assert.ok(await Deno.stat(lease.path), "private to the lease meanwhile");
    await lease.release();
    await assert.rejects(Deno.stat(lease.path), Deno.errors.NotFound);
    const built = leased(
      await cache.acquireBuilt("b", sha256Hex(data), (path) => Deno.writeFile(path, data), false),
    );
    assert.deepEqual(cache.keys(), []);
    await built.release();
  }));

Deno.test("reference cache: reportDamaged evicts the entry and counts it", async () => {
  const dir = await Deno.makeTempDir({ prefix: "svc-refcache-" });
  try {
    let counted = 0;
    const cache = new ReferenceCache({ dir, maxBytes: 1000, onCorruption: () => counted++ });
    const data = bytes(100, 3);
    await touch(cache, "a", data);
    cache.reportDamaged(sha256Hex(data), "test");
    assert.deepEqual(cache.keys(), []);
    assert.equal(counted, 1);
    assert.equal(cache.stats().verifyFailures, 1);
    await cache.settled();
    assert.deepEqual(filesIn(dir), []);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
