/**
 * Delta codecs: turn a target into a delta against a reference baseline on local disk, and back.
 * Two subprocess codecs implement it: xdelta3 (here) and `zstd --patch-from` (zstd-codec.ts);
 * codec-choice.ts picks one per encode and finds the one that wrote a stored delta. Codecs never buffer whole objects: encode
 * streams the target into the process and the delta out to a temp file, decode streams both ways.
 */

import { diskFullError, isNoSpaceError, writeAll } from "../../lib/mod.ts";
import {
  abortError,
  codecError,
  decodeIntoFile,
  decoderStream,
  exitDetail,
  killQuietly,
  pumpStdin,
  readTail,
  type StdinPump,
} from "./codec-process.ts";

export { probeXdelta3, type Xdelta3Probe } from "./codec-process.ts";

/** Outcome of an encode: a delta file the caller now owns, or an abort for a poor ratio. */
export type EncodeResult =
  | {
    aborted: false;
    deltaPath: string;
    deltaBytes: number;
    /** The codec that wrote the delta (codec-choice.ts records it in the delta's metadata). */
    codec?: string;
  }
  | { aborted: true };

export interface EncodeOptions {
  /** Stop as soon as the delta grows past this many bytes and report `aborted: true`. */
  maxDeltaBytes?: number;
  signal?: AbortSignal;
  /** The target's exact length when known (zstd streams only then; xdelta3 does not need it). */
  targetBytes?: number;
}

export interface DecodeOptions {
  signal?: AbortSignal;
}

export interface DeltaCodec {
  readonly name: string;
  encode(
    reference: string,
    target: ReadableStream<Uint8Array>,
    options: EncodeOptions,
  ): Promise<EncodeResult>;
  decode(
    reference: string,
    delta: ReadableStream<Uint8Array>,
    options: DecodeOptions,
  ): ReadableStream<Uint8Array>;
  /**
   * Rebuilds into the file `outPath` (created or truncated) written by the codec itself, without
   * the bytes passing through this process. A full disk rejects with InsufficientStorage.
   */
  decodeToFile(
    reference: string,
    delta: ReadableStream<Uint8Array>,
    outPath: string,
    options: DecodeOptions,
  ): Promise<void>;
}

export interface Xdelta3CodecOptions {
  /** Directory for encode output files; the caller moves or deletes them. */
  tempDir: string;
  binary?: string;
  /** From `probeXdelta3().acceptsA`. */
  acceptsA?: boolean;
  /**
   * Extra encode flags such as a compression level (`-9`) or source window (`-B`), used as
   * given. Default `-W 1048576 -B <sourceWindow(baseline size)>`: a 1 MiB input window makes
   * xdelta3 emit output every MiB of target, so a `maxDeltaBytes` abort happens early (the 8 MiB
   * default delays the first byte by seconds on dissimilar data; the ratio cost measured on a
   * 100 MiB pair was under 0.5%), and the source window is sized to the baseline (see below).
   */
  encodeArgs?: string[];
}

/** The largest source window the default flags give xdelta3: its memory grows with the window. */
export const MAX_SOURCE_WINDOW = 256 * 1024 * 1024;

/**
 * xdelta3's source window (`-B`) for a baseline: all of it in whole MiB, at most
 * MAX_SOURCE_WINDOW. xdelta3's own 64 MiB misses content that moved further than that in a larger
 * baseline (2.4x larger deltas on 107 MiB images), and a window no larger than a small baseline
 * costs less memory and CPU (docs/BENCHMARKS.md, "Issue 28: codec choice"). Any window decodes
 * with the same flags, so deltas made before and after this choice read alike.
 */
export function sourceWindow(baselineBytes: number): number {
  const mib = 1024 * 1024;
  return Math.min(MAX_SOURCE_WINDOW, Math.max(1, Math.ceil(baselineBytes / mib)) * mib);
}

export class Xdelta3Codec implements DeltaCodec {
  readonly name = "xdelta3";
  readonly #tempDir: string;
  readonly #binary: string;
  readonly #common: string[];
  readonly #encodeArgs: string[] | undefined;

  constructor(options: Xdelta3CodecOptions) {
    this.#tempDir = options.tempDir;
    this.#binary = options.binary ?? "xdelta3";
    this.#common = options.acceptsA ? ["-D", "-a"] : ["-D"];
    this.#encodeArgs = options.encodeArgs;
  }

  #spawn(
    mode: "-e" | "-d",
    reference: string,
    extra: string[],
    outPath?: string,
  ): Deno.ChildProcess {
    // With an output file: the delta still comes on stdin (named /dev/stdin, as xdelta3 takes
    // an input name before the output name), `-f` lets it write over the caller's empty file.
    const io = outPath === undefined ? ["-c"] : ["-f", "/dev/stdin", outPath];
    try {
      return new Deno.Command(this.#binary, {
        args: [mode, ...this.#common, ...extra, "-s", reference, ...io],
        stdin: "piped",
        stdout: outPath === undefined ? "piped" : "null",
        stderr: "piped",
      }).spawn();
    } catch (err) {
      throw codecError(`cannot start ${this.#binary}: ${(err as Error).message}`, err);
    }
  }

  async encode(
    reference: string,
    target: ReadableStream<Uint8Array>,
    options: EncodeOptions = {},
  ): Promise<EncodeResult> {
    const { signal, maxDeltaBytes } = options;
    if (signal?.aborted) {
      await target.cancel().catch(() => {});
      throw abortError(signal);
    }
    const deltaPath = await Deno.makeTempFile({
      dir: this.#tempDir,
      prefix: "enc-",
      suffix: ".delta",
    });
    let file: Deno.FsFile | undefined;
    let child: Deno.ChildProcess | undefined;
    let keep = false;
    let pump: StdinPump | undefined;
    const onAbort = () => {
      if (child) killQuietly(child);
      pump?.stop();
    };
    try {
      file = await Deno.open(deltaPath, { write: true, truncate: true });
      child = this.#spawn("-e", reference, this.#encodeArgs ?? await defaultEncodeArgs(reference));
      signal?.addEventListener("abort", onAbort, { once: true });
      pump = pumpStdin(target, child.stdin);
      const stderrTail = readTail(child.stderr);
      const reader = child.stdout.getReader();
      let deltaBytes = 0;
      let tooBig = false;
      try {
        while (true) {
          const { done, value } = await reader.read();
          if (done) break;
          deltaBytes += value.length;
          if (maxDeltaBytes !== undefined && deltaBytes > maxDeltaBytes) {
            tooBig = true;
            killQuietly(child);
            pump.stop();
            break;
          }
          await writeAll(file, value);
        }
      } catch (err) {
        // Reading stdout fails only when the process is gone; status and stderr explain it.
        // Writing the delta file fails when the disk is full.
        killQuietly(child);
        if (isNoSpaceError(err)) throw diskFullError(`writing a delta: ${(err as Error).message}`);
        if (!signal?.aborted) throw codecError(`reading output: ${(err as Error).message}`, err);
      } finally {
        await reader.cancel().catch(() => {});
        reader.releaseLock();
      }
      const status = await child.status;
      if (signal?.aborted || !status.success) pump.stop();
      const { sourceError } = await pump.done;
      const stderr = await stderrTail;
      if (signal?.aborted) throw abortError(signal);
      if (tooBig) return { aborted: true };
      if (sourceError !== undefined) {
        throw codecError(`reading target: ${String(sourceError)}`, sourceError);
      }
      if (!status.success) throw codecError(exitDetail(status, stderr));
      if (stderr) throw codecError(stderr);
      file.close();
      file = undefined;
      keep = true;
      return { aborted: false, deltaPath, deltaBytes, codec: this.name };
    } finally {
      signal?.removeEventListener("abort", onAbort);
      if (child) {
        killQuietly(child);
        await child.status;
      }
      if (pump) {
        pump.stop();
        await pump.done;
      }
      file?.close();
      if (!keep) await Deno.remove(deltaPath).catch(() => {});
    }
  }

  decode(
    reference: string,
    delta: ReadableStream<Uint8Array>,
    options: DecodeOptions = {},
  ): ReadableStream<Uint8Array> {
    const { signal } = options;
    return decoderStream(
      () => this.#spawn("-d", reference, windowArgs(baselineSizeSync(reference))),
      delta,
      signal,
      true,
    );
  }

  decodeToFile(
    reference: string,
    delta: ReadableStream<Uint8Array>,
    outPath: string,
    options: DecodeOptions = {},
  ): Promise<void> {
    return decodeIntoFile(
      () => this.#spawn("-d", reference, windowArgs(baselineSizeSync(reference)), outPath),
      delta,
      outPath,
      options.signal,
      true,
    );
  }
}

/** `-W 1048576 -B <window>`; without `-B` when the baseline cannot be read (xdelta3 says why). */
async function defaultEncodeArgs(reference: string): Promise<string[]> {
  const size = await Deno.stat(reference).then((s) => s.size, () => undefined);
  return ["-W", "1048576", ...windowArgs(size)];
}

/**
 * `-B <window>` for a baseline of `size` bytes (none when unknown). On decode it lets xdelta3 keep
 * the whole baseline in memory: with its 64 MiB default it re-reads source blocks for every copy
 * past them (a 107 MiB baseline: 0.8 s against 0.2-0.3 s, mostly system time). Decoding needs no
 * flag of the encode, so any window reads any delta.
 */
function windowArgs(size: number | undefined): string[] {
  return size === undefined ? [] : ["-B", String(sourceWindow(size))];
}

/** The size for decode()'s synchronous start: one stat call, never a read. */
function baselineSizeSync(reference: string): number | undefined {
  try {
    return Deno.statSync(reference).size;
  } catch {
    return undefined;
  }
}
