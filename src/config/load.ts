/**
 * Finds, reads and validates the configuration: file (search order from the spec), `${env:NAME}`
 * placeholders, `SVC_*` environment on top, then CLI flags on top of everything.
 */
import { pathExists as exists } from "../lib/mod.ts";
import { isAbsolute, join } from "node:path";
import { parse as parseYaml } from "yaml";
import { configAdvisories } from "./advisories.ts";
import { unbuiltSettings } from "./unbuilt.ts";
import { applyEnvironment } from "./env.ts";
import { normalizeLegacy } from "./legacy.ts";
import {
  type Config,
  ConfigError,
  splitListenAddress,
  validateConfigWithWarnings,
} from "./schema/schema.ts";

export const TOML_REMOVED_MESSAGE =
  "TOML configs are no longer supported; convert the file to YAML (svc.yaml) before starting";

/** Candidate files in search order; `.toml` entries are tripwires that stop startup. */
/** Where a config apply persists when svc started without a file. */
export const DEFAULT_PERSIST_PATH = "./svc.yaml";

export const SEARCH_ORDER = [
  "./svc.yaml",
  "./svc.yml",
  "./svc.toml",
  "/etc/svc/config.yaml",
  "/etc/svc/config.yml",
  "/etc/svc/config.toml",
];

export interface LoadOptions {
  /** `--config`: must exist. */
  configPath?: string;
  /** `--listen`: overrides file and environment. */
  listen?: string;
  env: Record<string, string | undefined>;
  /**
   * Directory the `./` candidates and a relative `--config` / `SVC_CONFIG` are resolved against;
   * the process's working directory when absent.
   */
  cwd?: string;
}

export interface LoadedConfig {
  config: Config;
  /** The file the document came from, or null for the embedded defaults. */
  path: string | null;
  /**
   * Where an applied configuration is written: the loaded file, else the file `SVC_CONFIG` or
   * `--config` names, else `./svc.yaml` (first in the search order, so the next start reads it).
   */
  persistPath: string;
  /**
   * The operator's document as the file holds it: sectioned (a legacy flat shape normalised),
   * `${env:…}` placeholders unexpanded, no environment overrides. What a config apply patches
   * and persists, so environment values never land in the file.
   */
  document: Record<string, unknown>;
  /** Load and validation warnings, followed by the config advisories. */
  warnings: string[];
  /** The config advisories alone (also included in `warnings`). */
  advisories: string[];
}

/** `path` as seen from `cwd` (unchanged without a `cwd` or when absolute). */
function resolveFrom(cwd: string | undefined, path: string): string {
  return cwd === undefined || isAbsolute(path) ? path : join(cwd, path);
}

/**
 * The file to load: `SVC_CONFIG` wins unconditionally, then the first search-order match.
 * Relative candidates are looked up in `cwd` when given.
 */
export async function findConfigFile(
  env: Record<string, string | undefined>,
  cwd?: string,
): Promise<string | null> {
  if (env.SVC_CONFIG) return resolveFrom(cwd, env.SVC_CONFIG);
  for (const candidate of SEARCH_ORDER) {
    const path = resolveFrom(cwd, candidate);
    if (await exists(path)) return path;
  }
  return null;
}

/** Replaces `${env:NAME}` in every string of the document; a missing variable is an error. */
export function expandPlaceholders(
  node: unknown,
  env: Record<string, string | undefined>,
  path = "",
): unknown {
  if (typeof node === "string") {
    return node.replace(/\$\{env:([A-Za-z_][A-Za-z0-9_]*)\}/g, (_match, name: string) => {
      const value = env[name];
      if (value === undefined) {
        throw new ConfigError(`${path || "(document)"}: environment variable "${name}" is not set`);
      }
      return value;
    });
  }
  if (Array.isArray(node)) {
    return node.map((item, index) => expandPlaceholders(item, env, `${path}[${index}]`));
  }
  if (node !== null && typeof node === "object") {
    const out: Record<string, unknown> = {};
    for (const [key, value] of Object.entries(node)) {
      out[key] = expandPlaceholders(value, env, path ? `${path}.${key}` : key);
    }
    return out;
  }
  return node;
}

/**
 * Parses YAML text into a plain document; the message names the problem's line. A top-level
 * section left empty (every field commented out, so YAML null) counts as absent.
 */
export function parseDocument(text: string, source: string): Record<string, unknown> {
  let parsed: unknown;
  try {
    parsed = parseYaml(text);
  } catch (err) {
    throw new ConfigError(`${source}: ${(err as Error).message}`);
  }
  if (parsed === null || parsed === undefined) return {};
  if (typeof parsed !== "object" || Array.isArray(parsed)) {
    throw new ConfigError(`${source}: the document must be a mapping of sections`);
  }
  const document: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(parsed)) {
    if (value !== null) document[key] = value;
  }
  return document;
}

export interface BuildOptions {
  env: Record<string, string | undefined>;
  /** `--listen`: overrides file and environment. */
  listen?: string;
}

export interface BuiltConfig {
  config: Config;
  /** Validation warnings followed by the config advisories. */
  warnings: string[];
  advisories: string[];
}

/**
 * The running configuration of a document (placeholders already expanded): environment
 * overrides and `--listen` applied on a copy, then validated in full. Throws ConfigError.
 */
export function buildConfig(
  fileDocument: Record<string, unknown>,
  options: BuildOptions,
): BuiltConfig {
  const warnings: string[] = [];
  const document = structuredClone(fileDocument);
  const sources = applyEnvironment(document, options.env);
  if (options.listen !== undefined) {
    const advanced = document.advanced ??= {};
    if (typeof advanced !== "object" || Array.isArray(advanced)) {
      throw new ConfigError(`advanced: cannot apply --listen over a non-object "advanced"`);
    }
    (advanced as Record<string, unknown>).listen_addr = options.listen;
    sources.set("advanced.listen_addr", "--listen");
  }
  const validated = validateConfigWithWarnings(document, sources);
  const config = validated.config;
  warnings.push(...validated.warnings);
  const { storage } = config;
  if (!storage.backend && storage.s3 === undefined && storage.filesystem === undefined) {
    storage.filesystem = "./data";
  }
  const advisories = configAdvisories(config, document);
  warnings.push(...advisories, ...unbuiltSettings(config, document));
  return { config, warnings, advisories };
}

export async function loadConfig(options: LoadOptions): Promise<LoadedConfig> {
  const warnings: string[] = [];
  const path = options.configPath !== undefined
    ? resolveFrom(options.cwd, options.configPath)
    : await findConfigFile(options.env, options.cwd);
  let document: Record<string, unknown> = {};
  let fromFile = false;
  if (path !== null) {
    if (path.toLowerCase().endsWith(".toml")) {
      throw new ConfigError(`${path}: ${TOML_REMOVED_MESSAGE}`);
    }
    let text: string | null = null;
    try {
      text = await Deno.readTextFile(path);
    } catch (err) {
      const missing = err instanceof Deno.errors.NotFound;
      if (!missing || options.configPath !== undefined) {
        throw new ConfigError(`Cannot read config file "${path}": ${(err as Error).message}`);
      }
      warnings.push(`Config file "${path}" (SVC_CONFIG) does not exist; using defaults`);
    }
    if (text !== null) {
      fromFile = true;
      document = parseDocument(text, path);
    }
  }
  document = normalizeLegacy(document, warnings);
  const expanded = expandPlaceholders(document, options.env) as Record<string, unknown>;
  const built = buildConfig(expanded, options);
  warnings.push(...built.warnings);
  return {
    config: built.config,
    path: fromFile ? path : null,
    persistPath: path ?? resolveFrom(options.cwd, DEFAULT_PERSIST_PATH),
    document,
    warnings,
    advisories: built.advisories,
  };
}

/** Splits `host:port`, `[v6]:port` or `:port` into Deno.serve options. */
export function parseListenAddress(address: string): { hostname: string; port: number } {
  const parsed = splitListenAddress(address);
  if (parsed === null) {
    throw new ConfigError(`advanced.listen_addr: expected host:port, got "${address}"`);
  }
  return parsed;
}
