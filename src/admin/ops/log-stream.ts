/**
 * The live log tail of `GET /logs/stream` as a Server-Sent Events body.
 *
 * Memory is bounded at every step, whatever the reader does:
 * - the stream itself holds at most `queueEvents` events (a count queuing strategy): once that
 *   many wait unread, the subscriber callback waits for the reader to pull;
 * - while it waits, the LogRing queues at most its `maxQueue` entries for this subscriber and
 *   drops the oldest beyond that, reporting the count with the next delivered entry;
 * - a reported drop, or a wait longer than `stallMs`, ends the stream: a final `dropped` event
 *   says why, the subscription is removed at once, nothing more is queued. The client reconnects
 *   (EventSource does so by itself, with `Last-Event-ID`) and resumes from the ring's backlog.
 *
 * A heartbeat comment every `heartbeatMs` keeps proxies from timing the connection out and lets
 * the server notice a dead peer; it is skipped while the reader is behind (it would only queue).
 * Client disconnect (the request signal, or the body being cancelled) removes the subscription.
 */
import type { LogEntry, LogFilterQuery, LogRing } from "../../observability/mod.ts";

export interface LogStreamOptions {
  /** Interval of `: heartbeat` comments; default 15 s. */
  heartbeatMs: number;
  /** How long an entry may wait for a reader that does not read before the stream ends; 10 s. */
  stallMs: number;
  /** Events the stream holds unread before the subscriber waits; default 64. */
  queueEvents: number;
}

export const DEFAULT_LOG_STREAM_OPTIONS: LogStreamOptions = {
  heartbeatMs: 15_000,
  stallMs: 10_000,
  queueEvents: 64,
};

const encoder = new TextEncoder();

/** One SSE event: `id`, `event` and a single-line JSON `data`. */
export function sseEvent(event: string, data: unknown, id?: number): Uint8Array {
  const idLine = id === undefined ? "" : `id: ${id}\n`;
  return encoder.encode(`${idLine}event: ${event}\ndata: ${JSON.stringify(data)}\n\n`);
}

/**
 * An SSE body tailing `ring` with `filter`, starting with `backlog` (oldest first, e.g. the
 * entries after a client's `Last-Event-ID`).
 */
export function logEventStream(
  ring: Pick<LogRing, "subscribe">,
  filter: LogFilterQuery,
  options: LogStreamOptions,
  signal?: AbortSignal,
  backlog: LogEntry[] = [],
): ReadableStream<Uint8Array> {
  let controller!: ReadableStreamDefaultController<Uint8Array>;
  let unsubscribe: (() => void) | undefined;
  let heartbeat: ReturnType<typeof setInterval> | undefined;
  let ended = false;
  /** Resolves the subscriber's wait when the reader pulls (or the stream ends). */
  let wake: (() => void) | undefined;
  let stallTimer: ReturnType<typeof setTimeout> | undefined;

  const cleanup = () => {
    ended = true;
    unsubscribe?.();
    clearInterval(heartbeat);
    clearTimeout(stallTimer);
    signal?.removeEventListener("abort", onAbort);
    wake?.();
    wake = undefined;
  };
  /** Ends the stream for a reader that cannot keep up, telling it why. */
  const endSlow = (dropped: number) => {
    if (ended) return;
    cleanup();
    try {
      controller.enqueue(sseEvent("dropped", {
        reason: "slow_reader",
        message: "The client did not keep up with the log stream; reconnect to resume",
        dropped,
      }));
      controller.close();
    } catch { /* already closed or cancelled */ }
  };
  const onAbort = () => {
    if (ended) return;
    cleanup();
    try {
      controller.close();
    } catch { /* already closed */ }
  };
  const waitForReader = (): Promise<void> =>
    new Promise<void>((resolve) => {
      wake = () => {
        clearTimeout(stallTimer);
        resolve();
      };
      stallTimer = setTimeout(() => endSlow(0), options.stallMs);
    });

  const onEntry = (entry: LogEntry, dropped: number): void | Promise<void> => {
    if (ended) return;
    if (dropped > 0) return endSlow(dropped);
    controller.enqueue(sseEvent("log", entry, entry.id));
    if ((controller.desiredSize ?? 0) <= 0) return waitForReader();
  };

  return new ReadableStream<Uint8Array>({
    start(c) {
      controller = c;
      if (signal?.aborted) {
        ended = true;
        c.close();
        return;
      }
      signal?.addEventListener("abort", onAbort, { once: true });
      // A first comment makes the response start at once (clients see the headers).
      c.enqueue(encoder.encode(": connected\n\n"));
      for (const entry of backlog) c.enqueue(sseEvent("log", entry, entry.id));
      unsubscribe = ring.subscribe(filter, onEntry);
      heartbeat = setInterval(() => {
        if (!ended && (controller.desiredSize ?? 0) > 0) {
          controller.enqueue(encoder.encode(": heartbeat\n\n"));
        }
      }, options.heartbeatMs);
    },
    pull() {
      const resume = wake;
      wake = undefined;
      resume?.();
    },
    cancel() {
      cleanup();
    },
  }, new CountQueuingStrategy({ highWaterMark: Math.max(1, options.queueEvents) }));
}
