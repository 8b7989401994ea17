/**
 * The access log's sink: lines are queued in memory and written by one asynchronous flush every
 * 100 ms or as soon as 64 KiB wait, so a request never waits on the disk. A file target is
 * opened for append and reopened on demand (SIGHUP after logrotate renamed it), so the next
 * flush lands in the new file. Lines queued past 8 MiB while the disk stalls are dropped and
 * counted rather than growing memory without bound.
 */
import { getLogger } from "../log.ts";

const log = getLogger("svc::access");

export const FLUSH_INTERVAL_MS = 100;
export const FLUSH_BYTES = 64 * 1024;
const MAX_QUEUED_BYTES = 8 * 1024 * 1024;

export interface AccessLogWriter {
  /** Queues one line (a newline is appended). */
  write(line: string): void;
  /** Writes out what is queued. */
  flush(): Promise<void>;
  /** Flushes, then reopens the file by its path (a no-op for stderr). */
  reopen(): Promise<void>;
  /** Flushes and closes. */
  close(): Promise<void>;
}

interface Sink {
  write(bytes: Uint8Array): Promise<number>;
  close(): void;
}

/** `SVC_ACCESS_LOG`: unset, empty or `off` is no log; `stderr`; anything else a file path. */
export function accessLogTarget(value: string | undefined): "stderr" | string | null {
  const trimmed = value?.trim() ?? "";
  if (trimmed === "" || trimmed.toLowerCase() === "off") return null;
  return trimmed.toLowerCase() === "stderr" ? "stderr" : trimmed;
}

async function openSink(target: string): Promise<Sink> {
  if (target === "stderr") {
    return { write: (bytes) => Deno.stderr.write(bytes), close: () => {} };
  }
  const file = await Deno.open(target, { append: true, create: true, write: true });
  return { write: (bytes) => file.write(bytes), close: () => file.close() };
}

async function writeAll(sink: Sink, bytes: Uint8Array): Promise<void> {
  let offset = 0;
  while (offset < bytes.byteLength) offset += await sink.write(bytes.subarray(offset));
}

/** Opens the target (`stderr` or a file path) and returns its writer. */
export async function openAccessLog(target: string): Promise<AccessLogWriter> {
  let sink: Sink | null = await openSink(target);
  let queue: string[] = [];
  let queuedBytes = 0;
  let dropped = 0;
  let timer: ReturnType<typeof setTimeout> | undefined;
  // Every flush, reopen and close runs after the one before: lines keep their order.
  let chain: Promise<void> = Promise.resolve();
  const encoder = new TextEncoder();

  const drain = async () => {
    if (queue.length === 0 || sink === null) return;
    const text = queue.join("");
    queue = [];
    queuedBytes = 0;
    try {
      await writeAll(sink, encoder.encode(text));
    } catch (err) {
      log.warn("access log write failed; these lines are lost", {
        target,
        error: (err as Error).message,
      });
    }
    if (dropped > 0) {
      log.warn("access log lines dropped while the disk was slow", { target, dropped });
      dropped = 0;
    }
  };
  const enqueue = (step: () => Promise<void>): Promise<void> => {
    chain = chain.then(step, step);
    return chain;
  };
  const flush = (): Promise<void> => {
    if (timer !== undefined) clearTimeout(timer);
    timer = undefined;
    return enqueue(drain);
  };
  return {
    write(line) {
      if (sink === null) return;
      if (queuedBytes > MAX_QUEUED_BYTES) {
        dropped++;
        return;
      }
      queue.push(line + "\n");
      queuedBytes += line.length + 1;
      if (queuedBytes >= FLUSH_BYTES) void flush();
      else if (timer === undefined) {
        timer = setTimeout(() => void flush(), FLUSH_INTERVAL_MS);
        Deno.unrefTimer(timer);
      }
    },
    flush,
    reopen() {
      if (target === "stderr") return flush();
      return enqueue(async () => {
        await drain();
        try {
          const next = await openSink(target);
          sink?.close();
          sink = next;
        } catch (err) {
          // Keep writing to the old descriptor rather than lose lines.
          log.warn("access log could not be reopened; still writing the old file", {
            target,
            error: (err as Error).message,
          });
        }
      });
    },
    async close() {
      await flush();
      await enqueue(() => {
        sink?.close();
        sink = null;
        return Promise.resolve();
      });
    },
  };
}
