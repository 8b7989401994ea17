/**
 * Which delta codec writes a delta, and which one reads it back (issue 28).
 *
 * - Every delta records the codec that wrote it in its metadata (`codec: "xdelta3" | "zstd"`;
 *   absent on deltas written before the choice existed: xdelta3). A read always uses that codec,
 *   whatever the bucket's setting is now, so switching a bucket's codec orphans nothing.
 * - A bucket chooses with `delta_codec: auto | xdelta3 | zstd` (default `auto`). `auto` is the
 *   codec measured better for the kind of content (docs/BENCHMARKS.md "Issue 28: codec wired"):
 *   zstd `--patch-from` for both, at level 3 for plain content (tar, images, dumps) and level 9
 *   for an archive's token form (where level 3 loses to xdelta3 on size, level 9 wins on both
 *   size and speed). `auto` and `zstd` are the same today; `auto` may change with measurements,
 *   `zstd` does not.
 * - zstd is used only when it can be: a zstd with diff mode is installed, the baseline is under
 *   zstd's 2 GiB window, the target's exact size is known (a live encode of a body of unknown
 *   length uses xdelta3), and its memory fits the zstd budget (`SVC_ZSTD_MEMORY_MB`). An encode
 *   that does not fit the budget falls back to xdelta3 at once (a write never waits for memory);
 *   a decode of a zstd delta waits for its memory (within the GET's codec wait, then 503).
 */

import { SvcError } from "../../lib/mod.ts";
import type { DecodeOptions, DeltaCodec, EncodeOptions, EncodeResult } from "./codec.ts";
import { MemoryBudget, type MemoryReservation } from "./memory-budget.ts";
import { MAX_BASELINE_BYTES } from "./zstd-codec.ts";

export type CodecName = "xdelta3" | "zstd";

/**
 * The "codec" of an empty delta whose object is its baseline as the codecs use it (an archive
 * baseline's token form, see archive-form.ts BaselineForm): decoding copies the baseline.
 */
export const IDENTITY = "identity";

/** An empty delta file in `tempDir` (the caller moves or deletes it), written by IDENTITY. */
export async function identityDelta(tempDir: string): Promise<EncodeResult> {
  const deltaPath = await Deno.makeTempFile({ dir: tempDir, prefix: "enc-", suffix: ".delta" });
  return { aborted: false, deltaPath, deltaBytes: 0, codec: IDENTITY };
}

/** The bucket setting `delta_codec`. */
export const CODEC_SETTINGS = ["auto", "xdelta3", "zstd"] as const;
export type CodecSetting = typeof CODEC_SETTINGS[number];

/** Env: the zstd memory budget in MiB (whole number; 0 = zstd never encodes). */
export const ZSTD_MEMORY_ENV = "SVC_ZSTD_MEMORY_MB";
export const DEFAULT_ZSTD_MEMORY_MB = 1024;

/** The zstd budget from the environment: a whole number of MiB, else the default. */
export function zstdMemoryBudgetBytes(raw = Deno.env.get(ZSTD_MEMORY_ENV)): number {
  const mb = raw !== undefined && /^\d+$/.test(raw.trim()) ? Number(raw) : DEFAULT_ZSTD_MEMORY_MB;
  return mb * 1024 * 1024;
}

/**
 * What a zstd job holds: about 2.2x the larger of baseline and target (the baseline read whole,
 * plus a window covering both; measured 239 MB encode, 230 MB decode for 107 MiB images).
 */
export function zstdJobBytes(baselineBytes: number, targetBytes: number): number {
  return Math.ceil((Math.max(baselineBytes, targetBytes, 1) * 22) / 10);
}

/**
 * zstd's level for a target: 3 for plain content (smaller deltas than xdelta3 at twice its speed;
 * 9 would cost 3x the CPU for ~18% smaller deltas of already tiny size), 9 for an archive's
 * token form (level 3 makes deltas ~25% larger than xdelta3's there, level 9 ~18% smaller at 3x
 * xdelta3's speed). docs/BENCHMARKS.md "Issue 28: codec wired".
 */
export function zstdLevelFor(transform: string | undefined): number {
  return transform === undefined ? 3 : 9;
}

/**
 * What a decode rebuilds, for its memory estimate: the object, or an archive's token form
 * (~1.43x the archive, docs/DELTA.md "Archive token form"; 1.5x here).
 */
export function decodedSizeOf(size: number, transform: string | undefined): number {
  return transform === undefined ? size : Math.ceil(size * 1.5);
}

/**
 * The codec a setting asks for, for content with transform `transform` (absent: the object's own
 * bytes; `archive-tokens-1`: an archive's token form).
 */
export function preferredCodec(
  setting: string | undefined,
  _transform: string | undefined,
): CodecName {
  // `auto` is zstd for both kinds, at the level of the kind (zstdLevelFor): measured better than
  // xdelta3 on tar, images and token forms alike.
  return setting === "xdelta3" ? "xdelta3" : "zstd";
}

/** The codec an encode uses, and the zstd memory it holds until `release`. */
export interface ChosenEncoder {
  name: CodecName;
  /** Encodes with the chosen codec; the result names it (`codec`). */
  encode(
    reference: string,
    target: ReadableStream<Uint8Array>,
    options: EncodeOptions,
  ): Promise<EncodeResult>;
  /** Why zstd was asked for but not used (for logs and tests), else undefined. */
  fallback?: string;
  /** Frees the memory reservation (idempotent); call once the encode has ended. */
  release(): void;
}

export interface EncodeRequest {
  /** The bucket's `delta_codec`. */
  setting: string | undefined;
  transform: string | undefined;
  baselineBytes: number;
  /** The target's exact size, when known (zstd needs it to stream). */
  targetBytes: number | undefined;
}

export interface CodecSetOptions {
  xdelta3: DeltaCodec;
  /** Absent when no zstd with diff mode is installed. */
  zstd?: DeltaCodec;
  /** The zstd memory budget in bytes (default: the environment's, see ZSTD_MEMORY_ENV). */
  zstdMemoryBytes?: number;
  /** A budget shared with another set (the scrub's decodes count in the store's budget). */
  budget?: MemoryBudget;
}

/** The delta codecs of a store: the choice for an encode and the decoder of a stored delta. */
export class CodecSet {
  readonly xdelta3: DeltaCodec;
  readonly zstd: DeltaCodec | undefined;
  readonly budget: MemoryBudget;

  constructor(options: CodecSetOptions) {
    this.xdelta3 = options.xdelta3;
    this.zstd = options.zstd;
    this.budget = options.budget ??
      new MemoryBudget(options.zstdMemoryBytes ?? zstdMemoryBudgetBytes());
  }

  /** The encoder for a request: zstd when asked for and possible, else xdelta3 (and why). */
  chooseEncoder(request: EncodeRequest): ChosenEncoder {
    const wanted = preferredCodec(request.setting, request.transform);
    if (wanted === "xdelta3") return this.#xdelta3();
    const zstd = this.zstd;
    if (!zstd) return this.#xdelta3("no zstd with --patch-from is installed");
    const { baselineBytes, targetBytes } = request;
    if (targetBytes === undefined) return this.#xdelta3("the target's size is not known");
    if (baselineBytes > MAX_BASELINE_BYTES) return this.#xdelta3("the baseline is over 2 GiB");
    const reservation = this.budget.tryReserve(zstdJobBytes(baselineBytes, targetBytes));
    if (!reservation) return this.#xdelta3(`the zstd memory budget is in use`);
    const level = zstdLevelFor(request.transform);
    return {
      name: "zstd",
      encode: (reference, target, options) =>
        zstd.encode(reference, target, { ...options, targetBytes, level } as EncodeOptions),
      release: () => reservation.release(),
    };
  }

  #xdelta3(fallback?: string): ChosenEncoder {
    const codec = this.xdelta3;
    return {
      name: "xdelta3",
      encode: (reference, target, options) => codec.encode(reference, target, options),
      fallback,
      release: () => {},
    };
  }

  /**
   * The decoder of a delta written by `codec` (its metadata; absent = xdelta3). A zstd decode
   * waits for its memory; `targetBytes` is the size of what it rebuilds (an estimate is fine).
   * An unknown codec, or zstd when it is not installed, decodes nothing: InternalError.
   */
  decoderFor(codec: string | undefined, targetBytes: number): DeltaCodec {
    if (codec === undefined || codec === "xdelta3") return this.xdelta3;
    if (codec === IDENTITY) return identityDecoder;
    if (codec !== "zstd") {
      return failingDecoder(`it was written by an unknown delta codec "${codec}"`);
    }
    if (!this.zstd) {
      return failingDecoder(`it was written by zstd, and no zstd with --patch-from is installed`);
    }
    return budgetedDecoder(this.zstd, this.budget, targetBytes);
  }
}

function codecMissing(detail: string): SvcError {
  return new SvcError("InternalError", `Delta cannot be decoded: ${detail}`);
}

/** A decoder that refuses (the delta's stream is cancelled). */
function failingDecoder(detail: string): DeltaCodec {
  const refuse = async (delta: ReadableStream<Uint8Array>) => {
    await delta.cancel().catch(() => {});
    throw codecMissing(detail);
  };
  return {
    name: "none",
    encode: () => Promise.reject(codecMissing(detail)),
    decode: (_reference, delta) =>
      new ReadableStream({
        start: async (controller) => controller.error(await refuse(delta).catch((e) => e)),
      }),
    decodeToFile: (_reference, delta) => refuse(delta),
  };
}

/** Drains an IDENTITY delta, which must be empty (else it is not what its metadata says). */
async function drainEmpty(delta: ReadableStream<Uint8Array>): Promise<void> {
  for await (const chunk of delta) {
    if (chunk.byteLength > 0) {
      await delta.cancel().catch(() => {});
      throw new SvcError("InternalError", "Delta cannot be decoded: an identity delta has bytes");
    }
  }
}

/** The object is the baseline file: copied (after checking the delta is empty). */
const identityDecoder: DeltaCodec = {
  name: IDENTITY,
  encode: () => Promise.reject(new SvcError("InternalError", "The identity codec never encodes")),
  async decodeToFile(reference, delta, outPath) {
    await drainEmpty(delta);
    await Deno.copyFile(reference, outPath);
  },
  decode(reference, delta) {
    let body: ReadableStreamDefaultReader<Uint8Array> | undefined;
    return new ReadableStream<Uint8Array>({
      async pull(controller) {
        try {
          if (!body) {
            await drainEmpty(delta);
            body = (await Deno.open(reference, { read: true })).readable.getReader();
          }
          const { done, value } = await body.read();
          if (done) controller.close();
          else controller.enqueue(value);
        } catch (err) {
          controller.error(err);
        }
      },
      async cancel(reason) {
        if (body) await body.cancel(reason);
        else await delta.cancel(reason).catch(() => {});
      },
    }, { highWaterMark: 0 });
  },
};

function baselineBytesOf(reference: string): number {
  try {
    return Deno.statSync(reference).size;
  } catch {
    return 0; // the codec itself says what is wrong with the baseline
  }
}

/** zstd's decoder, each run holding its memory in the budget (waiting for it first). */
function budgetedDecoder(zstd: DeltaCodec, budget: MemoryBudget, targetBytes: number): DeltaCodec {
  const need = (reference: string) => zstdJobBytes(baselineBytesOf(reference), targetBytes);
  return {
    name: zstd.name,
    encode: zstd.encode.bind(zstd),
    async decodeToFile(reference, delta, outPath, options: DecodeOptions = {}) {
      let held: MemoryReservation;
      try {
        held = await budget.reserve(need(reference), options.signal);
      } catch (err) {
        await delta.cancel().catch(() => {});
        throw err;
      }
      try {
        await zstd.decodeToFile(reference, delta, outPath, options);
      } finally {
        held.release();
      }
    },
    decode(reference, delta, options: DecodeOptions = {}) {
      let held: MemoryReservation | undefined;
      let reader: ReadableStreamDefaultReader<Uint8Array> | undefined;
      const end = () => held?.release();
      return new ReadableStream<Uint8Array>({
        async pull(controller) {
          try {
            if (!reader) {
              held = await budget.reserve(need(reference), options.signal);
              reader = zstd.decode(reference, delta, options).getReader();
            }
            const { done, value } = await reader.read();
            if (done) {
              end();
              controller.close();
            } else controller.enqueue(value);
          } catch (err) {
            end();
            if (!reader) await delta.cancel().catch(() => {});
            controller.error(err);
          }
        },
        async cancel(reason) {
          try {
            if (reader) await reader.cancel(reason);
            else await delta.cancel(reason).catch(() => {});
          } finally {
            end();
          }
        },
      }, { highWaterMark: 0 });
    },
  };
}
