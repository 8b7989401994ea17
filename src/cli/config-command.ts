/**
 * `svc config …` subcommands (offline, no server):
 *
 * - `svc config lint <file>`: validates one file. Exit codes (spec, Errors table): 0 valid ("ok" on
 *   stdout, warnings on stderr), 3 I/O (missing or unreadable file), 4 parse (YAML syntax, a
 *   document that is not a mapping, a TOML file, mixed flat/sectioned shapes), 6 validation.
 *   The file is judged ALONE: `${env:NAME}` placeholders are expanded from the environment (a
 *   missing variable is a validation error, 6) but `SVC_*` environment overrides are NOT applied,
 *   so a lint result does not depend on the shell it runs in. (A `SVC_*` variable that the file
 *   names in a placeholder stays visible to the placeholder.)
 * - `svc config defaults [--section <name>]`: prints the JSON Schema of the document or of one
 *   section (with every default); an unknown section exits 2.
 *
 * - `svc config apply <file> --server <url> [--dry-run]`: applies a file to a running server
 *   through the admin API (src/cli/config-apply.ts, which documents its exit codes).
 *
 * Usage errors exit 2. Every message goes to stderr.
 */
import { YAMLError } from "yaml";
import { parse as parseYaml } from "yaml";
import { configJsonSchema, configSections, loadConfig } from "../config/mod.ts";
import { APPLY_USAGE, configApply } from "./config-apply.ts";
import { type CommandIo, defaultIo } from "./command-io.ts";

export const EXIT = { ok: 0, usage: 2, io: 3, parse: 4, validation: 6 } as const;

export const CONFIG_USAGE = `Usage:
  svc config lint <file>                 validate a config file offline
  svc config defaults [--section <name>] print the JSON Schema (with defaults)
  svc config apply <file> --server <url> [--dry-run]
                                         apply a file to a running server (logs in with
                                         SVC_BOOTSTRAP_PASSWORD; exit 0 applied, 1 server error,
                                         3 I/O, 4 parse, 6 invalid, 7 auth, 8 unreachable)

lint exit codes: 0 valid, 3 I/O error, 4 parse error, 6 validation error.
lint expands \${env:NAME} placeholders but ignores SVC_* environment overrides.`;

const PLACEHOLDER = /\$\{env:([A-Za-z_][A-Za-z0-9_]*)\}/g;

/**
 * The environment lint hands the loader: everything except `SVC_*` variables, which the loader
 * would apply as overrides; those named by a placeholder in `text` are kept for the placeholder.
 */
export function lintEnvironment(
  env: Record<string, string | undefined>,
  text: string,
): Record<string, string | undefined> {
  const referenced = new Set([...text.matchAll(PLACEHOLDER)].map((match) => match[1]));
  const out: Record<string, string | undefined> = {};
  for (const [name, value] of Object.entries(env)) {
    if (!name.startsWith("SVC_") || referenced.has(name)) out[name] = value;
  }
  return out;
}

/**
 * Whether a loader error is a parse problem (4) rather than a validation one (6). The loader
 * reports both as ConfigError today; a dedicated class (name containing "Parse"), a `kind` /
 * `code` of "parse", or the mixed-shape / TOML wording all count as parse problems.
 */
export function isParseError(err: unknown): boolean {
  if (err instanceof YAMLError) return true;
  if (!(err instanceof Error)) return false;
  const tagged = err as Error & { kind?: unknown; code?: unknown };
  if (/parse/i.test(err.name) || tagged.kind === "parse" || tagged.code === "parse") return true;
  return /\bTOML\b/.test(err.message) ||
    /\bmix(?:ed|es|ing)?\b[^.]*\b(?:flat|sectioned)\b/i.test(err.message);
}

/** `svc config lint <file>`; returns the exit code. */
export async function lintConfigFile(file: string, io: CommandIo): Promise<number> {
  if (file.toLowerCase().endsWith(".toml")) {
    io.stderr(
      `svc: ${file}: TOML configs are no longer supported; convert the file to YAML (svc.yaml)`,
    );
    return EXIT.parse;
  }
  let text: string;
  try {
    text = await Deno.readTextFile(file);
  } catch (err) {
    io.stderr(`svc: cannot read config file "${file}": ${(err as Error).message}`);
    return EXIT.io;
  }
  let parsed: unknown;
  try {
    parsed = parseYaml(text);
  } catch (err) {
    io.stderr(`svc: ${file}: ${(err as Error).message}`);
    return EXIT.parse;
  }
  if (
    parsed !== null && parsed !== undefined && (typeof parsed !== "object" || Array.isArray(parsed))
  ) {
    io.stderr(`svc: ${file}: the document must be a mapping of sections`);
    return EXIT.parse;
  }
  try {
    const loaded = await loadConfig({ configPath: file, env: lintEnvironment(io.env, text) });
    for (const warning of loaded.warnings) io.stderr(`warning: ${warning}`);
    io.stdout("ok");
    return EXIT.ok;
  } catch (err) {
    const message = err instanceof Error ? err.message : String(err);
    if (err instanceof Deno.errors.NotFound || err instanceof Deno.errors.PermissionDenied) {
      io.stderr(`svc: cannot read config file "${file}": ${message}`);
      return EXIT.io;
    }
    io.stderr(`svc: ${message}`);
    return isParseError(err) ? EXIT.parse : EXIT.validation;
  }
}

/** `svc config defaults [--section <name>]`; returns the exit code. */
export function printDefaults(args: string[], io: CommandIo): number {
  let section: string | undefined;
  for (let i = 0; i < args.length; i++) {
    const arg = args[i];
    if (arg === "--section" && args[i + 1]) section = args[++i];
    else if (arg.startsWith("--section=") && arg.length > "--section=".length) {
      section = arg.slice("--section=".length);
    } else {
      io.stderr(`svc: unexpected argument "${arg}"\n${CONFIG_USAGE}`);
      return EXIT.usage;
    }
  }
  if (section !== undefined && !configSections().includes(section)) {
    io.stderr(
      `svc: unknown config section "${section}" (expected one of ${configSections().join(", ")})`,
    );
    return EXIT.usage;
  }
  io.stdout(JSON.stringify(configJsonSchema(section), null, 2));
  return EXIT.ok;
}

/** Dispatches `svc config <args>`; returns the exit code. */
export async function runConfigCommand(
  args: string[],
  io: CommandIo = defaultIo(),
): Promise<number> {
  const [command, ...rest] = args;
  // `svc config <command> --help` anywhere among its arguments: usage, exit 0.
  if (rest.includes("--help") || rest.includes("-h")) {
    io.stdout(command === "apply" ? `Usage: ${APPLY_USAGE}` : CONFIG_USAGE);
    return EXIT.ok;
  }
  if (command === "lint") {
    if (rest.length !== 1 || rest[0].startsWith("-")) {
      io.stderr(`svc: config lint takes exactly one file\n${CONFIG_USAGE}`);
      return EXIT.usage;
    }
    return await lintConfigFile(rest[0], io);
  }
  if (command === "defaults") return printDefaults(rest, io);
  if (command === "apply") return await configApply(rest, io);
  if (command === "--help" || command === "-h" || command === "help") {
    io.stdout(CONFIG_USAGE);
    return EXIT.ok;
  }
  io.stderr(
    `svc: ${
      command ? `unknown config command "${command}"` : "missing config command"
    }\n${CONFIG_USAGE}`,
  );
  return EXIT.usage;
}
