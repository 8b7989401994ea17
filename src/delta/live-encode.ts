/**
 * Spooling a PUT body while it is encoded: when a deltaspace already has a baseline, the body is
 * written to the spool file and fed to the codec in the same pass, so a delta PUT takes about as
 * long as the slower of the upload and the encode instead of their sum. The spool is still kept:
 * the commit may need it (a poor ratio is stored passthrough from it; a baseline replaced since
 * the encode started means encoding again from it).
 *
 * The encoder sits behind a small queue: a slow encoder slows the upload (backpressure), and an
 * encoder that stops early (its output passed what the ratio allows) simply stops receiving
 * bytes while the spool carries on.
 *
 * Each chunk goes to the spool file and to the encoder concurrently: the spool write (disk) need
 * not wait for the encoder to accept the chunk (CPU), and the next chunk is read once both are done.
 *
 * The baseline lease comes from the reference cache. A cached file is re-hashed alongside the
 * encode (`baselineVerified`), never before it: the commit awaits that result before keeping the
 * delta (see reference-cache.ts for the policy).
 *
 * `codec_timeout_secs` measures codec work, not the client's upload speed: the clock starts when
 * the last body byte has been handed to the encoder. While the body arrives, an encoder that
 * takes no input for that long counts as timed out too.
 */

import type { EncodeResult } from "./codec.ts";
import { type CodecPermit, codecTimeoutError } from "./codec-pool.ts";
import { type DeltaContext, removeQuietly } from "./delta-read.ts";
import type { BaselineLease } from "./reference-cache.ts";
import { writeAll, writeStreamToFile } from "../storage/file-streams.ts";

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
}

/** Chunks queued between the spool loop and the encoder's stdin pump. */
const ENCODER_QUEUE_CHUNKS = 4;

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

class EncoderStalled extends Error {}

/** Hands a chunk to the encoder, giving up when it has taken nothing for `ms`. */
async function writeWithin(
  input: WritableStreamDefaultWriter<Uint8Array>,
  chunk: Uint8Array,
  ms: number,
): Promise<void> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const stalled = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new EncoderStalled()), ms);
  });
  const written = input.write(chunk);
  written.catch(() => {});
  try {
    await Promise.race([written, stalled]);
  } finally {
    clearTimeout(timer);
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
  const stop = new AbortController();
  const codecSignal = signal ? AbortSignal.any([signal, stop.signal]) : stop.signal;
  const pipe = new TransformStream<Uint8Array, Uint8Array>(
    undefined,
    { highWaterMark: ENCODER_QUEUE_CHUNKS },
  );
  const started = performance.now();
  const outcome: Promise<LiveOutcome> = ctx.codec
    .encode(plan.baseline.path, pipe.readable, {
      maxDeltaBytes: plan.maxDeltaBytes,
      signal: codecSignal,
    })
    .then(
      (result) => ({ result, seconds: (performance.now() - started) / 1000 }),
      (error) => ({ error }),
    );
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
    baselineVerified,
    outcome,
    dispose: () =>
      disposed ??= (async () => {
        stop.abort(new Error("encode no longer needed"));
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

  const path = await Deno.makeTempFile({ dir: ctx.spoolDir, prefix: "put-" }).catch(
    async (err) => {
      await live.dispose();
      throw err;
    },
  );
  let file: Deno.FsFile | undefined;
  let encoderInput: WritableStreamDefaultWriter<Uint8Array> | undefined = pipe.writable
    .getWriter();
  const reader = body.getReader();
  let size = 0;
  /** Never rejects: an encoder that cannot take the chunk is dropped from the loop. */
  const feed = async (input: WritableStreamDefaultWriter<Uint8Array>, chunk: Uint8Array) => {
    try {
      await writeWithin(input, chunk, plan.timeoutMs);
    } catch (err) {
      // The encoder stopped early (the spool carries on), or it stopped reading: a codec that
      // takes no input for codec_timeout_secs is killed like one that runs too long.
      if (err instanceof EncoderStalled) stop.abort(codecTimeoutError(plan.timeoutMs));
      if (encoderInput === input) encoderInput = undefined;
    }
  };
  try {
    file = await Deno.open(path, { write: true, truncate: true });
    const spoolFile = file;
    for (;;) {
      signal?.throwIfAborted();
      const { done, value } = await reader.read();
      if (done) break;
      size += value.byteLength;
      // Backpressure is kept: the next chunk is read only once both have taken this one.
      await Promise.all([
        writeAll(spoolFile, value),
        encoderInput ? feed(encoderInput, value) : undefined,
      ]);
    }
    file.close();
    file = undefined;
    await encoderInput?.close().catch(() => {});
    timer = setTimeout(() => stop.abort(codecTimeoutError(plan.timeoutMs)), plan.timeoutMs);
    return { spool: { path, size }, live };
  } catch (err) {
    await reader.cancel(err).catch(() => {});
    await encoderInput?.abort(err).catch(() => {});
    file?.close();
    await removeQuietly(path);
    await live.dispose();
    throw err;
  } finally {
    reader.releaseLock();
  }
}
