/**
 * The configuration model: four optional sections (`admission`, `access`, `storage`,
 * `advanced`), each field with its type, range and default. The schema is the single source of
 * defaults; `Config` is what the rest of svc reads (through one snapshot per request).
 *
 * Field shapes live in the `schema-*.ts` modules, joined in config-schema.ts; this module runs
 * the rules that span several fields (schema-checks.ts: unique names, references, exclusive
 * fields) and formats every problem as `<dotted.path>: <message>`.
 */
import * as v from "valibot";
import type { AccessConfig } from "./schema-access.ts";
import {
  type AdvancedConfig,
  effectiveMaxTotalMultipartBytes,
  splitListenAddress,
} from "./schema-advanced.ts";
import { ConfigError } from "./schema-common.ts";
import type { StorageConfig } from "./schema-storage.ts";
import { type Config, configSchema } from "./config-schema.ts";
import {
  checkAccess,
  checkAdmission,
  checkAdvanced,
  checkStorage,
  type Problems,
} from "./schema-checks.ts";
import { normalizeLegacy } from "../legacy.ts";

export { effectiveMaxTotalMultipartBytes, splitListenAddress };
export type { AccessConfig, AdvancedConfig, StorageConfig };
export { ConfigError, parseDuration } from "./schema-common.ts";
export { configSchema };
export type { Config };

export interface ValidatedConfig {
  config: Config;
  /** Non-fatal findings of validation itself (cleared references, ignored fields). */
  warnings: string[];
}

function formatLine(path: string, message: string, sources: ReadonlyMap<string, string>): string {
  const source = sources.get(path);
  return `${path}${source ? ` (from ${source})` : ""}: ${message}`;
}

/**
 * Validates a parsed document and fills defaults, also returning validation warnings. Accepts
 * the legacy flat shape. Throws ConfigError naming every bad path; when `sources` says a path was
 * set by an environment variable or flag, the message names it too.
 */
export function validateConfigWithWarnings(
  document: unknown,
  sources: ReadonlyMap<string, string> = new Map(),
): ValidatedConfig {
  const warnings: string[] = [];
  let input = document ?? {};
  if (typeof input === "object" && !Array.isArray(input)) {
    input = normalizeLegacy(input as Record<string, unknown>, warnings);
    input = dropRetiredFields(input as Record<string, unknown>, warnings);
  }
  const result = v.safeParse(configSchema, input);
  if (!result.success) {
    const lines = result.issues.map((issue) =>
      formatLine(v.getDotPath(issue) ?? "(document)", issue.message, sources)
    );
    throw new ConfigError(lines.join("; "));
  }
  const config = result.output;
  const problems: Problems = { errors: [], warnings };
  checkAdmission(config, problems);
  checkAccess(config, problems);
  checkStorage(config, problems);
  checkAdvanced(config, problems);
  if (problems.errors.length > 0) {
    throw new ConfigError(
      problems.errors.map(([path, message]) => formatLine(path, message, sources)).join("; "),
    );
  }
  return { config, warnings };
}

/** As validateConfigWithWarnings, returning only the config. */
export function validateConfig(
  document: unknown,
  sources: ReadonlyMap<string, string> = new Map(),
): Config {
  return validateConfigWithWarnings(document, sources).config;
}

/**
 * Removes fields svc no longer reads, with a warning each: `advanced.encryption_key` (replaced in
 * 0.9 by per-backend encryption blocks). Returns a shallow copy; the input is not modified.
 */
function dropRetiredFields(
  document: Record<string, unknown>,
  warnings: string[],
): Record<string, unknown> {
  const advanced = document.advanced;
  if (
    advanced === null || typeof advanced !== "object" || Array.isArray(advanced) ||
    !("encryption_key" in advanced)
  ) return document;
  const { encryption_key: _ignored, ...rest } = advanced as Record<string, unknown>;
  warnings.push(
    "advanced.encryption_key is ignored since 0.9; configure storage.backend_encryption or " +
      "storage.backends[*].encryption (or SVC_ENCRYPTION_KEY) instead",
  );
  return { ...document, advanced: rest };
}
