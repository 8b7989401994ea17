/**
 * Finds, reads and validates the configuration: file (search order from the spec), `${env:NAME}`
 * placeholders, `SVC_*` environment on top, then CLI flags on top of everything.
 */
import { parse as parseYaml } from "yaml";
import { applyEnvironment } from "./env.ts";
import { type Config, ConfigError, validateConfig } from "./schema.ts";

export const TOML_REMOVED_MESSAGE =
  "TOML configs are no longer supported; convert the file to YAML (svc.yaml) before starting";

/** Candidate files in search order; `.toml` entries are tripwires that stop startup. */
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
}

export interface LoadedConfig {
  config: Config;
  /** The file the document came from, or null for the embedded defaults. */
  path: string | null;
  warnings: string[];
}

async function exists(path: string): Promise<boolean> {
  try {
    await Deno.stat(path);
    return true;
  } catch (err) {
    if (err instanceof Deno.errors.NotFound) return false;
    throw err;
  }
}

/** The file to load: `SVC_CONFIG` wins unconditionally, then the first search-order match. */
export async function findConfigFile(
  env: Record<string, string | undefined>,
): Promise<string | null> {
  if (env.SVC_CONFIG) return env.SVC_CONFIG;
  for (const candidate of SEARCH_ORDER) {
    if (await exists(candidate)) return candidate;
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

/** Parses YAML text into a plain document; the message names the problem's line. */
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
  return parsed as Record<string, unknown>;
}

export async function loadConfig(options: LoadOptions): Promise<LoadedConfig> {
  const warnings: string[] = [];
  const path = options.configPath ?? await findConfigFile(options.env);
  let document: Record<string, unknown> = {};
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
      document = expandPlaceholders(parseDocument(text, path), options.env) as Record<
        string,
        unknown
      >;
    }
  }
  applyEnvironment(document, options.env);
  if (options.listen !== undefined) {
    const advanced = (document.advanced ??= {}) as Record<string, unknown>;
    advanced.listen_addr = options.listen;
  }
  const config = validateConfig(document);
  if (!config.storage.backend && !config.storage.filesystem) config.storage.filesystem = "./data";
  if (config.storage.backend && config.storage.filesystem) {
    throw new ConfigError("storage: only one of backend / s3 / filesystem may be set");
  }
  return { config, path: path !== null && document !== null ? path : null, warnings };
}

/** Splits `host:port`, `[v6]:port` or `:port` into Deno.serve options. */
export function parseListenAddress(address: string): { hostname: string; port: number } {
  const match = /^(?:\[([^\]]+)\]|([^:]*)):(\d{1,5})$/.exec(address.trim());
  const port = match ? Number(match[3]) : NaN;
  if (!match || port > 65535) {
    throw new ConfigError(`advanced.listen_addr: expected host:port, got "${address}"`);
  }
  return { hostname: match[1] ?? (match[2] || "0.0.0.0"), port };
}
