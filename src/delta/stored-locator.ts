/**
 * Which stored object holds a logical key in a compressed bucket: `key` (passthrough) or
 * `key.delta`, the newer one when both exist (an overwrite that changed kind, before its cleanup;
 * fleet/stored-order.ts).
 *
 * The answer is remembered in the metadata cache (`metadata_cache_mb`) so a GET opens the stored
 * object directly instead of asking for both names first. It is only a hint: the opened object's
 * own metadata is what is served, and a vanished one falls back to the lookup.
 */

import { SvcError } from "../lib/mod.ts";
import type { ByteRange, ObjectBody, ObjectInfo } from "../storage/mod.ts";
import { type DeltaContext, type DeltaMeta, rebuiltOwner } from "./delta-context.ts";
import { storedNameFor } from "./layout.ts";
import type { MetadataCache } from "./metadata-cache.ts";
import { newerStored } from "./fleet/stored-order.ts";

/**
 * Whether `found` under a remembered stored name is the very object remembered. Another one is
 * not trusted without looking at both names again: a background conversion stores an older write
 * under `x.delta` after a newer `x` was acknowledged (background/archive-convert.ts), ordered
 * below it.
 */
function isSameStored(found: ObjectInfo, remembered: ObjectInfo): boolean {
  if (found.version !== undefined && remembered.version !== undefined) {
    return found.version === remembered.version;
  }
  return found.meta.etag === remembered.meta.etag &&
    (found.meta as DeltaMeta).writtenAt === (remembered.meta as DeltaMeta).writtenAt;
}

/** How long replacedSince waits before each look (ms). */
const REPLACED_WAITS_MS = [20, 80, 250, 650];

export class StoredLocator {
  readonly #ctx: DeltaContext;
  readonly #located: MetadataCache | undefined;

  constructor(ctx: DeltaContext, located: MetadataCache | undefined) {
    this.#ctx = ctx;
    this.#located = located;
  }

  /** The stored object that holds `key`, asking the inner backend for both names; null if none. */
  async locate(bucket: string, key: string): Promise<ObjectInfo | null> {
    const both = () =>
      Promise.all([
        this.#ctx.inner.headObject(bucket, key),
        this.#ctx.inner.headObject(bucket, storedNameFor(key, "delta")),
      ]);
    let [plain, delta] = await both();
    // The two HEADs are not one snapshot: one may run before another instance commits the key
    // under that name and the other after it removed the older name (a writer commits before it
    // removes, so one name always exists). Neither found: asked once more before saying absent.
    if (!plain && !delta) [plain, delta] = await both();
    const found = newerStored(plain, delta);
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
      if (opened && isSameStored(opened.info, hint)) return opened;
      await opened?.body.cancel().catch(() => {});
      this.#located?.invalidate(bucket, key);
    }
    for (let attempt = 1;; attempt++) {
      const stored = await this.locate(bucket, key);
      if (!stored) return null;
      const opened = await get(stored.key);
      // Gone between the look and the open: removed as the older name once another instance
      // committed a newer write under the other one (fleet/stored-forms.ts). Look again.
      if (opened || attempt === 3) return opened;
    }
  }

  /** The stored object's info under the logical key, trying the remembered stored name first. */
  async head(bucket: string, key: string): Promise<ObjectInfo | null> {
    const hint = this.#located?.get(bucket, key);
    if (hint) {
      const info = await this.#ctx.inner.headObject(bucket, hint.key);
      if (info && isSameStored(info, hint)) return { ...info, key };
      this.#located?.invalidate(bucket, key);
    }
    const stored = await this.locate(bucket, key);
    return stored ? { ...stored, key } : null;
  }

  /**
   * The object of `key` opened: a passthrough object as stored (with `range` applied), a delta
   * through `rebuild`. A rebuild that fails (InternalError) is handled by afterFailedRebuild.
   */
  async read(
    bucket: string,
    key: string,
    range: ByteRange | undefined,
    rebuild: (found: ObjectBody) => Promise<ObjectBody>,
  ): Promise<ObjectBody | null> {
    for (let attempt = 1;; attempt++) {
      const found = await this.open(bucket, key, range);
      if (!found || found.info.key === key) return found;
      try {
        return await rebuild(found);
      } catch (err) {
        const rebuildFailed = err instanceof SvcError && err.code === "InternalError";
        if (!rebuildFailed || attempt === 3) throw err;
        const next = await this.afterFailedRebuild(bucket, key, found.info, range);
        if (next === null) throw err;
        if (next !== "again") return next;
      }
    }
  }

  /**
   * After the delta `opened` of `key` could not be rebuilt: the key's passthrough copy when one
   * is there, else "again" once the delta was replaced (replacedSince), else null (the error
   * stands). A passthrough copy beside a newer delta that cannot be rebuilt is the newest
   * answered write: an answered delta's baseline is held by its own marker (or by the delta,
   * in a parent folder), so that delta is a write still in flight whose baseline another
   * instance retired, and which its writer stores passthrough next; the copy is only removed
   * for a delta whose baseline holds (fleet/stored-forms.ts).
   */
  async afterFailedRebuild(
    bucket: string,
    key: string,
    opened: ObjectInfo,
    range?: ByteRange,
  ): Promise<ObjectBody | "again" | null> {
    const plain = await this.#ctx.inner.getObject(bucket, key, range);
    if (plain) return plain;
    return (await this.replacedSince(bucket, key, opened)) ? "again" : null;
  }

  /**
   * Whether the stored object `opened` of `key` was replaced (or removed) since it was opened,
   * asked again a few times over about a second: a delta that cannot be rebuilt because another
   * svc instance's newer write retired its baseline, or because its own writer is about to store
   * the object passthrough instead (baseline-guard.ts), is replaced within milliseconds.
   */
  async replacedSince(bucket: string, key: string, opened: ObjectInfo): Promise<boolean> {
    for (const ms of REPLACED_WAITS_MS) {
      await new Promise((resolve) => setTimeout(resolve, ms));
      this.#located?.invalidate(bucket, key);
      const now = await this.locate(bucket, key);
      if (now === null || now.key !== opened.key || now.version !== opened.version) return true;
    }
    return false;
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
