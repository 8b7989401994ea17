/**
 * Log levels and the tracing-style level filter.
 *
 * A filter string is a comma-separated list of directives:
 * - a bare level (`debug`, `off`) sets the level of every target no other directive matches;
 * - `target=level` (`svc::s3=trace`) sets the level of that target and the targets below it
 *   (`svc::s3` covers `svc::s3` and `svc::s3::multipart`, not `svc::s3x`); the most specific
 *   directive wins, and of two directives for the same target the later one;
 * - a bare target (`svc::s3`) means `target=trace`, as in tracing. To keep a mistyped level from
 *   turning into a silent no-op, a bare word is read as a target only when it is `svc` or contains
 *   `::`.
 * Levels are case-insensitive; `warning` reads as `warn`, `fatal` as `error`. Anything else
 * (span filters such as `svc[request]=debug`, unknown levels, empty targets) is ignored and
 * reported by the caller in one warning. When no bare level is given, unmatched targets log at
 * `warn`, so errors and warnings are never hidden by a filter that only names a target. A filter
 * with no usable directive at all falls back to DEFAULT_LOG_FILTER.
 */
export type LogLevel = "error" | "warn" | "info" | "debug" | "trace";
/** A level or `off`, which disables a target. */
export type LevelSetting = LogLevel | "off";

export const LOG_LEVELS: readonly LogLevel[] = ["error", "warn", "info", "debug", "trace"];

/** Higher is more severe; `off` is above every level so nothing passes it. */
const RANK: Record<LevelSetting, number> = {
  trace: 0,
  debug: 1,
  info: 2,
  warn: 3,
  error: 4,
  off: 5,
};

/** The severity rank of a level setting (trace 0 … error 4, off 5). */
export function levelRank(level: LevelSetting): number {
  return RANK[level];
}

/** Whether `level` is at least as severe as `minimum`. */
export function atLeast(level: LogLevel, minimum: LevelSetting): boolean {
  return RANK[level] >= RANK[minimum];
}

/** Reads a level name (case-insensitive, with aliases); null when it is not one. */
export function parseLevel(text: string): LevelSetting | null {
  const name = text.trim().toLowerCase();
  if (name === "warning") return "warn";
  if (name === "fatal" || name === "critical") return "error";
  if (name === "off" || name === "none") return "off";
  return (LOG_LEVELS as readonly string[]).includes(name) ? name as LogLevel : null;
}

/**
 * The spec's default: debug for service and HTTP-layer targets (all ours are under `svc`), info
 * for anything else (only the logging library's own diagnostics today).
 */
export const DEFAULT_LOG_FILTER = "info,svc=debug";

/** Level used for targets no directive matches when the filter has no bare level. */
const UNMATCHED_LEVEL: LevelSetting = "warn";

export interface LogDirective {
  target: string;
  level: LevelSetting;
}

export interface LogFilter {
  /** The filter string this was parsed from. */
  readonly spec: string;
  readonly defaultLevel: LevelSetting;
  readonly directives: readonly LogDirective[];
  /** The level in force for a target such as `svc::s3`. */
  levelFor(target: string): LevelSetting;
  /** Whether a record of `level` from `target` passes. */
  enabled(target: string, level: LogLevel): boolean;
  /** The most verbose level any target can log at (`off` when everything is off). */
  mostVerbose(): LevelSetting;
}

const TARGET = /^[A-Za-z0-9_.-]+(::[A-Za-z0-9_.-]+)*$/;

function covers(directive: string, target: string): boolean {
  return target === directive || target.startsWith(directive + "::");
}

class ParsedFilter implements LogFilter {
  readonly #cache = new Map<string, LevelSetting>();

  constructor(
    readonly spec: string,
    readonly defaultLevel: LevelSetting,
    readonly directives: readonly LogDirective[],
  ) {}

  levelFor(target: string): LevelSetting {
    const cached = this.#cache.get(target);
    if (cached !== undefined) return cached;
    let best: LogDirective | undefined;
    for (const directive of this.directives) {
      if (!covers(directive.target, target)) continue;
      if (!best || directive.target.length >= best.target.length) best = directive;
    }
    const level = best?.level ?? this.defaultLevel;
    if (this.#cache.size < 1024) this.#cache.set(target, level);
    return level;
  }

  enabled(target: string, level: LogLevel): boolean {
    return atLeast(level, this.levelFor(target));
  }

  mostVerbose(): LevelSetting {
    let most = this.defaultLevel;
    for (const { level } of this.directives) if (RANK[level] < RANK[most]) most = level;
    return most;
  }
}

/** Parses a filter string; `ignored` lists the directives that were skipped. */
export function parseLogFilter(spec: string): { filter: LogFilter; ignored: string[] } {
  const ignored: string[] = [];
  const directives: LogDirective[] = [];
  let defaultLevel: LevelSetting | undefined;
  for (const raw of spec.split(",")) {
    const text = raw.trim();
    if (text === "") continue;
    const eq = text.indexOf("=");
    if (eq < 0) {
      const level = parseLevel(text);
      if (level) defaultLevel = level;
      else if (TARGET.test(text) && (text === "svc" || text.includes("::"))) {
        directives.push({ target: text, level: "trace" });
      } else ignored.push(text);
      continue;
    }
    const target = text.slice(0, eq).trim();
    const level = parseLevel(text.slice(eq + 1));
    if (level && TARGET.test(target)) directives.push({ target, level });
    else ignored.push(text);
  }
  if (defaultLevel === undefined && directives.length === 0) {
    const fallback = parseLogFilter(DEFAULT_LOG_FILTER).filter;
    return {
      filter: new ParsedFilter(spec, fallback.defaultLevel, fallback.directives),
      ignored,
    };
  }
  return { filter: new ParsedFilter(spec, defaultLevel ?? UNMATCHED_LEVEL, directives), ignored };
}

export interface LogLevelSources {
  /** The process environment; RUST_LOG and SVC_LOG_LEVEL are read from it. */
  env: Record<string, string | undefined>;
  /** `advanced.log_level` from the configuration file. */
  fileLevel?: string;
  /** The `--verbose` flag. */
  verbose?: boolean;
}

/**
 * The filter string in force at startup: RUST_LOG > SVC_LOG_LEVEL > file value > --verbose
 * (`trace`) > DEFAULT_LOG_FILTER. Empty or blank values count as unset.
 */
export function resolveLogLevel({ env, fileLevel, verbose }: LogLevelSources): string {
  for (const candidate of [env.RUST_LOG, env.SVC_LOG_LEVEL, fileLevel]) {
    if (candidate !== undefined && candidate.trim() !== "") return candidate.trim();
  }
  return verbose ? "trace" : DEFAULT_LOG_FILTER;
}
