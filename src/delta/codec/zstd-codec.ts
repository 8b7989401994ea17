/**
 * A DeltaCodec on the zstd CLI's diff mode: `zstd --patch-from=<baseline>` compresses the target
 * with the whole baseline as its dictionary (long-distance matching over a window that covers
 * baseline and target), and `zstd -d --patch-from=<baseline>` rebuilds it. Same contract as the
 * xdelta3 codec (codec.ts): encode streams the target in and the delta out to a temp file,
 * stops early past `maxDeltaBytes`, and a signal kills the process.
 *
 * zstd facts this code depends on (checked against zstd 1.5.4, Debian's):
 * - Diff mode reads the baseline into memory whole, so a process holds about baseline + window
 *   (RSS ~ 2x the baseline on a 110 MiB pair, docs/BENCHMARKS.md "Issue 28"). Baselines above
 *   MAX_BASELINE_BYTES cannot be used at all (the window cannot exceed 2^31).
 * - It refuses a diff from stdin unless told the input's exact size (`--stream-size`, an input
 *   of any other length fails); without `targetBytes` the target is spooled to a temp file first.
 * - The window it picks covers max(baseline, target); the decoder must be allowed that much
 *   memory (`--long=31` on decode is a limit, not an allocation), else it refuses the frame.
 * - `--single-thread`: output leaves block by block (a worker thread would hold it back until a
 *   whole job is done, defeating the early abort), and diffs come out smaller.
 * - Notes it prints at -q ("long mode automatically triggered", parser advice) are not errors:
 *   success is its exit status, stderr only explains a failure.
 */
import { diskFullError, isNoSpaceError, SvcError, writeAll } from "../../lib/mod.ts";
import type { DecodeOptions, DeltaCodec, EncodeOptions, EncodeResult } from "./codec.ts";
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

/** zstd's largest window, 2^31: a baseline must fit in it with room for no target at all. */
export const MAX_BASELINE_BYTES = 2 ** 31 - 1;

/**
 * `targetBytes`: the target's exact length when known (streams it; else it is spooled first).
 * `level`: this encode's level instead of the codec's (decoding needs no level).
 */
export type ZstdEncodeOptions = EncodeOptions & { level?: number };

export interface ZstdCodecOptions {
  /** Directory for encode output (and spooled targets); the caller moves or deletes deltas. */
  tempDir: string;
  binary?: string;
  /** Compression level, 1-19 (docs/BENCHMARKS.md "Issue 28: codec choice"). Default 3. */
  level?: number;
}

/** The window log zstd's diff mode uses for these sizes (highest bit + 1, 10..31). */
export function windowLog(baselineBytes: number, targetBytes = 0): number {
  const max = Math.max(baselineBytes, targetBytes, 1);
  return Math.min(31, Math.max(10, Math.floor(Math.log2(max)) + 1));
}

export class ZstdCodec implements DeltaCodec {
  readonly name = "zstd";
  readonly #tempDir: string;
  readonly #binary: string;
  readonly #level: number;

  constructor(options: ZstdCodecOptions) {
    this.#tempDir = options.tempDir;
    this.#binary = options.binary ?? "zstd";
    this.#level = options.level ?? 3;
  }

  #spawn(args: string[], stdin: "piped" | "null", stdout: "piped" | "null"): Deno.ChildProcess {
    try {
      return new Deno.Command(this.#binary, { args, stdin, stdout, stderr: "piped" }).spawn();
    } catch (err) {
      throw codecError(`cannot start ${this.#binary}: ${(err as Error).message}`, err);
    }
  }

  async #baselineBytes(reference: string): Promise<number> {
    let size: number;
    try {
      size = (await Deno.stat(reference)).size;
    } catch (err) {
      throw codecError(`cannot read the baseline ${reference}: ${(err as Error).message}`, err);
    }
    if (size > MAX_BASELINE_BYTES) {
      throw codecError(`baseline of ${size} bytes is over zstd's ${MAX_BASELINE_BYTES}`);
    }
    return size;
  }

  async encode(
    reference: string,
    target: ReadableStream<Uint8Array>,
    options: ZstdEncodeOptions = {},
  ): Promise<EncodeResult> {
    const { signal, maxDeltaBytes, targetBytes } = options;
    const level = options.level ?? this.#level;
    if (signal?.aborted) {
      await target.cancel().catch(() => {});
      throw abortError(signal);
    }
    let spooled: string | undefined;
    let deltaPath: string | undefined;
    let file: Deno.FsFile | undefined;
    let child: Deno.ChildProcess | undefined;
    let pump: StdinPump | undefined;
    let keep = false;
    const onAbort = () => {
      if (child) killQuietly(child);
      pump?.stop();
    };
    signal?.addEventListener("abort", onAbort, { once: true });
    try {
      const baseline = await this.#baselineBytes(reference);
      let input: string[];
      let size: number;
      if (targetBytes === undefined) {
        spooled = await this.#spool(target, signal);
        size = (await Deno.stat(spooled)).size;
        input = [spooled];
      } else {
        size = targetBytes;
        input = [`--stream-size=${targetBytes}`];
      }
      deltaPath = await Deno.makeTempFile({ dir: this.#tempDir, prefix: "enc-", suffix: ".delta" });
      file = await Deno.open(deltaPath, { write: true, truncate: true });
      child = this.#spawn(
        [
          "-q",
          "--single-thread",
          `-${level}`,
          `--long=${windowLog(baseline, size)}`,
          `--patch-from=${reference}`,
          "-c",
          ...input,
        ],
        spooled ? "null" : "piped",
        "piped",
      );
      if (!spooled) pump = pumpStdin(target, child.stdin);
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
            pump?.stop();
            break;
          }
          await writeAll(file, value);
        }
      } catch (err) {
        killQuietly(child);
        if (isNoSpaceError(err)) throw diskFullError(`writing a delta: ${(err as Error).message}`);
        if (!signal?.aborted) throw codecError(`reading output: ${(err as Error).message}`, err);
      } finally {
        await reader.cancel().catch(() => {});
        reader.releaseLock();
      }
      const status = await child.status;
      if (signal?.aborted || !status.success) pump?.stop();
      const sourceError = pump ? (await pump.done).sourceError : undefined;
      const stderr = await stderrTail;
      if (signal?.aborted) throw abortError(signal);
      if (tooBig) return { aborted: true };
      if (sourceError !== undefined) {
        throw codecError(`reading target: ${String(sourceError)}`, sourceError);
      }
      if (!status.success) throw codecError(exitDetail(status, stderr));
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
      } else if (!spooled) await target.cancel().catch(() => {});
      file?.close();
      if (!keep && deltaPath) await Deno.remove(deltaPath).catch(() => {});
      if (spooled) await Deno.remove(spooled).catch(() => {});
    }
  }

  /** Writes a target of unknown length to a temp file (zstd needs its size up front). */
  async #spool(target: ReadableStream<Uint8Array>, signal?: AbortSignal): Promise<string> {
    const path = await Deno.makeTempFile({ dir: this.#tempDir, prefix: "zt-", suffix: ".target" });
    const out = await Deno.open(path, { write: true, truncate: true });
    const reader = target.getReader();
    // A stalled source must not hold an aborted encode: cancelling ends the pending read.
    const onAbort = () => reader.cancel().catch(() => {});
    signal?.addEventListener("abort", onAbort, { once: true });
    try {
      while (!signal?.aborted) {
        const { done, value } = await reader.read();
        if (done) break;
        await writeAll(out, value);
      }
      if (signal?.aborted) throw abortError(signal);
      return path;
    } catch (err) {
      await reader.cancel().catch(() => {});
      await Deno.remove(path).catch(() => {});
      if (isNoSpaceError(err)) throw diskFullError(`spooling a target: ${(err as Error).message}`);
      if (err instanceof SvcError) throw err;
      throw codecError(`reading target: ${String(err)}`, err);
    } finally {
      signal?.removeEventListener("abort", onAbort);
      reader.releaseLock();
      out.close();
    }
  }

  #decodeArgs(reference: string, outPath?: string): string[] {
    // `--long=31` only raises the memory limit to zstd's largest window.
    const out = outPath === undefined ? ["-c"] : ["-f", "-o", outPath];
    return ["-d", "-q", "--long=31", `--patch-from=${reference}`, ...out];
  }

  decode(
    reference: string,
    delta: ReadableStream<Uint8Array>,
    options: DecodeOptions = {},
  ): ReadableStream<Uint8Array> {
    const { signal } = options;
    return decoderStream(
      () => this.#spawn(this.#decodeArgs(reference), "piped", "piped"),
      delta,
      signal,
      false,
    );
  }

  decodeToFile(
    reference: string,
    delta: ReadableStream<Uint8Array>,
    outPath: string,
    options: DecodeOptions = {},
  ): Promise<void> {
    return decodeIntoFile(
      () => this.#spawn(this.#decodeArgs(reference, outPath), "piped", "null"),
      delta,
      outPath,
      options.signal,
      false,
    );
  }
}

/** Whether a zstd binary that supports diff mode is there (`--patch-from`, zstd >= 1.4.5). */
export async function probeZstd(
  binary = "zstd",
): Promise<{ available: boolean; version?: string }> {
  try {
    const out = await new Deno.Command(binary, { args: ["-V"], stdout: "piped", stderr: "piped" })
      .output();
    const text = new TextDecoder().decode(out.stdout) + new TextDecoder().decode(out.stderr);
    const match = /v(\d+)\.(\d+)\.(\d+)/.exec(text);
    if (!out.success || !match) return { available: false };
    const [major, minor, patch] = match.slice(1).map(Number);
    const ok = major > 1 || (major === 1 && (minor > 4 || (minor === 4 && patch >= 5)));
    return { available: ok, version: match[0].slice(1) };
  } catch {
    return { available: false };
  }
}
