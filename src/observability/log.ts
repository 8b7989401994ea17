/**
 * Process logging on LogTape.
 *
 * Callers log through `getLogger("svc::area")`; the target maps to the LogTape category
 * `["svc", "area"]`. `configureLogging` installs two sinks on the root category:
 * - output, gated by the tracing-style filter (log-level.ts; startup value from resolveLogLevel,
 *   changed at runtime with setLogFilter): one line per record, `text`
 *   (`<time> <LEVEL> <target>: <message> k=v …`) or `json`
 *   (`{"time","level","target","message","fields"}`) per SVC_LOG_FORMAT. Error and warn lines go
 *   to stderr, the rest to stdout (as before LogTape).
 * - the log ring (SVC_LOG_RING_SIZE / SVC_LOG_RING_LEVEL), independent of the output filter.
 * Both sinks see the same redacted fields (log-ring.ts `redactFields`): secrets, passwords,
 * authorization, tokens and `key` / `*_key` fields become `[redacted]`, access keys are masked.
 * Records logged straight through LogTape (not via getLogger) are redacted the same way.
 *
 * Until configureLogging runs nothing is written (unit tests stay quiet).
 */
import {
  configureSync,
  getLogger as getTapeLogger,
  type LogLevel as TapeLevel,
  type LogRecord,
  resetSync,
  type Sink,
} from "@logtape/logtape";
import { AuditRing } from "./audit-ring.ts";
import {
  atLeast,
  DEFAULT_LOG_FILTER,
  levelRank,
  type LevelSetting,
  type LogFilter,
  type LogLevel,
  parseLogFilter,
} from "./log-level.ts";
import { type LogEntry, LogRing, redactFields } from "./log-ring.ts";

export type { LogLevel } from "./log-level.ts";
export { maskKey } from "./log-ring.ts";

export interface Logger {
  error(message: string, fields?: Record<string, unknown>): void;
  warn(message: string, fields?: Record<string, unknown>): void;
  info(message: string, fields?: Record<string, unknown>): void;
  debug(message: string, fields?: Record<string, unknown>): void;
  trace(message: string, fields?: Record<string, unknown>): void;
}

/** A formatted output line and its level (to pick the stream). */
export type LineWriter = (line: string, level: LogLevel) => void;

/** A log line before it gets a ring id. */
export type LogLine = Omit<LogEntry, "id">;

export interface LoggingOptions {
  /** Tracing-style filter string (see resolveLogLevel); default DEFAULT_LOG_FILTER. */
  filter?: string;
  /** `text` (default) or `json`. */
  format?: string;
  /** Log ring capacity; default 2000. */
  ringSize?: number;
  /** Log ring minimum level; default info. */
  ringLevel?: LogLevel;
  /** Audit ring capacity; default 500. */
  auditRingSize?: number;
  /** Output; default error/warn to stderr, the rest to stdout. Tests capture lines here. */
  write?: LineWriter;
}

export interface Logging {
  logRing: LogRing;
  auditRing: AuditRing;
}

const TO_TAPE: Record<LogLevel, TapeLevel> = {
  error: "error",
  warn: "warning",
  info: "info",
  debug: "debug",
  trace: "trace",
};

function fromTape(level: TapeLevel): LogLevel {
  if (level === "warning") return "warn";
  if (level === "fatal") return "error";
  return level;
}

/** `svc::s3` → `["svc", "s3"]`. */
export function targetCategory(target: string): string[] {
  return target.split("::").filter((part) => part !== "");
}

export const defaultWriter: LineWriter = (line, level) => {
  if (atLeast(level, "warn")) console.error(line);
  else console.log(line);
};

interface State {
  filter: LogFilter;
  json: boolean;
  write: LineWriter;
  logRing: LogRing;
  auditRing: AuditRing;
}

let state: State | undefined;
/** Bumped on every (re)configuration so loggers drop their cached thresholds. */
let generation = 0;
let fallbackRings: Logging | undefined;

// ---- formatting ------------------------------------------------------------------------------

/** Strings print bare unless empty or needing quotes: whitespace, `=`, or anything JSON escapes. */
function textValue(value: unknown): string {
  if (typeof value !== "string") return JSON.stringify(value) ?? "null";
  const quoted = JSON.stringify(value);
  const bare = value !== "" && quoted.length === value.length + 2 && !/[\s=]/.test(value);
  return bare ? value : quoted;
}

function oneLine(message: string): string {
  return message.replace(/\r\n|\r|\n/g, "\\n");
}

/** `2024-05-01T12:00:00.000Z  INFO svc::s3: message key=value key2="two words"` */
export function formatText(line: LogLine): string {
  let out = `${line.time} ${line.level.toUpperCase().padStart(5)} ${line.target}: ${
    oneLine(line.message)
  }`;
  for (const [name, value] of Object.entries(line.fields)) out += ` ${name}=${textValue(value)}`;
  return out;
}

/** One JSON object: `{"time","level","target","message","fields"}`. */
export function formatJson(line: LogLine): string {
  return JSON.stringify({
    time: line.time,
    level: line.level,
    target: line.target,
    message: line.message,
    fields: line.fields,
  });
}

// ---- sinks -----------------------------------------------------------------------------------

const lines = new WeakMap<LogRecord, LogLine>();

function messageOf(record: LogRecord): string {
  if (typeof record.rawMessage === "string") return record.rawMessage;
  return record.message.map((part) => typeof part === "string" ? part : String(part)).join("");
}

/** The redacted line for a record, computed once for all sinks. */
function lineOf(record: LogRecord): LogLine {
  let line = lines.get(record);
  if (!line) {
    line = {
      time: new Date(record.timestamp).toISOString(),
      level: fromTape(record.level),
      target: record.category.join("::"),
      message: messageOf(record),
      fields: redactFields(record.properties),
    };
    lines.set(record, line);
  }
  return line;
}

const outputSink: Sink = (record) => {
  const current = state;
  if (!current) return;
  const level = fromTape(record.level);
  const target = record.category.join("::");
  if (!current.filter.enabled(target, level)) return;
  const line = lineOf(record);
  current.write(current.json ? formatJson(line) : formatText(line), level);
};

const ringSink: Sink = (record) => {
  const current = state;
  if (!current || !current.logRing.accepts(fromTape(record.level))) return;
  current.logRing.push(lineOf(record));
};

/** The most verbose level either sink wants for `target`. */
function thresholdFor(current: State, target: string): LevelSetting {
  const output = current.filter.levelFor(target);
  const ring = current.logRing.minLevel;
  return levelRank(output) <= levelRank(ring) ? output : ring;
}

function installTape(current: State): void {
  const output = current.filter.mostVerbose();
  const ring = current.logRing.minLevel;
  const lowest = levelRank(output) <= levelRank(ring) ? output : ring;
  configureSync({
    reset: true,
    sinks: { output: outputSink, ring: ringSink },
    loggers: [
      {
        category: [],
        sinks: ["output", "ring"],
        lowestLevel: lowest === "off" ? null : TO_TAPE[lowest],
      },
      // LogTape's own diagnostics: sink failures and the like, not its start-up banner.
      { category: ["logtape", "meta"], lowestLevel: "warning" },
    ],
  });
}

function warnIgnored(filterSpec: string, ignored: string[]): void {
  if (ignored.length === 0) return;
  getLogger("svc::log").warn("ignored log filter directives", {
    filter: filterSpec,
    ignored: ignored.join(","),
  });
}

// ---- public API ------------------------------------------------------------------------------

/**
 * (Re)configures logging and creates fresh rings from the given settings. Unparseable filter
 * directives are skipped and reported in one warning.
 */
export function configureLogging(options: LoggingOptions = {}): Logging {
  const spec = options.filter ?? DEFAULT_LOG_FILTER;
  const { filter, ignored } = parseLogFilter(spec);
  const audit = getLogger("svc::audit");
  const current: State = {
    filter,
    json: options.format === "json",
    write: options.write ?? defaultWriter,
    logRing: new LogRing({ capacity: options.ringSize, minLevel: options.ringLevel }),
    auditRing: new AuditRing({
      capacity: options.auditRingSize,
      log: (level, event, fields) => audit[level](event, fields),
    }),
  };
  state = current;
  generation++;
  installTape(current);
  warnIgnored(spec, ignored);
  return { logRing: current.logRing, auditRing: current.auditRing };
}

/**
 * Replaces the output filter (hot reload of `log_level`); the rings are kept. Returns the ignored
 * directives, which are also logged. Does nothing before configureLogging.
 */
export function setLogFilter(spec: string): string[] {
  const current = state;
  if (!current) return [];
  const { filter, ignored } = parseLogFilter(spec);
  current.filter = filter;
  generation++;
  installTape(current);
  warnIgnored(spec, ignored);
  return ignored;
}

/** The filter string in force, or null before configureLogging. */
export function currentLogFilter(): string | null {
  return state?.filter.spec ?? null;
}

/**
 * The rings of the last configureLogging, for the admin API and the authenticator's audit hook.
 * Before configuration: one pair of default-sized rings, created on first use (not logged).
 */
export function activeLogging(): Logging {
  if (state) return { logRing: state.logRing, auditRing: state.auditRing };
  fallbackRings ??= { logRing: new LogRing(), auditRing: new AuditRing() };
  return fallbackRings;
}

/** Removes the configuration (tests). Loggers go quiet until configureLogging runs again. */
export function resetLogging(): void {
  state = undefined;
  generation++;
  resetSync();
}

export function getLogger(target: string): Logger {
  const tape = getTapeLogger(targetCategory(target));
  let seen = -1;
  let threshold: LevelSetting = "off";
  const emit = (level: LogLevel, message: string, fields?: Record<string, unknown>) => {
    const current = state;
    if (!current) return;
    if (seen !== generation) {
      threshold = thresholdFor(current, target);
      seen = generation;
    }
    if (!atLeast(level, threshold)) return;
    tape.emit({
      level: TO_TAPE[level],
      timestamp: Date.now(),
      message: [message],
      rawMessage: message,
      properties: fields ?? {},
    });
  };
  return {
    error: (message, fields) => emit("error", message, fields),
    warn: (message, fields) => emit("warn", message, fields),
    info: (message, fields) => emit("info", message, fields),
    debug: (message, fields) => emit("debug", message, fields),
    trace: (message, fields) => emit("trace", message, fields),
  };
}
