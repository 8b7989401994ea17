/**
 * The write side of the delta store. A PUT body is spooled to a local file first (the codec needs
 * a file, and the body may be read twice: once as a new baseline, once as the encode target);
 * commit then decides how it is stored:
 *
 * - not eligible, or compression off: the spool goes to the inner backend under the plain key;
 * - eligible, no baseline yet: the spool becomes the baseline `<folder>reference.bin` of the
 *   key's deltaspace (its parent folder, or a group's `.dg/<id>/`, see groups/), then a tiny delta
 *   of the object against it is stored as `<key>.delta` (a failure after the baseline rolls the
 *   baseline back);
 * - eligible, baseline present: encode against it; the delta is kept only when it beats the
 *   bucket's `max_delta_ratio`, else the object is stored passthrough.
 *
 * - eligible, in a group whose deltas grew (REBASELINE_STREAK encodes in a row over the
 *   rebaseline ratio, groups/generations.ts): the object becomes the baseline of a new generation
 *   `.dg/<id>/g<N>/` plus a tiny delta, like a group's first object; older deltas keep theirs.
 *
 * - an archive in a bucket with `archive_deltas: background` (the default): stored passthrough
 *   (`archive_pending`) and queued; background/archive-convert.ts later stores the same write
 *   again through commitArchiveOrBody (`sameWrite`), off the request path.
 *
 * Everything that depends on the baseline runs under the deltaspace lock (a group's one lock for
 * all its generations), so concurrent PUTs of one deltaspace create exactly one baseline and a
 * delete cannot remove it under an encode. Across svc instances sharing the backend, the
 * backend's conditional writes do the same (baseline-guard.ts): a baseline is created only where
 * none exists (the loser encodes against the winner's), and a delta is kept only when its
 * baseline is still held after the delta's commit (else the object goes passthrough).
 * A baseline whose bytes no longer match its sha256 is never encoded against: the object is
 * stored passthrough (it stays readable; deltas already made against it cannot be rebuilt). The
 * same holds for a corrupt cached copy of a good baseline: the cached file is re-hashed while the
 * encode runs and a delta is kept only once that check passed (a cache problem never fails a PUT).
 */

import { SvcError } from "../lib/mod.ts";
import type { ObjectInfo, ObjectMeta, StagedObject } from "../storage/mod.ts";
import type { EncodeResult } from "./codec/codec.ts";
import { effectiveMaxDeltaRatio, isDeltaEligible, keepsDelta } from "./eligibility.ts";
import {
  type DecisionReason,
  type DeltaContext,
  type DeltaMeta,
  type DeltaSettings,
  removeQuietly,
} from "./delta-context.ts";
import type { Deltaspace } from "./groups/deltaspace-policy.ts";
import { releaseReplaced } from "./delta-cleanup.ts";
import { settleForms } from "./fleet/stored-forms.ts";
import type { SameWrite } from "./fleet/ordered-commit.ts";
import { storedNameFor } from "./layout.ts";
import {
  plainMeta,
  storeDelta,
  storeFile,
  storeOrdered,
  type Target,
  warmRebuilt,
  warms,
} from "./delta-stored.ts";
import { fetchBaseline } from "./delta-read.ts";
import { baselineLost, baselineStillHeld, winnerBaseline } from "./fleet/baseline-guard.ts";
import {
  createBaselineAndDelta,
  currentBaseline,
  type EncodeInput,
  encodeWith,
  rebaseline,
  rebaselineDue,
} from "./delta-baseline.ts";
import { deltaspaceLockKey } from "./groups/generations.ts";
import { containerOf, prepareArchiveForm } from "./archive-form.ts";
import { type LiveEncode, liveResult, type Spool } from "./live-encode.ts";
import { getLogger } from "../observability/mod.ts";

const log = getLogger("svc::delta");

/** An eligible object that is stored passthrough after all, and why. */
type Passthrough = { passthrough: DecisionReason };

/**
 * Stores an encode's output when it beats the ratio and its baseline file passed verification
 * (awaited only for a delta worth keeping); otherwise says why it goes passthrough.
 */
async function keepIfWorthIt(
  ctx: DeltaContext,
  bucket: string,
  key: string,
  target: Target,
  encoded: EncodeResult,
  meta: ObjectMeta,
  ratio: number,
  referenceSha256: string,
  baselineVerified: Promise<boolean>,
): Promise<ObjectInfo | Passthrough> {
  if (encoded.aborted || !keepsDelta(encoded.deltaBytes, meta.size, ratio)) {
    return { passthrough: "ratio_exceeded" };
  }
  if (!(await baselineVerified)) return discardUnverified(key);
  const info = await storeDelta(
    ctx,
    bucket,
    key,
    target,
    encoded.deltaPath,
    meta,
    referenceSha256,
    "ratio_met",
    encoded.codec,
  );
  // Another instance retired or replaced the baseline meanwhile: this delta cannot be trusted.
  if (!(await baselineStillHeld(ctx, bucket, target.space.folder, referenceSha256))) {
    return baselineLost(key, target.space.folder);
  }
  ctx.observer?.decision("delta", meta.size, info.storedSize, "ratio_met");
  return info;
}

/** A delta made against an unverified cached baseline is dropped: store passthrough. */
function discardUnverified(key: string): Passthrough {
  log.warn("Cached baseline failed verification; storing the object passthrough", { key });
  return { passthrough: "baseline_unusable" };
}

/**
 * An eligible object: its stored ObjectInfo, or why to store it passthrough. A codec slot is
 * waited for up to `codec_slot_wait_secs` (under the deltaspace lock: slot holders never wait for
 * a deltaspace lock, so this cannot deadlock); none free in time means passthrough.
 */
async function commitEligible(
  ctx: DeltaContext,
  settings: DeltaSettings,
  bucket: string,
  key: string,
  target: Target,
  input: EncodeInput,
  meta: ObjectMeta,
  live?: LiveEncode,
): Promise<ObjectInfo | Passthrough> {
  const stored = await encodeUnderLock(ctx, settings, bucket, key, target, input, meta, live);
  // Outside this folder's lock: taking another one while holding it could deadlock. The new
  // delta is in: a failed cleanup leaves at worst an unused baseline, it does not fail the PUT.
  if (target.replaced !== undefined) {
    await releaseReplaced(ctx, bucket, key, target.replaced).catch((err) =>
      log.warn("Cannot release the baseline a replaced delta used", {
        key,
        deltaspace: target.replaced,
        error: String(err),
      })
    );
  }
  // The key's passthrough name goes when older than this (checked) delta, never a newer write.
  if ("passthrough" in stored) return stored;
  await settleForms(ctx, bucket, key, storedNameFor(key, "delta"), stored.version);
  return stored;
}

/** commitEligible's work under the lock of the target's baseline folder. */
function encodeUnderLock(
  ctx: DeltaContext,
  settings: DeltaSettings,
  bucket: string,
  key: string,
  target: Target,
  input: EncodeInput,
  meta: ObjectMeta,
  live: LiveEncode | undefined,
): Promise<ObjectInfo | Passthrough> {
  const ratio = effectiveMaxDeltaRatio(
    settings.maxDeltaRatio,
    settings.bucketMaxDeltaRatio(bucket),
  );
  const timeoutMs = settings.codecTimeoutMs;
  return ctx.deltaspaceLocks.run(deltaspaceLockKey(ctx, bucket, target.space.folder), async () => {
    // Error is not absence: a failed HEAD (or LIST) throws and aborts the PUT.
    const referenceInfo = await currentBaseline(ctx, bucket, target);
    const deltaspace = target.space.folder; // a group's current generation
    let referenceSha256 = referenceInfo?.meta.sha256;
    const fromLive = live && referenceSha256 === live.referenceSha256
      ? await liveResult(ctx, live)
      : "redo";
    if (live && fromLive !== "redo") {
      const encoded = fromLive;
      if (encoded === null) return discardUnverified(key);
      if (rebaselineDue(ctx, bucket, target, encoded, meta.size, referenceInfo)) {
        const moved = await rebaseline(ctx, settings, bucket, key, target, input, meta);
        if (moved) return moved;
      }
      const { baselineVerified } = live;
      return await keepIfWorthIt(
        ctx,
        bucket,
        key,
        target,
        encoded,
        meta,
        ratio,
        live.referenceSha256,
        baselineVerified,
      );
    }
    // No encode ran while the body arrived, or the baseline changed since: work from the spool.
    await live?.dispose(); // frees its codec slot before taking one
    const permit = await ctx.pool.acquireWithin(undefined, settings.codecSlotWaitMs);
    if (!permit) return { passthrough: "codec_busy" };
    try {
      if (referenceSha256 === undefined) {
        const created = await createBaselineAndDelta(
          ctx,
          permit,
          bucket,
          key,
          target,
          input,
          meta,
          timeoutMs,
        );
        if (created === "unheld") return baselineLost(key, deltaspace);
        if (created !== "lost") return created;
        // Another instance created this deltaspace's baseline first: encode against theirs.
        referenceSha256 = await winnerBaseline(ctx, bucket, deltaspace);
        if (referenceSha256 === undefined) return baselineLost(key, deltaspace);
      }
      let baseline: Awaited<ReturnType<typeof fetchBaseline>>;
      try {
        const known = referenceInfo ?? undefined;
        baseline = await fetchBaseline(ctx, bucket, deltaspace, referenceSha256, known);
      } catch (err) {
        // Retired by another instance since it was looked at (its last delta was replaced).
        if (await baselineStillHeld(ctx, bucket, deltaspace, referenceSha256)) throw err;
        return baselineLost(key, deltaspace);
      }
      if ("corrupt" in baseline) return { passthrough: "baseline_unusable" };
      // Verified beside the encode, not before it; cut short when the answer is not needed.
      const unneeded = new AbortController();
      const verified = ctx.referenceCache.verify(baseline, unneeded.signal);
      try {
        const maxDeltaBytes = Math.floor(meta.size * ratio);
        let encoded: EncodeResult;
        try {
          encoded = await encodeWith(ctx, permit, baseline.path, input, timeoutMs, maxDeltaBytes);
        } catch (err) {
          if (!(await verified)) return discardUnverified(key);
          throw err;
        }
        try {
          if (rebaselineDue(ctx, bucket, target, encoded, meta.size, referenceInfo)) {
            const moved = await rebaseline(ctx, settings, bucket, key, target, input, meta);
            if (moved) return moved;
          }
          return await keepIfWorthIt(
            ctx,
            bucket,
            key,
            target,
            encoded,
            meta,
            ratio,
            referenceSha256,
            verified,
          );
        } finally {
          if (!encoded.aborted) await removeQuietly(encoded.deltaPath);
        }
      } finally {
        unneeded.abort();
        await verified;
        await baseline.release();
      }
    } finally {
      permit.release();
    }
  });
}

/** What a staged delta-eligible PUT holds until its commit. */
export interface StagedDeltaOptions {
  bucket: string;
  key: string;
  /** Where its delta would go (resolved once, at staging). */
  space: Deltaspace;
  spool: Spool;
  live?: LiveEncode;
  /** No codec slot freed in time: passthrough. */
  codecBusy?: boolean;
  /** Drops what is remembered of the key (metadata cache, rebuilt entry); once the commit ends. */
  forget: () => void;
  /**
   * Set for an archive of a bucket with `archive_deltas: background`: the PUT stores it as it
   * came (`archive_pending`) and hands the stored object to this (the backlog, background/).
   */
  convertLater?: (stored: ObjectInfo) => Promise<void>;
  /** The commit stores an existing passthrough write again (background/archive-convert.ts). */
  sameWrite?: SameWrite;
}

/**
 * An eligible object: an archive is encoded in its token form when that rebuilds it exactly
 * (archive-form.ts), anything else as it is.
 */
export async function commitArchiveOrBody(
  ctx: DeltaContext,
  settings: DeltaSettings,
  options: StagedDeltaOptions,
  meta: ObjectMeta,
): Promise<ObjectInfo | Passthrough> {
  const { bucket, key, space, spool, live, sameWrite } = options;
  const target = (): Target => ({ space, sameWrite });
  const codecSetting = settings.bucketDeltaCodec?.(bucket);
  const form = await prepareArchiveForm(ctx, settings, key, spool, meta);
  if (form === null) {
    const digests = () => Promise.resolve({ sha256: meta.sha256, md5: meta.md5 });
    const input = { spool, digests, codecSetting };
    return await commitEligible(ctx, settings, bucket, key, target(), input, meta, live);
  }
  if ("passthrough" in form) return form;
  try {
    await live?.dispose(); // an encode of the raw bytes is of no use (none is planned for archives)
    const transformed = { ...meta, transform: form.transform } as ObjectMeta;
    const original = { spool, sha256: meta.sha256, md5: meta.md5 };
    const input = { ...form, codecSetting, original };
    return await commitEligible(ctx, settings, bucket, key, target(), input, transformed);
  } finally {
    await removeQuietly(form.spool.path);
  }
}

/** The StagedObject a DeltaBackend hands out: the decision is made at commit time. */
export function stagedDelta(
  ctx: DeltaContext,
  settings: DeltaSettings,
  options: StagedDeltaOptions,
): StagedObject {
  const { bucket, key, space, spool, live, codecBusy = false, forget } = options;
  let state: "staged" | "used" = "staged";
  return {
    size: spool.size,
    commit: async (meta) => {
      if (state !== "staged") throw new Error(`Staged object "${key}" was already used`);
      state = "used";
      let warm: ObjectInfo | undefined;
      try {
        const compression = settings.bucketCompression(bucket);
        const { eligible } = isDeltaEligible(key, {
          size: meta.size,
          maxObjectSize: settings.maxObjectSize,
          compression,
        });
        if (eligible && meta.size !== spool.size) {
          throw new SvcError("InternalError", `Metadata size ${meta.size} != body ${spool.size}`);
        }
        const stored: ObjectInfo | Passthrough = !eligible
          ? { passthrough: "not_eligible" }
          : codecBusy
          ? { passthrough: "codec_busy" }
          : options.convertLater && await containerOf(spool.path) !== null
          ? { passthrough: "archive_pending" }
          : await commitArchiveOrBody(ctx, settings, options, plainMeta(meta));
        if (!("passthrough" in stored)) {
          if (warms(ctx, stored, spool)) warm = stored;
          return stored;
        }
        const passthrough: DeltaMeta = { ...plainMeta(meta), storage: "passthrough" };
        if (compression) passthrough.storageReason = stored.passthrough;
        const info = compression
          ? (await storeOrdered(ctx, bucket, key, spool.path, passthrough)).info
          : await storeFile(ctx, bucket, key, spool.path, passthrough);
        if (!compression) return info;
        await settleForms(ctx, bucket, key, key);
        if (stored.passthrough === "archive_pending") await options.convertLater?.(info);
        ctx.observer?.decision("passthrough", meta.size, info.storedSize, stored.passthrough);
        return { ...info, debug: { deltaspace: space.label } };
      } finally {
        await live?.dispose();
        forget(); // before the warm-up: it would drop the new entry too
        if (warm) warmRebuilt(ctx, bucket, key, spool, warm.meta.sha256);
        else await removeQuietly(spool.path);
      }
    },
    abort: async () => {
      state = "used";
      await live?.dispose();
      await removeQuietly(spool.path);
    },
  };
}
