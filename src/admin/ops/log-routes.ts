/**
 * `GET /audit`, `GET /logs` and `GET /logs/stream` of the admin API: the audit ring snapshot, the
 * log ring backlog and its live tail (Server-Sent Events, see log-stream.ts). Read-only; a
 * session is required (the guard runs before these routes).
 *
 * Query parameters are validated, never guessed: an unknown `level` is 400; `limit` must be an
 * integer and is clamped to 1…ring capacity (absent: the whole ring).
 */
import { Hono } from "hono";
import {
  type AuditRing,
  LOG_LEVELS,
  type LogFilterQuery,
  type LogLevel,
  type LogRing,
  parseLevel,
} from "../../observability/mod.ts";
import type { AdminEnv } from "../admin-env.ts";
import { AdminError } from "../admin-error.ts";
import { DEFAULT_LOG_STREAM_OPTIONS, logEventStream, type LogStreamOptions } from "./log-stream.ts";

export interface LogRoutesDeps {
  logRing: Pick<LogRing, "query" | "subscribe" | "capacity">;
  auditRing: Pick<AuditRing, "snapshot" | "capacity">;
  /** Heartbeat, stall and queue settings of the live tail (tests shorten them). */
  stream?: Partial<LogStreamOptions>;
}

const MAX_FILTER_LENGTH = 256;

/** `limit` clamped to 1…max; absent → max. Not an integer → 400. */
export function parseLimit(text: string | undefined, max: number): number {
  if (text === undefined || text === "") return max;
  if (!/^-?\d+$/.test(text.trim())) {
    throw new AdminError("bad_request", `limit must be an integer, got "${text}"`);
  }
  return Math.min(max, Math.max(1, Number(text.trim())));
}

function parseFilter(query: (name: string) => string | undefined): LogFilterQuery {
  const filter: LogFilterQuery = {};
  const level = query("level");
  if (level !== undefined && level !== "") {
    const parsed = parseLevel(level);
    if (parsed === null || parsed === "off") {
      throw new AdminError(
        "bad_request",
        `level must be one of ${LOG_LEVELS.join(", ")}, got "${level}"`,
      );
    }
    filter.level = parsed as LogLevel;
  }
  for (const name of ["target", "q"] as const) {
    const value = query(name);
    if (value === undefined || value === "") continue;
    if (value.length > MAX_FILTER_LENGTH) {
      throw new AdminError("bad_request", `${name} is longer than ${MAX_FILTER_LENGTH} characters`);
    }
    filter[name] = value;
  }
  return filter;
}

/** The id a reconnecting client resumes after (`Last-Event-ID`, or `?after=`), if any. */
function resumeAfter(header: string | undefined, param: string | undefined): number | undefined {
  const text = header ?? param;
  if (text === undefined || text === "") return undefined;
  if (!/^\d+$/.test(text.trim())) {
    throw new AdminError("bad_request", `Last-Event-ID must be a log entry id, got "${text}"`);
  }
  return Number(text.trim());
}

export function logRoutes(deps: LogRoutesDeps): Hono<AdminEnv> {
  const app = new Hono<AdminEnv>();
  const streamOptions = { ...DEFAULT_LOG_STREAM_OPTIONS, ...deps.stream };

  app.get("/audit", (c) => {
    const limit = parseLimit(c.req.query("limit"), deps.auditRing.capacity);
    return c.json({ entries: deps.auditRing.snapshot(limit) });
  });

  app.get("/logs", (c) => {
    const filter = parseFilter((name) => c.req.query(name));
    const limit = parseLimit(c.req.query("limit"), deps.logRing.capacity);
    return c.json({ entries: deps.logRing.query({ ...filter, limit }) });
  });

  app.get("/logs/stream", (c) => {
    const filter = parseFilter((name) => c.req.query(name));
    const after = resumeAfter(c.req.header("last-event-id"), c.req.query("after"));
    // The backlog after a resume point, oldest first; at most the ring's capacity.
    const backlog = after === undefined
      ? []
      : deps.logRing.query({ ...filter, after, limit: deps.logRing.capacity }).reverse();
    const body = logEventStream(deps.logRing, filter, streamOptions, c.req.raw.signal, backlog);
    return new Response(body, {
      headers: {
        "content-type": "text/event-stream; charset=utf-8",
        "cache-control": "no-cache, no-store",
        // Reverse proxies (nginx) must pass events through as they come.
        "x-accel-buffering": "no",
      },
    });
  });

  return app;
}
