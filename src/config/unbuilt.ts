/**
 * Settings the schema accepts (the spec defines them, so a valid document may carry them) but
 * this build does not act on yet. Each one set by the operator yields a warning naming the key
 * and what really happens, at lint, at startup and in every config API answer: an operator who
 * writes `mode: aes256-gcm-proxy` must not believe the data is encrypted. A row leaves this table
 * in the change that builds its feature.
 */
import type { Config } from "./schema/schema.ts";

type Doc = Record<string, unknown> | undefined;

interface Unbuilt {
  /** The setting(s), as the warning names them. */
  path: (config: Config, document: Doc) => string[];
  consequence: string;
}

function section(document: Doc, name: string): Record<string, unknown> | undefined {
  const value = document?.[name];
  return value !== null && typeof value === "object" && !Array.isArray(value)
    ? value as Record<string, unknown>
    : undefined;
}

/** Paths of `names` the operator set in `advanced` (defaults do not count). */
function setInAdvanced(names: string[]) {
  return (_config: Config, document: Doc) => {
    const advanced = section(document, "advanced");
    return names.filter((name) => advanced?.[name] !== undefined).map((n) => `advanced.${n}`);
  };
}

const UNBUILT: Unbuilt[] = [
  {
    path: setInAdvanced(["blocking_threads"]),
    consequence: "the setting has no effect",
  },
];

/**
 * IAM lists in a gui-mode config: valid, but the database is authoritative there (SPEC `access`
 * section), so they are ignored. Not an unbuilt feature: a mode the operator chose.
 */
function ignoredIamLists(config: Config): string[] {
  if (config.access.iam_mode === "declarative") return [];
  return ["iam_users", "iam_groups", "auth_providers", "group_mapping_rules"].filter((key) => {
    const list = (config.access as Record<string, unknown>)[key];
    return Array.isArray(list) && list.length > 0;
  }).map((key) =>
    `access.${key}: ignored while access.iam_mode is gui (the config database holds IAM); ` +
    "set iam_mode: declarative to make the YAML authoritative"
  );
}

/**
 * One warning per unbuilt setting the configuration uses. `document` is the sectioned input
 * (before defaults), so a default value never warns.
 */
export function unbuiltSettings(config: Config, document?: Doc): string[] {
  const warnings: string[] = ignoredIamLists(config);
  for (const row of UNBUILT) {
    for (const path of row.path(config, document)) {
      warnings.push(`${path}: accepted but not built yet in this version: ${row.consequence}`);
    }
  }
  return warnings;
}
