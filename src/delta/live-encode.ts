/**
 * Spooling a PUT body while it is encoded: when a deltaspace already has a baseline, the body is
 * written to the spool file and the encoder reads that file as it grows (spool-tail.ts), so a
 * delta PUT takes about as long as the slower of the upload and the encode instead of their sum.
 * The spool is kept: the commit may need it (a poor ratio is stored passthrough from it; a
 * baseline replaced since the encode started means encoding again from it).
 *
 * The upload never waits for the encoder and the encoder never waits for the upload's chunks one
 * by one: it takes 1 MiB reads from the page cache whenever it is ready for more (measured: the
 * earlier design, each chunk handed to the spool and to xdelta3's stdin in lock-step, left
 * xdelta3 idle about 40% of a 100 MiB PUT). An encoder that stops early (its output passed what
 * the ratio allows) simply stops reading while the spool carries on.
 *
 * The baseline lease comes from the reference cache. A cached file is re-hashed alongside the
 * encode (`baselineVerified`), never before it: the commit awaits that result before keeping the
 * delta (see reference-cache.ts for the policy).
 *
 * `codec_timeout_secs` measures codec work, not the client's upload speed: the clock starts when
 * the last body byte is in the spool; an encoder still running (or no longer reading) that much
 * later is killed.
 */

import type { EncodeResult } from "./codec/codec.ts";
import type { CodecName } from "./codec/codec-choice.ts";
import { type CodecPermit, codecTimeoutError } from "./codec/codec-pool.ts";
import {
  type DeltaContext,
  type DeltaSettings,
  internalError,
  removeQuietly,
} from "./delta-context.ts";
import { fetchBaseline } from "./delta-read.ts";
import { effectiveMaxDeltaRatio } from "./eligibility.ts";
import { referenceNameFor } from "./layout.ts";
import type { BaselineLease } from "./cache/reference-cache.ts";
import {
  diskFullError,
  isNoSpaceError,
  SvcError,
  writeAll,
  writeStreamToFile,
} from "../lib/mod.ts";
import { SpoolProgress, tailSpool } from "./spool-tail.ts";
import { getLogger } from "../observability/mod.ts";

const log = getLogger("svc::delta");

export interface Spool {
  path: string;
  size: number;
}

/** What a live encode ended with. Never a rejection: errors are values here. */
export type LiveOutcome =
  | { result: EncodeResult; seconds: number }
  | { error: unknown };

export interface LiveEncode {
  /** sha256 of the baseline the encode ran against; the commit checks it is still current. */
  referenceSha256: string;
  /** The bound the encode used for early abort. */
  maxDeltaBytes: number;
  /** The codec the encode runs (codec-choice.ts). */
  codec: CodecName;
  /**
   * Whether the baseline file the encode read matches its sha256 (false also when the check was
   * cut short). Never rejects. A false answer has already evicted the cached file.
   */
  baselineVerified: Promise<boolean>;
  /** Settles once the encode has ended (and its subprocess is gone). */
  outcome: Promise<LiveOutcome>;
  /**
   * Stops the encode if running, removes its delta file, frees its codec slot and (once the
   * verification has ended too) its baseline lease. Idempotent.
   */
  dispose(): Promise<void>;
}

export interface LiveEncodePlan {
  baseline: BaselineLease;
  referenceSha256: string;
  permit: CodecPermit;
  maxDeltaBytes: number;
  timeoutMs: number;
  /** The bucket's `delta_codec`. */
  codecSetting?: string;
  /** The body's declared length (zstd needs it to stream; xdelta3 runs without it). */
  targetBytes?: number;
}

/**
 * What an encode during the upload needs, when the deltaspace (the baseline folder the key's
 * delta would join) has a usable baseline: a lease on
 * its local file and a codec slot, waited for up to `codec_slot_wait_secs` before the body is
 * read (the upload pauses meanwhile). `codec_busy` when no slot freed in time: the object is then
 * stored passthrough, never refused. undefined otherwise: the commit decides from the spool (a
 * new baseline, or a baseline that is corrupt).
 */
export async function planLiveEncode(
  ctx: DeltaContext,
  settings: DeltaSettings,
  bucket: string,
  deltaspace: string,
  expectedSize: number | undefined,
  signal: AbortSignal | undefined,
): Promise<LiveEncodePlan | "codec_busy" | undefined> {
  // Error is not absence: a failed HEAD aborts the PUT.
  const reference = await ctx.inner.headObject(bucket, referenceNameFor(deltaspace));
  if (!reference) return undefined;
  const permit = await ctx.pool.acquireWithin(signal, settings.codecSlotWaitMs);
  if (!permit) return "codec_busy";
  try {
    let baseline: Awaited<ReturnType<typeof fetchBaseline>>;
    try {
      baseline = await fetchBaseline(ctx, bucket, deltaspace, reference.meta.sha256, reference);
    } catch (err) {
      // Retired by another svc instance since the HEAD: the commit decides from the spool.
      const now = await ctx.inner.headObject(bucket, referenceNameFor(deltaspace));
      if (now?.meta.sha256 === reference.meta.sha256) throw err;
      permit.release();
      return undefined;
    }
    if ("corrupt" in baseline) {
      permit.release();
      return undefined;
    }
    const ratio = effectiveMaxDeltaRatio(
      settings.maxDeltaRatio,
      settings.bucketMaxDeltaRatio(bucket),
    );
    return {
      baseline,
      referenceSha256: reference.meta.sha256,
      permit,
      maxDeltaBytes: Math.floor((expectedSize ?? settings.maxObjectSize) * ratio),
      timeoutMs: settings.codecTimeoutMs,
      codecSetting: settings.bucketDeltaCodec?.(bucket),
      targetBytes: expectedSize,
    };
  } catch (err) {
    permit.release();
    throw err;
  }
}

/** Writes a request body to a new file in the spool directory. */
export async function spoolBody(
  ctx: DeltaContext,
  body: ReadableStream<Uint8Array>,
  signal?: AbortSignal,
): Promise<Spool> {
  const path = await Deno.makeTempFile({ dir: ctx.spoolDir, prefix: "put-" });
  let file: Deno.FsFile | undefined;
  try {
    file = await Deno.open(path, { write: true, truncate: true });
    const size = await writeStreamToFile(body, file, signal);
    file.close();
    file = undefined;
    return { path, size };
  } catch (err) {
    file?.close();
    await removeQuietly(path);
    throw err;
  }
}

/**
 * Spools `body` and encodes it against `plan.baseline` in the same pass. The plan's permit
 * and baseline lease belong to the returned LiveEncode from here on (dispose frees them). A failure
 * of the body (client gone, bad digest upstream) removes the spool and disposes the encode.
 */
export async function spoolWhileEncoding(
  ctx: DeltaContext,
  body: ReadableStream<Uint8Array>,
  plan: LiveEncodePlan,
  signal?: AbortSignal,
): Promise<{ spool: Spool; live: LiveEncode }> {
  let path: string;
  try {
    path = await Deno.makeTempFile({ dir: ctx.spoolDir, prefix: "put-" });
  } catch (err) {
    plan.permit.release();
    await plan.baseline.release();
    throw err;
  }
  const stop = new AbortController();
  const codecSignal = signal ? AbortSignal.any([signal, stop.signal]) : stop.signal;
  const progress = new SpoolProgress();
  const started = performance.now();
  const chosen = ctx.codecs.chooseEncoder({
    setting: plan.codecSetting,
    transform: undefined, // archives have no live encode
    baselineBytes: await Deno.stat(plan.baseline.path).then((s) => s.size, () => 0),
    targetBytes: plan.targetBytes,
  });
  const outcome: Promise<LiveOutcome> = chosen
    .encode(plan.baseline.path, tailSpool(path, progress), {
      maxDeltaBytes: plan.maxDeltaBytes,
      signal: codecSignal,
    })
    .then(
      (result) => ({ result, seconds: (performance.now() - started) / 1000 }),
      (error) => ({ error }),
    )
    .finally(() => chosen.release());
  // Runs beside the encode, off its critical path; cut short when the encode is abandoned.
  const baselineVerified = ctx.referenceCache.verify(plan.baseline, codecSignal);
  const leaseReleased = Promise.all([outcome, baselineVerified]).then(() =>
    plan.baseline.release()
  );
  let timer: ReturnType<typeof setTimeout> | undefined;
  let disposed: Promise<void> | undefined;
  const live: LiveEncode = {
    referenceSha256: plan.referenceSha256,
    maxDeltaBytes: plan.maxDeltaBytes,
    codec: chosen.name,
    baselineVerified,
    outcome,
    dispose: () =>
      disposed ??= (async () => {
        stop.abort(new Error("encode no longer needed"));
        progress.fail(new Error("encode no longer needed"));
        const ended = await outcome;
        clearTimeout(timer);
        if ("result" in ended && !ended.result.aborted) await removeQuietly(ended.result.deltaPath);
        plan.permit.release();
        await leaseReleased;
      })(),
  };
  // The slot is for the subprocess: free it as soon as the encode ends, not when the commit does
  // (a commit may wait for the deltaspace lock, and the holder of that lock may need a slot).
  outcome.then(() => {
    clearTimeout(timer);
    plan.permit.release();
  });

  let file: Deno.FsFile | undefined;
  const reader = body.getReader();
  let size = 0;
  try {
    file = await Deno.open(path, { write: true, truncate: true });
    for (;;) {
      signal?.throwIfAborted();
      const { done, value } = await reader.read();
      if (done) break;
      await writeAll(file, value);
      size += value.byteLength;
      progress.advance(value.byteLength);
    }
    file.close();
    file = undefined;
    progress.end();
    // From here the encoder works on its own: it may still be reading the spool.
    timer = setTimeout(() => stop.abort(codecTimeoutError(plan.timeoutMs)), plan.timeoutMs);
    return { spool: { path, size }, live };
  } catch (err) {
    progress.fail(err);
    await reader.cancel(err).catch(() => {});
    file?.close();
    await live.dispose();
    await removeQuietly(path);
    throw err;
  } finally {
    reader.releaseLock();
  }
}

/**
 * The outcome of the encode that ran while the body arrived, when it still applies (the baseline
 * it used is the current one). A failed encode fails the PUT: nothing was stored, unless the
 * cached baseline it read turns out corrupt, which is a cache problem: passthrough (null).
 */
export async function liveResult(
  ctx: DeltaContext,
  live: LiveEncode,
): Promise<EncodeResult | null | "redo"> {
  const ended = await live.outcome;
  if ("error" in ended) {
    if (!(await live.baselineVerified)) return null;
    // zstd was told the body's length up front: a body of another length fails it, and the
    // spool (whatever its length) is encoded again. xdelta3 has no such limit.
    if (live.codec === "zstd" && !isNoSpaceError(ended.error)) {
      log.info("Live zstd encode failed; encoding again from the spool", {
        error: String(ended.error),
      });
      return "redo";
    }
    if (ended.error instanceof SvcError) throw ended.error;
    if (isNoSpaceError(ended.error)) throw diskFullError(String(ended.error));
    throw internalError(`Delta codec failed: ${String(ended.error)}`, ended.error);
  }
  ctx.observer?.encoded(ended.seconds);
  return ended.result;
}
