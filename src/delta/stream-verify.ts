/**
 * Reading a delta object without local space for it (the disk is full): decode twice instead of
 * once into a file. The first pass only hashes the rebuilt bytes, so the sha256 is still checked
 * before the first byte leaves; the second pass streams them to the client (the requested range of
 * them). Both passes read the same baseline file and the same stored delta, and the codec decodes
 * deterministically; a full read still re-hashes the second pass and breaks the response off should
 * it ever differ. It costs a second decode, so it is only the fallback for a full disk.
 */

import { createHash } from "node:crypto";
import type { SvcError } from "../lib/mod.ts";
import type { DeltaContext } from "./delta-context.ts";
import type { BaselineLease } from "./cache/reference-cache.ts";
import type { DeltaCodec } from "./codec/codec.ts";

export interface StreamVerifyOptions {
  /** Held until the returned stream ends; released by this function in every case. */
  baseline: BaselineLease;
  /** The codec that wrote the delta (codec-choice.ts `decoderFor`). */
  codec: DeltaCodec;
  /** Opens the stored delta's bytes again (each pass needs its own stream). */
  reopenDelta: () => Promise<ReadableStream<Uint8Array>>;
  sha256: string;
  size: number;
  /** Inclusive byte range to return. */
  start: number;
  end: number;
  timeoutMs: number;
  /** The error for rebuilt bytes that do not match (it evicts the baseline). */
  mismatch: (detail: string) => SvcError;
}

function decodeInSlot(
  ctx: DeltaContext,
  options: StreamVerifyOptions,
  delta: ReadableStream<Uint8Array>,
): Promise<ReadableStream<Uint8Array>> {
  return ctx.pool.runStream(
    (signal) => options.codec.decode(options.baseline.path, delta, { signal }),
    { timeoutMs: options.timeoutMs, maxWaitMs: options.timeoutMs },
  ).catch(async (err) => {
    await delta.cancel().catch(() => {});
    throw err;
  });
}

/** The verified range of the rebuilt object as a stream, without writing it anywhere. */
export async function streamVerified(
  ctx: DeltaContext,
  options: StreamVerifyOptions,
): Promise<ReadableStream<Uint8Array>> {
  const { baseline, sha256, size, start, end } = options;
  let second: ReadableStreamDefaultReader<Uint8Array>;
  try {
    const started = performance.now();
    const hash = createHash("sha256");
    let count = 0;
    for await (const chunk of await decodeInSlot(ctx, options, await options.reopenDelta())) {
      hash.update(chunk);
      count += chunk.byteLength;
    }
    const actual = hash.digest("hex");
    ctx.observer?.decoded((performance.now() - started) / 1000);
    if (count !== size || actual !== sha256) {
      throw options.mismatch("the rebuilt bytes do not match the object's sha256");
    }
    second = (await decodeInSlot(ctx, options, await options.reopenDelta())).getReader();
  } catch (err) {
    await baseline.release();
    throw err;
  }
  const whole = start === 0 && end === size - 1;
  const again = createHash("sha256");
  let offset = 0;
  let finished = false;
  const finish = async (cancel: boolean) => {
    if (finished) return;
    finished = true;
    if (cancel) await second.cancel().catch(() => {});
    await baseline.release();
  };
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      try {
        for (;;) {
          const { done, value } = await second.read();
          if (done) {
            await finish(false);
            if (whole && again.digest("hex") !== sha256) {
              controller.error(options.mismatch("the second decode differs from the first"));
            } else controller.close();
            return;
          }
          const from = offset;
          offset += value.byteLength;
          if (whole) again.update(value);
          if (offset <= start) continue;
          const slice = value.subarray(
            Math.max(0, start - from),
            Math.min(value.byteLength, end + 1 - from),
          );
          if (slice.byteLength > 0) controller.enqueue(slice);
          if (offset > end && !whole) {
            await finish(true);
            controller.close();
          }
          return;
        }
      } catch (err) {
        await finish(true);
        controller.error(err);
      }
    },
    async cancel() {
      await finish(true);
    },
  }, { highWaterMark: 0 });
}
