/**
 * The xdelta3 subprocess plumbing the codec (codec.ts) is built on: the start-up probe, copying a
 * stream into a child's stdin with backpressure, keeping the tail of its stderr, killing it, and
 * the decoder's output as a stream (shared with the zstd codec, zstd-codec.ts).
 */

import { diskFullError, SvcError } from "../../lib/mod.ts";

export interface Xdelta3Probe {
  available: boolean;
  version?: string;
  /** Whether the binary accepts `-a` (newer builds need it on pipes; 3.0.11 rejects it). */
  acceptsA: boolean;
  reason?: string;
}

const STDERR_TAIL_BYTES = 2048;

async function runQuiet(binary: string, args: string[]): Promise<Deno.CommandOutput> {
  return await new Deno.Command(binary, {
    args,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).output();
}

/** Probes the xdelta3 binary once at startup. Never throws: a missing binary is reported. */
export async function probeXdelta3(binary = "xdelta3"): Promise<Xdelta3Probe> {
  let out: Deno.CommandOutput;
  try {
    out = await runQuiet(binary, ["-V"]);
  } catch (err) {
    const reason = err instanceof Deno.errors.NotFound
      ? `${binary} not found`
      : `${binary} could not be started: ${err instanceof Error ? err.message : String(err)}`;
    return { available: false, acceptsA: false, reason };
  }
  const text = new TextDecoder().decode(out.stderr) + new TextDecoder().decode(out.stdout);
  const match = /Xdelta version (\S+)/i.exec(text);
  if (!out.success || !match) {
    return {
      available: false,
      acceptsA: false,
      reason: `${binary} -V failed (exit ${out.code}): ${tail(text)}`,
    };
  }
  let acceptsA = false;
  try {
    acceptsA = (await runQuiet(binary, ["-a", "-V"])).success;
  } catch {
    acceptsA = false;
  }
  return { available: true, version: match[1], acceptsA };
}

export function tail(text: string, max = STDERR_TAIL_BYTES): string {
  const trimmed = text.trim();
  return trimmed.length > max ? "…" + trimmed.slice(trimmed.length - max) : trimmed;
}

/** Collects the last bytes a stream produced; used for stderr. */
export async function readTail(stream: ReadableStream<Uint8Array>): Promise<string> {
  const decoder = new TextDecoder();
  let text = "";
  try {
    for await (const chunk of stream) {
      text += decoder.decode(chunk, { stream: true });
      if (text.length > STDERR_TAIL_BYTES * 2) text = text.slice(text.length - STDERR_TAIL_BYTES);
    }
  } catch {
    // The process was killed; whatever arrived is enough.
  }
  return tail(text + decoder.decode());
}

export interface StdinPump {
  /** Resolves when the copy ends; never rejects. Carries the source's error if it failed. */
  done: Promise<{ sourceError?: unknown }>;
  /** Stops copying now: cancels the source and aborts stdin (used on kill and abort). */
  stop(): void;
}

/**
 * Copies `source` into the child's stdin with a reader loop (backpressure from the pipe) and
 * closes it at the end. A broken pipe means the process died and its exit status tells why.
 */
export function pumpStdin(
  source: ReadableStream<Uint8Array>,
  stdin: WritableStream<Uint8Array>,
): StdinPump {
  const reader = source.getReader();
  const writer = stdin.getWriter();
  let stopped = false;
  const done = (async (): Promise<{ sourceError?: unknown }> => {
    while (true) {
      let result: ReadableStreamReadResult<Uint8Array>;
      try {
        result = await reader.read();
      } catch (err) {
        await writer.abort(err).catch(() => {});
        return stopped ? {} : { sourceError: err };
      }
      if (result.done || stopped) break;
      try {
        await writer.write(result.value);
      } catch {
        await reader.cancel().catch(() => {});
        return {};
      }
    }
    if (stopped) await writer.abort().catch(() => {});
    else await writer.close().catch(() => {});
    return {};
  })();
  return {
    done,
    stop() {
      if (stopped) return;
      stopped = true;
      reader.cancel().catch(() => {});
    },
  };
}

export function killQuietly(child: Deno.ChildProcess): void {
  try {
    child.kill("SIGKILL");
  } catch {
    // Already exited.
  }
}

export function codecError(detail: string, cause?: unknown): SvcError {
  return new SvcError("InternalError", `Delta codec failed: ${detail}`, {}, { cause });
}

/** The error to surface when a signal fired: its reason when that is an SvcError. */
export function abortError(signal: AbortSignal): SvcError {
  const reason = signal.reason;
  if (reason instanceof SvcError) return reason;
  const text = reason instanceof Error ? reason.message : String(reason ?? "aborted");
  return codecError(`aborted (${text})`, reason);
}

/** A codec's stderr when a write failed for lack of space (ENOSPC, EDQUOT). */
export const NO_SPACE = /No space left on device|Disk quota exceeded/i;

export function exitDetail(status: Deno.CommandStatus, stderr: string): string {
  const how = status.signal ? `killed by ${status.signal}` : `exit ${status.code}`;
  return stderr ? `${how}: ${stderr}` : how;
}

/**
 * The output of a decoder subprocess as a stream: `delta` is pumped into its stdin, its stdout
 * is what the stream gives, and its exit status (and, with `stderrIsError`, any stderr) decides
 * whether the stream ends or errors. An abort kills the process; a cancel ends it.
 */
export function decoderStream(
  spawn: () => Deno.ChildProcess,
  delta: ReadableStream<Uint8Array>,
  signal: AbortSignal | undefined,
  stderrIsError: boolean,
): ReadableStream<Uint8Array> {
  let child: Deno.ChildProcess;
  try {
    if (signal?.aborted) throw abortError(signal);
    child = spawn();
  } catch (err) {
    delta.cancel().catch(() => {});
    return new ReadableStream({
      start(controller) {
        controller.error(err);
      },
    });
  }
  const pump = pumpStdin(delta, child.stdin);
  const stderrTail = readTail(child.stderr);
  const reader = child.stdout.getReader();
  let finished = false;
  const finish = async () => {
    if (finished) return;
    finished = true;
    signal?.removeEventListener("abort", onAbort);
    killQuietly(child);
    pump.stop();
    await reader.cancel().catch(() => {});
    await child.status;
    await pump.done;
    await stderrTail;
  };
  let failStream: ((err: unknown) => void) | undefined;
  const onAbort = () => {
    killQuietly(child);
    pump.stop();
    failStream?.(abortError(signal!));
  };
  signal?.addEventListener("abort", onAbort, { once: true });
  return new ReadableStream<Uint8Array>({
    start(controller) {
      failStream = (err) => {
        try {
          controller.error(err);
        } catch {
          // Already closed.
        }
        finish();
      };
    },
    async pull(controller) {
      let result: ReadableStreamReadResult<Uint8Array>;
      try {
        result = await reader.read();
      } catch (err) {
        await finish();
        controller.error(signal?.aborted ? abortError(signal) : codecError(String(err), err));
        return;
      }
      if (!result.done) {
        controller.enqueue(result.value);
        return;
      }
      const status = await child.status;
      if (!status.success) pump.stop();
      const { sourceError } = await pump.done;
      const stderr = await stderrTail;
      await finish();
      if (signal?.aborted) controller.error(abortError(signal));
      else if (sourceError !== undefined) {
        controller.error(codecError(`reading delta: ${String(sourceError)}`, sourceError));
      } else if (!status.success) controller.error(codecError(exitDetail(status, stderr)));
      else if (stderrIsError && stderr) controller.error(codecError(stderr));
      else controller.close();
    },
    async cancel() {
      await finish();
    },
  }, { highWaterMark: 0 });
}

/**
 * Waits for a decoder subprocess that writes the rebuilt object to `outPath` itself, `delta`
 * pumped into its stdin; rejects with InsufficientStorage when it ran out of space, a codec error
 * on a failed exit (or, with `stderrIsError`, any stderr), the signal's reason on abort.
 */
export async function decodeIntoFile(
  spawn: () => Deno.ChildProcess,
  delta: ReadableStream<Uint8Array>,
  outPath: string,
  signal: AbortSignal | undefined,
  stderrIsError: boolean,
): Promise<void> {
  if (signal?.aborted) {
    await delta.cancel().catch(() => {});
    throw abortError(signal);
  }
  let child: Deno.ChildProcess;
  try {
    child = spawn();
  } catch (err) {
    await delta.cancel().catch(() => {});
    throw err;
  }
  const pump = pumpStdin(delta, child.stdin);
  const stderrTail = readTail(child.stderr);
  const onAbort = () => {
    killQuietly(child);
    pump.stop();
  };
  signal?.addEventListener("abort", onAbort, { once: true });
  try {
    const status = await child.status;
    if (!status.success) pump.stop();
    const { sourceError } = await pump.done;
    const stderr = await stderrTail;
    if (signal?.aborted) throw abortError(signal);
    if (sourceError !== undefined) {
      throw codecError(`reading delta: ${String(sourceError)}`, sourceError);
    }
    if (NO_SPACE.test(stderr)) {
      throw diskFullError(`rebuilding an object into ${outPath}: ${stderr}`);
    }
    if (!status.success) throw codecError(exitDetail(status, stderr));
    if (stderrIsError && stderr) throw codecError(stderr);
  } finally {
    signal?.removeEventListener("abort", onAbort);
    killQuietly(child);
    await child.status;
    pump.stop();
    await pump.done;
  }
}
