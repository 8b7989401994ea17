/**
 * In-memory cache of deltaspace baselines (`cache_size_mb`, SPEC item 6), so encoding and
 * decoding against a hot baseline does not re-read it from the backend.
 *
 * - Bounded by bytes, evicting least recently used entries first until the new one fits; an
 *   entry larger than the whole cache is not cached at all (it would only flush everything).
 * - Every entry keeps the sha256 computed when it was stored. `get` re-hashes the bytes and
 *   compares them with both that hash and the one the caller expects (the baseline's sha256 from
 *   its metadata). Any mismatch evicts the entry and answers a miss: a corrupted or stale baseline
 *   is never handed out. Re-hashing costs a pass over the bytes (OpenSSL sha256, roughly 1-2 GB/s)
 *   which is small next to a codec run.
 * - Keys are opaque strings; the caller composes them (e.g. backend, bucket and deltaspace) so
 *   that two buckets never share an entry.
 * - Bytes are held without copying: callers must not mutate what they pass in or get back (a
 *   mutation is caught by the re-hash on the next get, at the price of a miss).
 */

import { createHash } from "node:crypto";

export interface ReferenceCacheStats {
  hits: number;
  misses: number;
  /** Entries dropped for corruption or a changed baseline, included in misses. */
  verifyFailures: number;
  /** Entries dropped to make room. */
  evictions: number;
  sizeBytes: number;
  entries: number;
  maxBytes: number;
}

interface Entry {
  bytes: Uint8Array;
  sha256: string;
}

export function sha256Hex(bytes: Uint8Array): string {
  return createHash("sha256").update(bytes).digest("hex");
}

export class ReferenceCache {
  readonly maxBytes: number;
  /** Map iteration order is insertion order: the first entry is the least recently used. */
  readonly #entries = new Map<string, Entry>();
  #sizeBytes = 0;
  #hits = 0;
  #misses = 0;
  #verifyFailures = 0;
  #evictions = 0;

  constructor(maxBytes: number) {
    if (!Number.isFinite(maxBytes) || maxBytes < 0) {
      throw new RangeError(`reference cache size out of range: ${maxBytes}`);
    }
    this.maxBytes = Math.floor(maxBytes);
  }

  /** A cache of `cache_size_mb` mebibytes. */
  static fromMegabytes(megabytes: number): ReferenceCache {
    return new ReferenceCache(megabytes * 1024 * 1024);
  }

  /**
   * The cached baseline when its bytes still hash to `expectedSha256` (lowercase hex), else
   * undefined; a mismatching entry is evicted.
   */
  get(key: string, expectedSha256: string): Uint8Array | undefined {
    const entry = this.#entries.get(key);
    if (entry === undefined) {
      this.#misses++;
      return undefined;
    }
    const actual = sha256Hex(entry.bytes);
    if (actual !== entry.sha256 || actual !== expectedSha256.toLowerCase()) {
      this.#remove(key, entry);
      this.#verifyFailures++;
      this.#misses++;
      return undefined;
    }
    this.#entries.delete(key);
    this.#entries.set(key, entry);
    this.#hits++;
    return entry.bytes;
  }

  /**
   * Caches a baseline, replacing any entry under the key. When `expectedSha256` is given and the
   * bytes do not match it, nothing is cached. Returns whether the bytes are now cached.
   */
  set(key: string, bytes: Uint8Array, expectedSha256?: string): boolean {
    const existing = this.#entries.get(key);
    if (existing !== undefined) this.#remove(key, existing);
    if (bytes.byteLength > this.maxBytes) return false;
    const sha256 = sha256Hex(bytes);
    if (expectedSha256 !== undefined && sha256 !== expectedSha256.toLowerCase()) return false;
    for (const [oldKey, old] of this.#entries) {
      if (this.#sizeBytes + bytes.byteLength <= this.maxBytes) break;
      this.#remove(oldKey, old);
      this.#evictions++;
    }
    this.#entries.set(key, { bytes, sha256 });
    this.#sizeBytes += bytes.byteLength;
    return true;
  }

  /** Drops the entry; true when there was one. */
  evict(key: string): boolean {
    const entry = this.#entries.get(key);
    if (entry === undefined) return false;
    this.#remove(key, entry);
    return true;
  }

  /** Drops every entry whose key starts with `prefix` (e.g. a deleted bucket). */
  evictPrefix(prefix: string): number {
    let removed = 0;
    for (const [key, entry] of this.#entries) {
      if (!key.startsWith(prefix)) continue;
      this.#remove(key, entry);
      removed++;
    }
    return removed;
  }

  clear(): void {
    this.#entries.clear();
    this.#sizeBytes = 0;
  }

  /** Keys from least to most recently used (for tests and the admin view). */
  keys(): string[] {
    return [...this.#entries.keys()];
  }

  stats(): ReferenceCacheStats {
    return {
      hits: this.#hits,
      misses: this.#misses,
      verifyFailures: this.#verifyFailures,
      evictions: this.#evictions,
      sizeBytes: this.#sizeBytes,
      entries: this.#entries.size,
      maxBytes: this.maxBytes,
    };
  }

  #remove(key: string, entry: Entry): void {
    this.#entries.delete(key);
    this.#sizeBytes -= entry.bytes.byteLength;
  }
}
