/**
 * In-memory cache of object metadata (`metadata_cache_mb`, 10-minute TTL, SPEC item 6), so HEAD,
 * GET and the delta path need not ask the backend for the metadata record each time.
 *
 * Size bound: JavaScript cannot measure an object's heap size, so each entry is charged an
 * estimate: the JSON length of the value plus the length of its cache key (bucket + "/" + key).
 * JSON over-counts field names and numbers (V8 shares field names through hidden classes and
 * stores numbers in 8 bytes) and ignores object headers and the Map slot; the two roughly cancel.
 * A typical ObjectInfo (30-40 character key, md5 and sha256 hex, a content type, no user
 * metadata) is charged about 400-420 bytes: 125K-131K entries in 50 MiB, the spec's "about
 * 125K-150K entries at 50". Larger user metadata costs proportionally more, which is the point of
 * charging by size.
 *
 * - `0` MiB disables the cache: every get misses and set does nothing.
 * - Entries expire `ttlMs` (10 minutes) after they were set; the clock is injectable for tests.
 * - Least recently used entries are evicted first when a new one does not fit.
 * - Values are deep-copied and frozen on set, so neither the caller that stored a record nor one
 *   that read it can change what the next reader sees.
 * - Only presence is cached, never absence: a miss always goes to the backend.
 * - invalidatePrefix and invalidateBucket walk every entry (a few ms at 150K entries); they run on
 *   bucket deletion and prefix-wide changes, not per request.
 */

import type { ObjectInfo } from "../storage/mod.ts";

export const DEFAULT_METADATA_TTL_MS = 10 * 60 * 1000;

export interface MetadataCacheOptions {
  /** `metadata_cache_mb`, in mebibytes; 0 disables. */
  megabytes: number;
  ttlMs?: number;
  /** Epoch milliseconds; Date.now by default. */
  now?: () => number;
}

export interface MetadataCacheStats {
  hits: number;
  misses: number;
  evictions: number;
  expirations: number;
  sizeBytes: number;
  entries: number;
  maxBytes: number;
}

interface Entry<V> {
  value: Readonly<V>;
  bytes: number;
  expiresAt: number;
}

/** Bucket names never contain `/`, so the first `/` splits bucket and key unambiguously. */
function cacheKey(bucket: string, key: string): string {
  return `${bucket}/${key}`;
}

/** The bytes an entry is charged (see the header). */
export function estimateEntryBytes(bucket: string, key: string, value: unknown): number {
  return JSON.stringify(value).length + cacheKey(bucket, key).length;
}

function deepFreeze<T>(value: T): T {
  if (value !== null && typeof value === "object") {
    for (const child of Object.values(value)) deepFreeze(child);
    Object.freeze(value);
  }
  return value;
}

export class MetadataCache<V = ObjectInfo> {
  readonly maxBytes: number;
  readonly ttlMs: number;
  readonly #now: () => number;
  /** Insertion order is recency: the first entry is the least recently used. */
  readonly #entries = new Map<string, Entry<V>>();
  #sizeBytes = 0;
  #hits = 0;
  #misses = 0;
  #evictions = 0;
  #expirations = 0;

  constructor(options: MetadataCacheOptions) {
    const { megabytes } = options;
    if (!Number.isFinite(megabytes) || megabytes < 0) {
      throw new RangeError(`metadata cache size out of range: ${megabytes}`);
    }
    this.maxBytes = Math.floor(megabytes * 1024 * 1024);
    this.ttlMs = options.ttlMs ?? DEFAULT_METADATA_TTL_MS;
    this.#now = options.now ?? Date.now;
  }

  get enabled(): boolean {
    return this.maxBytes > 0;
  }

  get(bucket: string, key: string): Readonly<V> | undefined {
    const id = cacheKey(bucket, key);
    const entry = this.#entries.get(id);
    if (entry === undefined) {
      this.#misses++;
      return undefined;
    }
    this.#entries.delete(id);
    if (this.#now() >= entry.expiresAt) {
      this.#sizeBytes -= entry.bytes;
      this.#expirations++;
      this.#misses++;
      return undefined;
    }
    this.#entries.set(id, entry);
    this.#hits++;
    return entry.value;
  }

  /** Stores a copy of the value; returns false when it was not cached (disabled or too big). */
  set(bucket: string, key: string, value: V): boolean {
    const id = cacheKey(bucket, key);
    this.#delete(id);
    if (!this.enabled) return false;
    const bytes = estimateEntryBytes(bucket, key, value);
    if (bytes > this.maxBytes) return false;
    for (const [oldId, old] of this.#entries) {
      if (this.#sizeBytes + bytes <= this.maxBytes) break;
      this.#entries.delete(oldId);
      this.#sizeBytes -= old.bytes;
      if (this.#now() >= old.expiresAt) this.#expirations++;
      else this.#evictions++;
    }
    const frozen = deepFreeze(structuredClone(value));
    this.#entries.set(id, { value: frozen, bytes, expiresAt: this.#now() + this.ttlMs });
    this.#sizeBytes += bytes;
    return true;
  }

  /** Drops one object's entry (after PUT, DELETE, copy onto it, ...). */
  invalidate(bucket: string, key: string): boolean {
    return this.#delete(cacheKey(bucket, key));
  }

  /** Drops every entry of the bucket whose key starts with `prefix`. */
  invalidatePrefix(bucket: string, prefix: string): number {
    return this.#deleteWhere(cacheKey(bucket, prefix));
  }

  /** Drops every entry of the bucket. */
  invalidateBucket(bucket: string): number {
    return this.#deleteWhere(cacheKey(bucket, ""));
  }

  clear(): void {
    this.#entries.clear();
    this.#sizeBytes = 0;
  }

  stats(): MetadataCacheStats {
    return {
      hits: this.#hits,
      misses: this.#misses,
      evictions: this.#evictions,
      expirations: this.#expirations,
      sizeBytes: this.#sizeBytes,
      entries: this.#entries.size,
      maxBytes: this.maxBytes,
    };
  }

  #delete(id: string): boolean {
    const entry = this.#entries.get(id);
    if (entry === undefined) return false;
    this.#entries.delete(id);
    this.#sizeBytes -= entry.bytes;
    return true;
  }

  #deleteWhere(idPrefix: string): number {
    let removed = 0;
    for (const [id, entry] of this.#entries) {
      if (!id.startsWith(idPrefix)) continue;
      this.#entries.delete(id);
      this.#sizeBytes -= entry.bytes;
      removed++;
    }
    return removed;
  }
}
