/**
 * The process-wide error listeners of a serving svc (installed once, by the listener).
 */
import { getLogger } from "../observability/mod.ts";

const log = getLogger("svc::http");

/** One log line per kind per 10 s: a flood must not flood the log too. */
const lastLogged = new Map<string, number>();
function throttled(kind: string): boolean {
  const now = Date.now();
  if (now - (lastLogged.get(kind) ?? 0) < 10_000) return true;
  lastLogged.set(kind, now);
  return false;
}

/**
 * Last line of defence: a descriptor or connection error the runtime raises from inside its own
 * event listeners is reported as an uncaught exception, which would end the process. Only those
 * error classes are caught; any other uncaught exception still ends it. Unhandled promise
 * rejections are logged and survived.
 */
let guarded = false;
export function guardProcessErrors(): void {
  if (guarded) return;
  guarded = true;
  globalThis.addEventListener("error", (event) => {
    const error = event.error;
    const connectionError = error instanceof Deno.errors.BadResource ||
      error instanceof Deno.errors.Interrupted || error instanceof Deno.errors.ConnectionReset ||
      error instanceof Deno.errors.BrokenPipe;
    if (!connectionError) return;
    event.preventDefault();
    if (throttled("uncaught")) return;
    log.warn("a connection error escaped the runtime's HTTP server", { error: String(error) });
  });
  // A promise nobody awaited that rejects is a bug, but it must not take every client's
  // connection down with it: it is logged as an error (with its stack) and the server stays up.
  globalThis.addEventListener("unhandledrejection", (event) => {
    event.preventDefault();
    const reason = event.reason;
    if (throttled("rejection")) return;
    log.error("an unhandled promise rejection was caught; svc keeps serving (please report)", {
      error: String(reason),
      stack: reason instanceof Error ? reason.stack ?? null : null,
    });
  });
}
