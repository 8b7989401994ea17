/**
 * Process logging. One line per event, `text` (default) or `json` per SVC_LOG_FORMAT; a level
 * threshold per SVC_LOG_LEVEL / --verbose. Callers never pass secrets: credentials are logged
 * only through `maskKey`.
 */
export type LogLevel = "error" | "warn" | "info" | "debug" | "trace";

const ORDER: Record<LogLevel, number> = { error: 0, warn: 1, info: 2, debug: 3, trace: 4 };

let threshold: LogLevel = "info";
let json = false;

export function configureLogging(options: { level?: string; format?: string }): void {
  const level = options.level?.toLowerCase().trim();
  if (level && level in ORDER) threshold = level as LogLevel;
  json = options.format === "json";
}

function emit(level: LogLevel, target: string, message: string, fields?: Record<string, unknown>) {
  if (ORDER[level] > ORDER[threshold]) return;
  const time = new Date().toISOString();
  const line = json
    ? JSON.stringify({ time, level, target, message, ...fields })
    : `${time} ${level.toUpperCase().padEnd(5)} ${target}: ${message}${
      fields && Object.keys(fields).length > 0 ? " " + JSON.stringify(fields) : ""
    }`;
  if (ORDER[level] <= ORDER.warn) console.error(line);
  else console.log(line);
}

export interface Logger {
  error(message: string, fields?: Record<string, unknown>): void;
  warn(message: string, fields?: Record<string, unknown>): void;
  info(message: string, fields?: Record<string, unknown>): void;
  debug(message: string, fields?: Record<string, unknown>): void;
}

export function getLogger(target: string): Logger {
  return {
    error: (message, fields) => emit("error", target, message, fields),
    warn: (message, fields) => emit("warn", target, message, fields),
    info: (message, fields) => emit("info", target, message, fields),
    debug: (message, fields) => emit("debug", target, message, fields),
  };
}

/** An access key as it may appear in logs: the first four characters only. */
export function maskKey(key: string): string {
  return key.length <= 4 ? "****" : `${key.slice(0, 4)}****`;
}
