/**
 * Argument parsing for `svc admin …`: `--flag value`, `--flag=value`, boolean flags, repeatable
 * flags, `-h`/`--help` anywhere and `--` ending the flags. Pure (no I/O), so it is unit-tested.
 */
import { usageError } from "./exit-codes.ts";

/** `boolean`: present or not; `string`: one value; `list`: may repeat, values collected. */
export type FlagKind = "boolean" | "string" | "list";
export type FlagSpec = Record<string, FlagKind>;

export interface ParsedArgs {
  positionals: string[];
  flags: Record<string, string | boolean | string[]>;
  help: boolean;
}

/** Flags every admin command takes. */
export const GLOBAL_FLAGS: FlagSpec = {
  server: "string",
  "session-file": "string",
  json: "boolean",
};

/** Parses `args` by `spec` (flag names without the leading `--`); throws a usage error. */
export function parseArgs(args: string[], spec: FlagSpec): ParsedArgs {
  const parsed: ParsedArgs = { positionals: [], flags: {}, help: false };
  let flagsEnded = false;
  for (let i = 0; i < args.length; i++) {
    const arg = args[i];
    if (flagsEnded || !arg.startsWith("-") || arg === "-") {
      parsed.positionals.push(arg);
      continue;
    }
    if (arg === "--") {
      flagsEnded = true;
      continue;
    }
    if (arg === "-h" || arg === "--help") {
      parsed.help = true;
      continue;
    }
    const eq = arg.indexOf("=");
    const name = arg.slice(2, eq > 0 ? eq : undefined);
    const kind = arg.startsWith("--") ? spec[name] : undefined;
    if (kind === undefined || !Object.hasOwn(spec, name)) {
      throw usageError(`Unknown option "${arg}"`);
    }
    if (kind === "boolean") {
      if (eq > 0) throw usageError(`--${name} takes no value, got "${arg}"`);
      parsed.flags[name] = true;
      continue;
    }
    const value = eq > 0 ? arg.slice(eq + 1) : args[++i];
    if (value === undefined || value === "") throw usageError(`--${name} needs a value`);
    if (kind === "list") {
      const list = (parsed.flags[name] as string[] | undefined) ?? [];
      parsed.flags[name] = [...list, value];
    } else parsed.flags[name] = value;
  }
  return parsed;
}

/** A string flag's value, or undefined. */
export function flagString(args: ParsedArgs, name: string): string | undefined {
  const value = args.flags[name];
  return typeof value === "string" ? value : undefined;
}

/** A list flag's values (empty when absent). */
export function flagList(args: ParsedArgs, name: string): string[] {
  const value = args.flags[name];
  return Array.isArray(value) ? value : [];
}

/** A positive number flag (seconds, limits), or `fallback`; throws a usage error. */
export function flagNumber(args: ParsedArgs, name: string, fallback: number): number {
  const raw = flagString(args, name);
  if (raw === undefined) return fallback;
  const value = Number(raw);
  if (!Number.isFinite(value) || value <= 0) {
    throw usageError(`--${name} must be a positive number, got "${raw}"`);
  }
  return value;
}
