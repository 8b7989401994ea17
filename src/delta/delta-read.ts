/**
 * The read side of the delta store: leasing a deltaspace's baseline file from the reference cache
 * (downloaded and verified on a miss, re-hashed on a hit before a decode uses it) and rebuilding a
 * delta object into a file whose sha256 is checked before a single byte reaches the caller; every
 * chunk of that file is checked again as it is sent (verified-file.ts).
 */

import { diskFullError, isNoSpaceError, SvcError } from "../lib/mod.ts";
import type { ByteRange, ObjectInfo } from "../storage/mod.ts";
import {
  baselineCacheKey,
  type DeltaContext,
  type DeltaMeta,
  internalError,
  rebuiltOwner,
} from "./delta-context.ts";
import { referenceNameFor } from "./layout.ts";
import type { BaselineAcquired, BaselineLease } from "./cache/reference-cache.ts";
import { streamVerified } from "./stream-verify.ts";
import type { MemoStream } from "./archive/archive-codec.ts";
import {
  archiveAllowanceMs,
  type BaselineForm,
  baselineFormOf,
  decodeTransformed,
  deriveTokenForm,
} from "./archive-form.ts";
import { openVerifiedRange } from "./cache/verified-file.ts";
import { decodedSizeOf, IDENTITY } from "./codec/codec-choice.ts";
import { getLogger } from "../observability/mod.ts";

const log = getLogger("svc::delta");

/**
 * A lease on the deltaspace's baseline file (the caller releases it), or `corrupt` when the
 * stored bytes do not match `expectedSha256` (from the baseline's metadata). A cached file is not
 * re-hashed here (decodes call `verifiedBaseline`, encodes call `verify`). A baseline stored
 * encrypted is never kept in the cache. A missing baseline or a backend failure throws.
 */
export async function fetchBaseline(
  ctx: DeltaContext,
  bucket: string,
  deltaspace: string,
  expectedSha256: string,
  stored?: ObjectInfo,
): Promise<BaselineAcquired> {
  const form = stored ? baselineFormOf(stored.meta) : null;
  if (stored && form) return await fetchDerived(ctx, bucket, deltaspace, stored, form);
  const acquired = await ctx.referenceCache.acquire(
    baselineCacheKey(ctx, bucket, deltaspace),
    expectedSha256,
    async () => {
      const found = await ctx.inner.getObject(bucket, referenceNameFor(deltaspace));
      if (!found) throw internalError(`Baseline of deltaspace "${deltaspace}" is missing`);
      return { body: found.body, persist: found.info.sealed !== true };
    },
  );
  ctx.observer?.referenceCache("corrupt" in acquired ? false : acquired.cacheHit);
  return acquired;
}

/**
 * The token form of a baseline stored as the archive itself (archive-form.ts `BaselineForm`):
 * derived from the stored bytes (leased, verified) into the reference cache under its own
 * sha256, so it is made once per process while it stays cached. Original bytes that fail their
 * sha256 leave the derived file empty, which then answers `corrupt` as the baseline would.
 */
async function fetchDerived(
  ctx: DeltaContext,
  bucket: string,
  deltaspace: string,
  stored: ObjectInfo,
  form: BaselineForm,
): Promise<BaselineAcquired> {
  const owner = `${baselineCacheKey(ctx, bucket, deltaspace)}#${form.transform}`;
  const acquired = await ctx.referenceCache.acquireBuilt(owner, form.sha256, async (path) => {
    const raw = await verifiedBaseline(ctx, bucket, deltaspace, stored.meta.sha256);
    if ("corrupt" in raw) return;
    try {
      const streams = await deriveTokenForm(raw.path, path);
      if (stored.sealed !== true) ctx.streamMemos?.remember(form.sha256, raw.sha256, streams);
    } finally {
      await raw.release();
    }
  }, stored.sealed !== true);
  ctx.observer?.referenceCache("corrupt" in acquired ? false : acquired.cacheHit);
  return acquired;
}

/**
 * Puts the token form of a baseline just created from an archive into the reference cache, as
 * `fetchDerived` would derive it (its sha256 is checked on admission): the PUT has the form in
 * hand, so the group's next write does not expand the baseline again, and its predicted streams
 * (`streams`, archive/stream-memo.ts). Best effort: a failure only leaves the derivation to the
 * first use.
 */
export async function seedDerivedBaseline(
  ctx: DeltaContext,
  bucket: string,
  deltaspace: string,
  stored: ObjectInfo,
  formPath: string,
  streams?: MemoStream[],
): Promise<void> {
  const form = baselineFormOf(stored.meta);
  if (form === null || stored.sealed === true) return; // sealed: never kept on disk
  ctx.streamMemos?.remember(form.sha256, stored.meta.sha256, streams);
  const owner = `${baselineCacheKey(ctx, bucket, deltaspace)}#${form.transform}`;
  try {
    const acquired = await ctx.referenceCache.acquireBuilt(
      owner,
      form.sha256,
      (path) => Deno.copyFile(formPath, path),
    );
    if (!("corrupt" in acquired)) await acquired.release();
  } catch (err) {
    log.debug("Baseline token form not seeded", { bucket, deltaspace, error: String(err) });
  }
}

/** `fetchBaseline`, with a cached file re-hashed before use: a damaged one is fetched again. */
async function verifiedBaseline(
  ctx: DeltaContext,
  bucket: string,
  deltaspace: string,
  expectedSha256: string,
  stored?: ObjectInfo,
): Promise<BaselineAcquired> {
  const acquired = await fetchBaseline(ctx, bucket, deltaspace, expectedSha256, stored);
  if ("corrupt" in acquired || await ctx.referenceCache.verify(acquired)) return acquired;
  await acquired.release(); // evicted by verify: the next acquisition downloads it
  return await fetchBaseline(ctx, bucket, deltaspace, expectedSha256, stored);
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
  /** Set by leaseBaseline: the object is its baseline's own bytes (an archive's first version). */
  let wholeBaseline = false;
  const leaseBaseline = async (): Promise<BaselineLease> => {
    const refInfo = await ctx.inner.headObject(bucket, referenceNameFor(deltaspace));
    if (!refInfo) throw fail("its baseline is missing");
    if (meta.referenceSha256 !== undefined && meta.referenceSha256 !== refInfo.meta.sha256) {
      throw fail("it was encoded against a different baseline");
    }
    // An archive baseline keeps the archive's own bytes and its object is an empty delta: those
    // bytes are the object, so they are read as they are rather than rebuilt from the token form.
    wholeBaseline = meta.codec === IDENTITY && refInfo.meta.sha256 === meta.sha256 &&
      baselineFormOf(refInfo.meta) !== null;
    const baseline = await verifiedBaseline(
      ctx,
      bucket,
      deltaspace,
      refInfo.meta.sha256,
      wholeBaseline ? undefined : refInfo,
    );
    if ("corrupt" in baseline) throw fail("its baseline does not match its sha256");
    baselineSha256 = baseline.sha256;
    baselineHit = baseline.cacheHit;
    return baseline;
  };
  /**
   * The baseline archive of a derived form with known streams (stream-memo.ts), leased; none when
   * it cannot be had (the rebuild then runs the model for every stream, as without a memo).
   */
  const leaseMemoArchive = async (formSha256: string) => {
    const known = ctx.streamMemos?.of(formSha256);
    if (known === undefined) return undefined;
    try {
      const lease = await verifiedBaseline(ctx, bucket, deltaspace, known.archiveSha256);
      return "corrupt" in lease ? undefined : { lease, streams: known.streams };
    } catch (err) {
      log.debug("Baseline archive not leased for copying", { key: stored.key, error: String(err) });
      return undefined;
    }
  };
  // The codec that wrote the delta (a zstd decode holds its memory in the budget).
  const codec = ctx.codecs.decoderFor(meta.codec, decodedSizeOf(meta.size, meta.transform));
  /** The stored delta a rebuild decodes: read once; a rebuild after this read returned reopens it. */
  let delta: ReadableStream<Uint8Array> | undefined = deltaBody;
  const takeDelta = (): ReadableStream<Uint8Array> => {
    const taken = delta;
    if (taken === undefined) throw internalError(`The delta of "${stored.key}" was read already`);
    delta = undefined;
    return taken;
  };
  const build = async (path: string) => {
    deltaUsed = true;
    const source = takeDelta();
    let baseline: BaselineLease;
    try {
      baseline = await leaseBaseline();
    } catch (err) {
      await source.cancel().catch(() => {}); // no decode reads it: its file is closed here
      throw err;
    }
    const started = performance.now();
    // An archive's members unchanged since its baseline are copied from the baseline archive.
    const archive = meta.transform !== undefined && !wholeBaseline
      ? await leaseMemoArchive(baseline.sha256)
      : undefined;
    try {
      const decoded = await ctx.pool.run<{ copied: number } | void>(
        (signal) =>
          meta.transform === undefined || wholeBaseline
            ? codec.decodeToFile(baseline.path, source, path, { signal })
            : decodeTransformed(
              ctx.spoolDir,
              meta.transform,
              path,
              (formPath) => codec.decodeToFile(baseline.path, source, formPath, { signal }),
              signal,
              archive && { archivePath: archive.lease.path, streams: archive.streams },
            ),
        {
          timeoutMs: meta.transform === undefined
            ? timeoutMs
            : timeoutMs + archiveAllowanceMs(meta.size),
          maxWaitMs: timeoutMs,
        },
      );
      if (decoded?.copied) ctx.observer?.streamsCopied?.(decoded.copied);
    } catch (err) {
      // A full disk or a busy/slow codec says nothing about the baseline: it stays.
      if (err instanceof SvcError && err.code !== "InternalError") throw err;
      if (isNoSpaceError(err)) throw diskFullError(String(err));
      throw fail(err instanceof Error ? err.message : String(err));
    } finally {
      await baseline.release(); // the decoder has exited: the baseline file is no longer read
      await archive?.lease.release();
    }
    ctx.observer?.decoded((performance.now() - started) / 1000);
  };
  try {
    if (range && (start < 0 || end < start || end >= meta.size)) {
      throw new SvcError("InvalidRange", `Range ${start}-${end} is outside object`);
    }
    // An encrypted backend's object is rebuilt for this read only, never kept on disk.
    const persist = stored.sealed !== true;
    const damaged = (chunk: number) => {
      ctx.rebuiltCache.reportDamaged(meta.sha256, `"${stored.key}": chunk ${chunk} is damaged`);
      return internalError(`Delta object "${stored.key}": its rebuilt file is damaged`);
    };
    /** The rebuilt object (cached, else rebuilt) from `from` to the range's end, verified. */
    const openRebuilt = async (
      from: number,
      resume?: (offset: number) => Promise<ReadableStream<Uint8Array> | null>,
    ) => {
      const rebuilt = await ctx.rebuiltCache.acquireBuilt(
        rebuiltOwner(ctx, bucket, stored.key),
        meta.sha256,
        build,
        persist,
      );
      if ("corrupt" in rebuilt) throw fail("the rebuilt bytes do not match the object's sha256");
      let file: Deno.FsFile;
      try {
        // Once open, the bytes stay readable even if the entry is evicted meanwhile.
        file = await Deno.open(rebuilt.path, { read: true });
      } finally {
        await rebuilt.release();
      }
      const chunks = rebuilt.chunks;
      const size = meta.size;
      const body = await openVerifiedRange({
        file,
        chunks,
        size,
        start: from,
        end,
        damaged,
        resume,
      });
      return { body, cacheHit: rebuilt.cacheHit };
    };
    /**
     * Damage found after bytes were sent (the entry is evicted): the object is rebuilt from its
     * stored delta once more and the response goes on from there with the same bytes.
     */
    const resume = async (offset: number) => {
      delta = await reopenDelta();
      try {
        return (await openRebuilt(offset)).body;
      } catch (err) {
        log.warn("A damaged rebuilt object could not be rebuilt during its read", {
          key: stored.key,
          error: String(err),
        });
        return null;
      } finally {
        await delta?.cancel().catch(() => {});
        delta = undefined;
      }
    };
    for (let attempt = 1;; attempt++) {
      let opened: Awaited<ReturnType<typeof openRebuilt>>;
      try {
        opened = await openRebuilt(start, resume);
      } catch (err) {
        if (!isNoSpaceError(err)) throw err;
        // An archive's token form needs a file to be contracted from: no streaming fallback.
        if (meta.transform !== undefined) {
          throw diskFullError(String(err), `delta object "${stored.key}" cannot be rebuilt`);
        }
        // No room for the rebuilt object: verify and stream it in two decodes instead.
        return await readWithoutSpace();
      }
      if (opened.body !== null) {
        return { body: opened.body, cacheHit: opened.cacheHit || baselineHit };
      }
      // Damaged before a byte left (counted, evicted): rebuild it once from the stored delta.
      if (deltaUsed || attempt === 2) {
        throw internalError(`Delta object "${stored.key}": its rebuilt file is damaged`);
      }
    }
  } finally {
    await delta?.cancel().catch(() => {});
    delta = undefined;
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
      codec,
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
