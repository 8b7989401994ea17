/**
 * Building blocks shared by the section schemas: messages that read well after a dotted path
 * (`storage.buckets.x.public_prefixes: expected a list`), strict objects whose unknown keys are
 * errors, humantime durations, name patterns, IP/CIDR checks and IAM permission templates.
 */
import * as v from "valibot";

/** Raised for a document that does not match the model; the message carries the field path. */
export class ConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "ConfigError";
  }
}

/** The type a value has, in words, for messages. */
export function describe(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "a list";
  if (typeof value === "object") return "a mapping";
  if (typeof value === "string") return `"${value}"`;
  return String(value);
}

/** A mapping whose unknown keys are reported as `<path>.<key>: unknown key`. */
export function strict<const T extends v.ObjectEntries>(entries: T) {
  return v.strictObject(
    entries,
    (issue) =>
      issue.expected === "never"
        ? "unknown key"
        : `expected a mapping, got ${describe(issue.input)}`,
  );
}

export const bool = v.boolean((issue) => `expected true or false, got ${describe(issue.input)}`);
export const str = v.string((issue) => `expected a string, got ${describe(issue.input)}`);
export const nonEmpty = v.pipe(str, v.minLength(1, "must not be empty"));

const number = v.number((issue) => `expected a number, got ${describe(issue.input)}`);
const integer = v.pipe(number, v.integer((issue) => `expected an integer, got ${issue.input}`));

/** An integer in [min, max] (max optional). */
export function int(min: number, max?: number) {
  const low = v.check(
    (n: number) => n >= min,
    (issue) => `must be at least ${min}, got ${issue.input}`,
  );
  if (max === undefined) return v.pipe(integer, low);
  return v.pipe(
    integer,
    low,
    v.check((n: number) => n <= max, (issue) => `must be at most ${max}, got ${issue.input}`),
  );
}

/** A number in [min, max] (max optional). */
export function num(min: number, max?: number) {
  const low = v.check(
    (n: number) => n >= min,
    (issue) => `must be at least ${min}, got ${issue.input}`,
  );
  if (max === undefined) return v.pipe(number, low);
  return v.pipe(
    number,
    low,
    v.check((n: number) => n <= max, (issue) => `must be at most ${max}, got ${issue.input}`),
  );
}

/** A strictly positive number (above `above`). */
export function numAbove(above: number) {
  return v.pipe(
    number,
    v.check((n) => n > above, (issue) => `must be greater than ${above}, got ${issue.input}`),
  );
}

/** An integer silently clamped into [min, max] (the spec's "clamped" / "floor" settings). */
export function clampedInt(min: number, max = Number.MAX_SAFE_INTEGER) {
  return v.pipe(integer, v.transform((n: number) => Math.min(max, Math.max(min, n))));
}

/** An unsigned 64-bit size in bytes (safe integers only). */
export const u64 = v.pipe(
  integer,
  v.check((n: number) => n >= 0, (issue) => `must be at least 0, got ${issue.input}`),
  v.check((n: number) => Number.isSafeInteger(n), "is too large"),
);

export function list<T extends v.GenericSchema>(item: T) {
  return v.array(item, (issue) => `expected a list, got ${describe(issue.input)}`);
}

export function record<T extends v.GenericSchema>(item: T) {
  return v.record(
    str,
    item,
    (issue) => `expected a mapping, got ${describe(issue.input)}`,
  );
}

export function oneOf<const T extends readonly string[]>(options: T) {
  return v.picklist(
    options,
    (issue) => `expected one of ${options.join(", ")}, got ${describe(issue.input)}`,
  );
}

/** A string matching `pattern`, described in the message as `what`. */
export function matching(pattern: RegExp, what: string) {
  return v.pipe(
    str,
    v.regex(pattern, (issue) => `expected ${what}, got ${describe(issue.input)}`),
  );
}

/** Rule, key-id and backend names: `[A-Za-z0-9_.-]{1,64}`. */
export const NAME_PATTERN = /^[A-Za-z0-9_.-]{1,64}$/;
export const ruleName = matching(NAME_PATTERN, "1-64 characters of [A-Za-z0-9_.-]");

// --- durations ----------------------------------------------------------------------------------

const UNIT_SECONDS: Record<string, number> = {
  ms: 0.001,
  msec: 0.001,
  s: 1,
  sec: 1,
  secs: 1,
  second: 1,
  seconds: 1,
  m: 60,
  min: 60,
  mins: 60,
  minute: 60,
  minutes: 60,
  h: 3600,
  hr: 3600,
  hrs: 3600,
  hour: 3600,
  hours: 3600,
  d: 86400,
  day: 86400,
  days: 86400,
  w: 604800,
  week: 604800,
  weeks: 604800,
};

/**
 * Parses a humantime duration (`30s`, `5m`, `24h`, `7d`, `1h 30m`, `500ms`) into seconds; null
 * when the text is not one. Every number needs a unit, as in humantime.
 */
export function parseDuration(text: string): number | null {
  const trimmed = text.trim();
  if (trimmed === "") return null;
  const part = /(\d+(?:\.\d+)?)\s*([a-z]+)\s*/gy;
  let total = 0;
  let consumed = 0;
  for (let match = part.exec(trimmed); match; match = part.exec(trimmed)) {
    const unit = UNIT_SECONDS[match[2]];
    if (unit === undefined) return null;
    total += Number(match[1]) * unit;
    consumed = part.lastIndex;
  }
  return consumed === trimmed.length ? total : null;
}

/** A humantime string of at least `minSeconds`; kept as written. */
export function duration(minSeconds = 0) {
  return v.pipe(
    str,
    v.check(
      (text) => parseDuration(text) !== null,
      (issue) => `expected a duration such as 30s, 5m, 24h or 7d, got ${describe(issue.input)}`,
    ),
    v.check(
      (text) => (parseDuration(text) ?? 0) >= minSeconds,
      (issue) => `must be at least ${minSeconds}s, got "${issue.input}"`,
    ),
  );
}

// --- addresses ----------------------------------------------------------------------------------

function isIpv4(text: string): boolean {
  const parts = text.split(".");
  return parts.length === 4 &&
    parts.every((p) => /^\d{1,3}$/.test(p) && Number(p) <= 255 && (p === "0" || p[0] !== "0"));
}

function isIpv6(text: string): boolean {
  if (!text.includes(":") || !/^[0-9A-Fa-f:.]+$/.test(text)) return false;
  try {
    new URL(`http://[${text}]/`);
    return true;
  } catch {
    return false;
  }
}

export function isIp(text: string): boolean {
  return isIpv4(text) || isIpv6(text);
}

/** An IP address or CIDR block (bare IPs allowed: they mean /32 or /128). */
export function isIpOrCidr(text: string): boolean {
  const slash = text.indexOf("/");
  if (slash < 0) return isIp(text);
  const address = text.slice(0, slash);
  const bits = text.slice(slash + 1);
  if (!/^\d{1,3}$/.test(bits)) return false;
  if (isIpv4(address)) return Number(bits) <= 32;
  return isIpv6(address) && Number(bits) <= 128;
}

// --- IAM templates ------------------------------------------------------------------------------

const TEMPLATE_VARIABLES = new Set(["iam:username", "iam:access_key_id"]);

/** The `${...}` variables of `text` that are not IAM template variables. */
export function unknownTemplateVariables(text: string): string[] {
  return [...text.matchAll(/\$\{([^}]*)\}/g)]
    .map((m) => m[1])
    .filter((name) => !TEMPLATE_VARIABLES.has(name));
}

/** A string whose `${...}` variables are only `${iam:username}` / `${iam:access_key_id}`. */
export const templated = v.pipe(
  str,
  v.check(
    (text) => unknownTemplateVariables(text).length === 0,
    (issue) =>
      `unknown variable ${
        unknownTemplateVariables(issue.input as string).map((n) => `\${${n}}`).join(", ")
      } (only \${iam:username} and \${iam:access_key_id} are allowed)`,
  ),
);
