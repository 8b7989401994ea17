/**
 * Which stored object holds a logical key in a compressed bucket: `key` (passthrough) or
 * `key.delta`, the later one when both exist (an overwrite that changed kind, before its cleanup).
 *
 * The answer is remembered in the metadata cache (`metadata_cache_mb`) so a GET opens the stored
 * object directly instead of asking for both names first. It is only a hint: the opened object's
 * own metadata is what is served, and a vanished one falls back to the lookup.
 */

import type { ByteRange, ObjectBody, ObjectInfo } from "../storage/mod.ts";
import { type DeltaContext, rebuiltOwner } from "./delta-context.ts";
import { storedNameFor } from "./layout.ts";
import type { MetadataCache } from "./metadata-cache.ts";

export class StoredLocator {
  readonly #ctx: DeltaContext;
  readonly #located: MetadataCache | undefined;

  constructor(ctx: DeltaContext, located: MetadataCache | undefined) {
    this.#ctx = ctx;
    this.#located = located;
  }

  /** The stored object that holds `key`, asking the inner backend for both names; null if none. */
  async locate(bucket: string, key: string): Promise<ObjectInfo | null> {
    const [plain, delta] = await Promise.all([
      this.#ctx.inner.headObject(bucket, key),
      this.#ctx.inner.headObject(bucket, storedNameFor(key, "delta")),
    ]);
    const found = plain && delta
      ? (delta.meta.lastModified > plain.meta.lastModified ? delta : plain)
      : plain ?? delta;
    if (found) this.#located?.set(bucket, key, found);
    return found;
  }

  /**
   * The stored object of `key` opened, trying the remembered stored name first. `range` applies
   * when the key is stored under its own name (a delta is always opened whole: it is decoded), so
   * a ranged read of a passthrough object opens only what it reads.
   */
  async open(bucket: string, key: string, range?: ByteRange): Promise<ObjectBody | null> {
    const get = (name: string) =>
      this.#ctx.inner.getObject(bucket, name, name === key ? range : undefined);
    const hint = this.#located?.get(bucket, key);
    if (hint) {
      const opened = await get(hint.key);
      if (opened) return opened;
      this.#located?.invalidate(bucket, key);
    }
    const stored = await this.locate(bucket, key);
    return stored ? await get(stored.key) : null;
  }

  /** The stored object's info under the logical key, trying the remembered stored name first. */
  async head(bucket: string, key: string): Promise<ObjectInfo | null> {
    const hint = this.#located?.get(bucket, key);
    if (hint) {
      const info = await this.#ctx.inner.headObject(bucket, hint.key);
      if (info) return { ...info, key };
      this.#located?.invalidate(bucket, key);
    }
    const stored = await this.locate(bucket, key);
    return stored ? { ...stored, key } : null;
  }

  /** Remembers that `info` (stored under its own name) holds `key`. */
  remember(bucket: string, key: string, info: ObjectInfo): void {
    this.#located?.set(bucket, key, info);
  }

  /** Drops the remembered stored name of `key` (its metadata is about to change). */
  invalidate(bucket: string, key: string): void {
    this.#located?.invalidate(bucket, key);
  }

  invalidateBucket(bucket: string): void {
    this.#located?.invalidateBucket(bucket);
  }

  /**
   * After a write or delete of `key`: its remembered stored name and its rebuilt file go. The
   * rebuilt cache is content-addressed (never stale); this frees the space of what was replaced.
   */
  forget(bucket: string, key: string): void {
    this.#located?.invalidate(bucket, key);
    this.#ctx.rebuiltCache.evict(rebuiltOwner(this.#ctx, bucket, storedNameFor(key, "delta")));
  }
}
