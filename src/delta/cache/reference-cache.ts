/**
 * File-backed, content-addressed cache of deltaspace baselines (`cache_size_mb`, SPEC item 6).
 * xdelta3 reads its source from a file, so a cached baseline is kept as one: encodes and decodes
 * against a hot baseline use `<dir>/<sha256>` directly instead of copying it out of memory.
 *
 * - Entries are named by the sha256 of their bytes, so an entry is never stale: a deltaspace whose
 *   baseline changed simply asks for another sha256. The owner (`bucket/deltaspace`) → sha256
 *   association is kept only to drop entries when a baseline or bucket is deleted.
 * - Byte-weighted LRU bounded by `maxBytes`. Eviction skips pinned entries; an entry that does not
 *   fit (larger than the budget, or the rest is pinned) is handed out as a private file deleted at
 *   its last release, so the budget bounds what stays on disk between codec runs.
 * - Pins: `acquire` returns a lease; a codec run holds it until it no longer reads the file. An
 *   explicit eviction (corruption, deletion) of a pinned entry drops it from the index at once and
 *   deletes the file at the last release.
 * - A miss downloads the baseline into a temp file while hashing it; bytes that do not match the
 *   expected sha256 are reported `corrupt` and never cached. Concurrent misses of one sha256 share
 *   one download.
 *
 * The same class keeps the rebuilt-object cache (`rebuilt_cache_size_mb`): verified rebuilt delta
 * objects, named by the object's sha256 and filled by `acquireBuilt` (xdelta3 writes the file, it is
 * hashed before admission), so a repeat GET streams a file instead of decoding.
 *
 * Verification policy. A file on disk can be damaged: filling an entry hashes it whole and per
 * chunk (cache-entry.ts); the digests stay in memory with the entry, leases carry them.
 * - rebuilt objects (GET): every chunk a response touches is checked before it is sent
 *   (verified-file.ts); damage evicts the entry and counts `onCorruption`.
 * - baselines feed xdelta3 as a file, so a cache hit is hashed whole by `verify` before a decode
 *   uses it (a damaged one is evicted and downloaded again); an encode runs `verify` beside the
 *   codec and the commit awaits it (a delta against damaged bytes is discarded, stored passthrough).
 *
 * Privacy. Folders 0700, files 0600. A fill with `persist: false` (an encrypted backend's bytes)
 * is never admitted: its file is private to this acquisition, deleted at the last release.
 */

import { getLogger } from "../../observability/mod.ts";
import { writeStreamToFile } from "../../lib/mod.ts";
import {
  type BaselineAcquired,
  type BaselineLease,
  ChunkHasher,
  digestFile,
  type Fetched,
  type Filled,
  findDamage,
} from "./cache-entry.ts";

export type { BaselineAcquired, BaselineLease, Fetched } from "./cache-entry.ts";
export { sha256Hex } from "./cache-entry.ts";

const log = getLogger("svc::delta");

/** Mode of every file a cache creates (its folder is 0700). */
export const CACHE_FILE_MODE = 0o600;

export interface ReferenceCacheStats {
  hits: number;
  misses: number;
  /** Downloads or cached files whose bytes did not match their sha256. */
  verifyFailures: number;
  /** Entries dropped to make room. */
  evictions: number;
  sizeBytes: number;
  entries: number;
  maxBytes: number;
}

interface Entry {
  sha256: string;
  path: string;
  size: number;
  chunks: Uint8Array[];
  pins: number;
  /** In the index and counted in sizeBytes; otherwise the file goes with the last pin. */
  cached: boolean;
}

interface Download {
  /** Callers waiting for it; each gets one pin when it settles. */
  waiters: number;
  done: Promise<Entry | null>;
}

async function removeQuietly(path: string): Promise<void> {
  await Deno.remove(path).catch(() => {});
}

export class ReferenceCache {
  readonly dir: string;
  readonly maxBytes: number;
  /** Map iteration order is insertion order: the first entry is the least recently used. */
  readonly #entries = new Map<string, Entry>();
  readonly #owners = new Map<string, string>();
  readonly #downloads = new Map<string, Download>();
  /** Canonical paths still held by an evicted, pinned entry: a new copy must not take them. */
  readonly #doomedPaths = new Set<string>();
  /** File removals under way (they are not awaited by the release or eviction that starts them). */
  readonly #removals = new Set<Promise<void>>();
  #sizeBytes = 0;
  #hits = 0;
  #misses = 0;
  #verifyFailures = 0;
  #evictions = 0;
  #tempSeq = 0;

  /** What the files are, for log lines ("baseline", "rebuilt object"). */
  readonly #label: string;

  /** Counts a cached file found damaged (the `svc_cache_corruption_total` metric). */
  readonly #onCorruption: () => void;

  /** `dir` must exist and hold nothing else (the caller empties it at start). */
  constructor(
    options: { dir: string; maxBytes: number; label?: string; onCorruption?: () => void },
  ) {
    const { dir, maxBytes } = options;
    if (!Number.isFinite(maxBytes) || maxBytes < 0) {
      throw new RangeError(`reference cache size out of range: ${maxBytes}`);
    }
    this.dir = dir;
    this.maxBytes = Math.floor(maxBytes);
    this.#label = options.label ?? "baseline";
    this.#onCorruption = options.onCorruption ?? (() => {});
  }

  /**
   * A lease on the baseline whose bytes hash to `sha256`, downloading it with `fetch` on a miss.
   * `owner` (e.g. `bucket/deltaspace`) is remembered for `evict`/`evictPrefix`. A fetch failure
   * rejects (every caller sharing that download sees it); mismatching bytes answer `corrupt`.
   */
  acquire(
    owner: string,
    sha256: string,
    fetch: () => Promise<Fetched>,
  ): Promise<BaselineAcquired> {
    return this.#acquire(owner, sha256, async (temp) => {
      const fetched = await fetch();
      if (fetched instanceof ReadableStream) return await this.#spoolHashed(fetched, temp, true);
      return await this.#spoolHashed(fetched.body, temp, fetched.persist);
    });
  }

  /**
   * `acquire` for files something else writes: on a miss `build(path)` fills a new file at `path`
   * (e.g. a codec writing its output itself), which is then hashed and admitted only when its
   * bytes match `sha256`. A build failure rejects (every caller sharing it sees it). With
   * `persist` false the file is never admitted (see Privacy above).
   */
  acquireBuilt(
    owner: string,
    sha256: string,
    build: (path: string) => Promise<void>,
    persist = true,
  ): Promise<BaselineAcquired> {
    return this.#acquire(owner, sha256, async (temp) => {
      await build(temp);
      await Deno.chmod(temp, CACHE_FILE_MODE);
      return { ...await digestFile(temp), persist };
    });
  }

  async #acquire(
    owner: string,
    sha256: string,
    fill: (temp: string) => Promise<Filled>,
  ): Promise<BaselineAcquired> {
    const sha = sha256.toLowerCase();
    this.#owners.set(owner, sha);
    const entry = this.#entries.get(sha);
    if (entry !== undefined) {
      this.#entries.delete(sha);
      this.#entries.set(sha, entry);
      this.#hits++;
      entry.pins++;
      return this.#lease(entry, true, false);
    }
    this.#misses++;
    let pending = this.#downloads.get(sha);
    if (pending === undefined) {
      const download: Download = { waiters: 0, done: Promise.resolve(null) };
      download.done = this.#download(sha, fill, download);
      this.#downloads.set(sha, download);
      pending = download;
    }
    pending.waiters++;
    const fetched = await pending.done;
    return fetched === null ? { corrupt: true } : this.#lease(fetched, false, true);
  }

  /**
   * Whether the leased file still hashes to its sha256. A mismatch (or an unreadable file) evicts
   * the entry and answers false; so does an abort, without evicting: unverified is not verified.
   */
  async verify(lease: BaselineLease, signal?: AbortSignal): Promise<boolean> {
    if (lease.verified) return true;
    let damage: string | undefined;
    try {
      damage = await findDamage(lease.path, lease.chunks, signal);
    } catch (err) {
      if (signal?.aborted) return false;
      damage = `unreadable: ${err instanceof Error ? err.message : String(err)}`;
    }
    if (damage === undefined) return true;
    this.reportDamaged(lease.sha256, damage);
    return false;
  }

  /** A reader found the cached file of these bytes damaged: counted, and the entry goes. */
  reportDamaged(sha256: string, reason: string): void {
    this.#verifyFailures++;
    this.#onCorruption();
    this.evictSha256(sha256, reason);
  }

  /** Drops the entry of these bytes (corruption); its file goes now or at its last release. */
  evictSha256(sha256: string, reason?: string): boolean {
    const sha = sha256.toLowerCase();
    const entry = this.#entries.get(sha);
    if (reason !== undefined) {
      log.warn(`Evicting a cached ${this.#label}`, {
        sha256: sha,
        reason,
        cached: entry !== undefined,
      });
    }
    if (entry === undefined) return false;
    this.#unindex(entry);
    return true;
  }

  /** Forgets the owner's baseline (deleted); its entry goes unless another owner shares it. */
  evict(owner: string): boolean {
    const sha = this.#owners.get(owner);
    if (sha === undefined) return false;
    this.#owners.delete(owner);
    for (const other of this.#owners.values()) if (other === sha) return false;
    return this.evictSha256(sha);
  }

  /** `evict` for every owner starting with `prefix` (e.g. a deleted bucket). */
  evictPrefix(prefix: string): number {
    let removed = 0;
    for (const owner of [...this.#owners.keys()]) {
      if (owner.startsWith(prefix) && this.evict(owner)) removed++;
    }
    return removed;
  }

  /** Drops every entry (pinned files go at their last release). */
  clear(): void {
    for (const entry of [...this.#entries.values()]) this.#unindex(entry);
  }

  /** Cached sha256s from least to most recently used (for tests and the admin view). */
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

  #lease(entry: Entry, cacheHit: boolean, verified: boolean): BaselineLease {
    let released: Promise<void> | undefined;
    return {
      path: entry.path,
      sha256: entry.sha256,
      size: entry.size,
      cacheHit,
      verified,
      chunks: entry.chunks,
      release: () => {
        if (released) return released;
        entry.pins--;
        released = entry.pins === 0 && !entry.cached ? this.#deleteFile(entry) : Promise.resolve();
        return released;
      },
    };
  }

  /** Out of the index; the file is deleted now when unpinned, else at its last release. */
  #unindex(entry: Entry): void {
    if (!entry.cached) return;
    this.#entries.delete(entry.sha256);
    this.#sizeBytes -= entry.size;
    entry.cached = false;
    if (entry.pins === 0) this.#deleteFile(entry);
    else this.#doomedPaths.add(entry.path);
  }

  #deleteFile(entry: Entry): Promise<void> {
    // The path leaves #doomedPaths only once the file is gone, so no new copy can be renamed
    // onto it and then deleted by this removal.
    const removal = removeQuietly(entry.path).finally(() => {
      this.#doomedPaths.delete(entry.path);
      this.#removals.delete(removal);
    });
    this.#removals.add(removal);
    return removal;
  }

  /** Resolves once every file removal started so far has finished (tests, shutdown). */
  async settled(): Promise<void> {
    while (this.#removals.size > 0) await Promise.all(this.#removals);
  }

  #canonicalPath(sha256: string): string {
    return `${this.dir}/${sha256}`;
  }

  /**
   * Downloads, hashes and admits one baseline. Settles with the entry already pinned once per
   * waiter, in the same step that removes the download from the map, so a caller either joins
   * this download or finds its result in the index.
   */
  async #download(
    sha256: string,
    fill: (temp: string) => Promise<Filled>,
    download: Download,
  ): Promise<Entry | null> {
    const temp = `${this.dir}/tmp-${++this.#tempSeq}-${crypto.randomUUID()}`;
    let admitted = false;
    try {
      const { sha256: actual, size, chunks, persist } = await fill(temp);
      if (actual !== sha256) {
        this.#verifyFailures++;
        log.warn(`A ${this.#label} does not match its sha256`, { expected: sha256, actual });
        return null;
      }
      const entry = persist
        ? await this.#admit(sha256, temp, size, chunks)
        : { sha256, path: temp, size, chunks, pins: 0, cached: false };
      admitted = true;
      entry.pins += download.waiters;
      return entry;
    } finally {
      this.#downloads.delete(sha256);
      if (!admitted) await removeQuietly(temp);
    }
  }

  async #spoolHashed(
    body: ReadableStream<Uint8Array>,
    path: string,
    persist: boolean,
  ): Promise<Filled> {
    const hasher = new ChunkHasher();
    using file = await Deno.open(path, { write: true, createNew: true, mode: CACHE_FILE_MODE });
    await writeStreamToFile(body, file, undefined, (chunk) => hasher.update(chunk));
    return { ...hasher.finish(), persist };
  }

  /** Makes room and renames `temp` into place; a file that cannot be cached stays private. */
  async #admit(
    sha256: string,
    temp: string,
    size: number,
    chunks: Uint8Array[],
  ): Promise<Entry> {
    const canonical = this.#canonicalPath(sha256);
    const fits = size <= this.maxBytes && !this.#doomedPaths.has(canonical) &&
      this.#unpinnedBytes() + (this.maxBytes - this.#sizeBytes) >= size;
    if (!fits) return { sha256, path: temp, size, chunks, pins: 0, cached: false };
    for (const entry of [...this.#entries.values()]) {
      if (this.#sizeBytes + size <= this.maxBytes) break;
      if (entry.pins > 0) continue;
      this.#unindex(entry);
      this.#evictions++;
    }
    // Reserved before the rename so that a concurrent admission sees the room as taken.
    this.#sizeBytes += size;
    try {
      await Deno.rename(temp, canonical);
    } catch (err) {
      this.#sizeBytes -= size;
      log.warn(`Cannot cache a ${this.#label}; using it uncached`, {
        sha256,
        error: String(err),
      });
      return { sha256, path: temp, size, chunks, pins: 0, cached: false };
    }
    const entry: Entry = { sha256, path: canonical, size, chunks, pins: 0, cached: true };
    // Another download of the same bytes cannot have finished meanwhile: they share this one.
    this.#entries.set(sha256, entry);
    return entry;
  }

  #unpinnedBytes(): number {
    let bytes = 0;
    for (const entry of this.#entries.values()) if (entry.pins === 0) bytes += entry.size;
    return bytes;
  }
}
