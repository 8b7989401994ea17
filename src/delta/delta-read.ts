/**
 * The read side of the delta store: leasing a deltaspace's baseline file from the reference cache
 * (downloaded and verified on a miss; see reference-cache.ts for when a cached file is re-hashed)
 * and rebuilding a delta object into a spool file whose sha256 is checked before a single byte
 * reaches the caller.
 *
 * Also home of DeltaContext, the state the DeltaBackend shares with its write and read halves.
 */

import { diskFullError, isNoSpaceError, SvcError } from "../lib/errors.ts";
import type { KeyLock } from "../lib/key-lock.ts";
import type { Backend, ByteRange, ObjectInfo, ObjectMeta } from "../storage/backend.ts";
import type { DeltaCodec } from "./codec.ts";
import type { CodecPool } from "./codec-pool.ts";
import { referenceNameFor } from "./layout.ts";
import type { BaselineAcquired, BaselineLease, ReferenceCache } from "./reference-cache.ts";
import { streamVerified } from "./stream-verify.ts";
import { getLogger } from "../observability/log.ts";

const log = getLogger("svc::delta");
import { fileRangeStream } from "../lib/file-streams.ts";

/** Settings read once per operation (a config snapshot; hot reload swaps what this returns). */
export interface DeltaSettings {
  /** Global `max_delta_ratio`. */
  maxDeltaRatio: number;
  /** `max_object_size`: the ceiling for delta processing. */
  maxObjectSize: number;
  /** `codec_timeout_secs * 1000`; also the longest a GET waits for a codec slot. */
  codecTimeoutMs: number;
  /** `codec_slot_wait_secs * 1000`: how long a PUT waits for a slot before going passthrough. */
  codecSlotWaitMs: number;
  bucketCompression(bucket: string): boolean;
  bucketMaxDeltaRatio(bucket: string): number | undefined;
}

/**
 * Metadata of a stored delta: the logical object's metadata plus the sha256 of the baseline it
 * was encoded against. `referenceSha256` is an extra property of the persisted record (the
 * filesystem backend stores the record as JSON verbatim); ObjectMeta does not declare it yet.
 */
export interface DeltaMeta extends ObjectMeta {
  referenceSha256?: string;
}

/**
 * Why a write was stored the way it was (the `reason` label of `svc_delta_decisions_total`):
 * `new_baseline` (reference), `ratio_met` (delta), and for passthrough `not_eligible` (type, size),
 * `ratio_exceeded`, `codec_busy` (no codec slot freed within `codec_slot_wait_secs`),
 * `codec_unavailable` (no xdelta3) or `baseline_unusable` (the baseline, or its cached copy, does
 * not match its sha256).
 */
export type DecisionReason =
  | "new_baseline"
  | "ratio_met"
  | "not_eligible"
  | "ratio_exceeded"
  | "codec_busy"
  | "codec_unavailable"
  | "baseline_unusable";

/** Where the delta store reports what it did (metrics); every method is optional to call. */
export interface DeltaObserver {
  /** One storage decision for an eligible-or-not write in a compressed bucket. */
  decision(
    kind: "delta" | "passthrough" | "reference",
    originalBytes: number,
    storedBytes: number,
    reason: DecisionReason,
  ): void;
  encoded(seconds: number): void;
  decoded(seconds: number): void;
  referenceCache(hit: boolean): void;
}

export interface DeltaContext {
  inner: Backend;
  observer?: DeltaObserver;
  codec: DeltaCodec;
  pool: CodecPool;
  /** Local directory for spooled bodies, encoder output and rebuilt objects. */
  spoolDir: string;
  /** Baseline files (a zero-byte cache still hands out private, verified downloads). */
  referenceCache: ReferenceCache;
  /**
   * Verified rebuilt delta objects by sha256 (`rebuilt_cache_size_mb`; a zero-byte cache still
   * hands out private files, deleted after the read).
   */
  rebuiltCache: ReferenceCache;
  /** Set when no codec can run: eligible writes go passthrough. */
  codecUnavailable?: string;
  /** Serializes baseline creation, encode and cleanup per `bucket/deltaspace`. */
  deltaspaceLocks: KeyLock;
  /**
   * Where a bucket really lives (e.g. `backend/real-name`), so two names routed to one bucket
   * share their deltaspace locks and cache entries. The bucket name itself when absent.
   */
  bucketIdentity?: (bucket: string) => string;
}

export function internalError(message: string, cause?: unknown): SvcError {
  return new SvcError("InternalError", message, {}, cause === undefined ? undefined : { cause });
}

/** The key of a deltaspace for its lock and its reference-cache entry. */
export function baselineCacheKey(
  ctx: Pick<DeltaContext, "bucketIdentity">,
  bucket: string,
  deltaspace: string,
): string {
  return `${ctx.bucketIdentity?.(bucket) ?? bucket}/${deltaspace}`;
}

export async function removeQuietly(path: string | undefined): Promise<void> {
  if (path !== undefined) await Deno.remove(path).catch(() => {});
}

/**
 * A lease on the deltaspace's baseline file (the caller releases it), or `corrupt` when the
 * stored bytes do not match `expectedSha256` (from the baseline's metadata). A cached file is not
 * re-hashed here: decodes are checked by the rebuilt object's sha256, encodes call `verify`. A
 * missing baseline or a backend failure throws.
 */
export async function fetchBaseline(
  ctx: DeltaContext,
  bucket: string,
  deltaspace: string,
  expectedSha256: string,
): Promise<BaselineAcquired> {
  const acquired = await ctx.referenceCache.acquire(
    baselineCacheKey(ctx, bucket, deltaspace),
    expectedSha256,
    async () => {
      const found = await ctx.inner.getObject(bucket, referenceNameFor(deltaspace));
      if (!found) throw internalError(`Baseline of deltaspace "${deltaspace}" is missing`);
      return found.body;
    },
  );
  ctx.observer?.referenceCache("corrupt" in acquired ? false : acquired.cacheHit);
  return acquired;
}

/** One "reading without space" warning per this many ms: every delta read does it while full. */
const NO_SPACE_LOG_EVERY_MS = 60_000;
let noSpaceLoggedAt = -Infinity;

function noteReadWithoutSpace(key: string): void {
  const now = performance.now();
  if (now - noSpaceLoggedAt < NO_SPACE_LOG_EVERY_MS) return;
  noSpaceLoggedAt = now;
  log.warn(
    "No local space to rebuild a delta object: reads decode twice (verify, then stream) until " +
      "space is freed",
    { object: key },
  );
}

/** The rebuilt-cache owner of a stored delta, for invalidation on overwrite and delete. */
export function rebuiltOwner(
  ctx: Pick<DeltaContext, "bucketIdentity">,
  bucket: string,
  storedName: string,
): string {
  return `${ctx.bucketIdentity?.(bucket) ?? bucket}/${storedName}`;
}

/**
 * Rebuilds the delta object `stored` (its stored name and metadata) and returns the requested
 * range of it. Wrong bytes never leave: the object is served from a file whose sha256 matched the
 * logical one. That file comes from the rebuilt-object cache (content-addressed by the object's
 * sha256, so never stale), or on a miss xdelta3 writes it there itself and it is hashed before
 * use (admitted when it fits `rebuilt_cache_size_mb`, else private to this read). On a mismatch the
 * cached baseline is evicted and InternalError thrown.
 */
export async function readDelta(
  ctx: DeltaContext,
  bucket: string,
  deltaspace: string,
  stored: ObjectInfo,
  deltaBody: ReadableStream<Uint8Array>,
  timeoutMs: number,
  range: ByteRange | undefined,
  reopenDelta: () => Promise<ReadableStream<Uint8Array>>,
): Promise<{ body: ReadableStream<Uint8Array>; cacheHit: boolean }> {
  const meta = stored.meta as DeltaMeta;
  const start = range?.start ?? 0;
  const end = range?.end ?? meta.size - 1;
  let deltaUsed = false;
  let baselineSha256: string | undefined;
  let baselineHit = false;
  const fail = (detail: string): SvcError => {
    // The decode used the cached file unverified: it may be what is wrong, so it goes.
    if (baselineSha256) {
      ctx.referenceCache.evictSha256(baselineSha256, `"${stored.key}": ${detail}`);
    } else ctx.referenceCache.evict(baselineCacheKey(ctx, bucket, deltaspace));
    return internalError(`Delta object "${stored.key}" cannot be rebuilt: ${detail}`);
  };
  const leaseBaseline = async (): Promise<BaselineLease> => {
    const refInfo = await ctx.inner.headObject(bucket, referenceNameFor(deltaspace));
    if (!refInfo) throw fail("its baseline is missing");
    if (meta.referenceSha256 !== undefined && meta.referenceSha256 !== refInfo.meta.sha256) {
      throw fail("it was encoded against a different baseline");
    }
    const baseline = await fetchBaseline(ctx, bucket, deltaspace, refInfo.meta.sha256);
    if ("corrupt" in baseline) throw fail("its baseline does not match its sha256");
    baselineSha256 = baseline.sha256;
    baselineHit = baseline.cacheHit;
    return baseline;
  };
  const build = async (path: string) => {
    deltaUsed = true;
    const baseline = await leaseBaseline();
    const started = performance.now();
    try {
      await ctx.pool.run(
        (signal) => ctx.codec.decodeToFile(baseline.path, deltaBody, path, { signal }),
        { timeoutMs, maxWaitMs: timeoutMs },
      );
    } catch (err) {
      // A full disk or a busy/slow codec says nothing about the baseline: it stays.
      if (err instanceof SvcError && err.code !== "InternalError") throw err;
      if (isNoSpaceError(err)) throw diskFullError(String(err));
      throw fail(err instanceof Error ? err.message : String(err));
    } finally {
      await baseline.release(); // the decoder has exited: the baseline file is no longer read
    }
    ctx.observer?.decoded((performance.now() - started) / 1000);
  };
  try {
    if (range && (start < 0 || end < start || end >= meta.size)) {
      throw new SvcError("InvalidRange", `Range ${start}-${end} is outside object`);
    }
    let rebuilt: BaselineAcquired;
    try {
      rebuilt = await ctx.rebuiltCache.acquireBuilt(
        rebuiltOwner(ctx, bucket, stored.key),
        meta.sha256,
        build,
      );
    } catch (err) {
      if (!isNoSpaceError(err)) throw err;
      // No room for the rebuilt object: verify and stream it in two decodes instead.
      return await readWithoutSpace();
    }
    if ("corrupt" in rebuilt) throw fail("the rebuilt bytes do not match the object's sha256");
    let file: Deno.FsFile;
    try {
      // Once open, the bytes stay readable even if the entry is evicted meanwhile.
      file = await Deno.open(rebuilt.path, { read: true });
    } finally {
      await rebuilt.release();
    }
    return {
      body: fileRangeStream(file, start, end - start + 1, meta.size),
      cacheHit: rebuilt.cacheHit || baselineHit,
    };
  } finally {
    if (!deltaUsed) await deltaBody.cancel().catch(() => {});
  }

  async function readWithoutSpace(): Promise<
    { body: ReadableStream<Uint8Array>; cacheHit: boolean }
  > {
    noteReadWithoutSpace(stored.key);
    let baseline: BaselineLease;
    try {
      baseline = await leaseBaseline();
    } catch (err) {
      // Not even the baseline fits: say so rather than a generic 500.
      if (!isNoSpaceError(err)) throw err;
      throw diskFullError(String(err), `delta object "${stored.key}" cannot be rebuilt`);
    }
    const body = await streamVerified(ctx, {
      baseline,
      reopenDelta,
      sha256: meta.sha256,
      size: meta.size,
      start,
      end,
      timeoutMs,
      mismatch: fail,
    });
    return { body, cacheHit: baseline.cacheHit };
  }
}
