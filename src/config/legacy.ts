/**
 * The legacy flat configuration shape: every field at the root (`listen_addr`, `backend`,
 * `max_object_size`, `access_key_id`, ...). It still loads; each key is moved into the section
 * that owns it. A document mixing flat keys with sections is an error naming both.
 */
import type * as v from "valibot";
import { accessSchema } from "./schema/schema-access.ts";
import { advancedSchema } from "./schema/schema-advanced.ts";
import { ConfigError } from "./schema/schema-common.ts";
import { storageSchema } from "./schema/schema-storage.ts";

export const SECTIONS = ["admission", "access", "storage", "advanced"] as const;

function keysOf(schema: { entries: v.ObjectEntries }): string[] {
  return Object.keys(schema.entries);
}

/**
 * Which section a flat root key belongs to. `access_key_id` / `secret_access_key` are the
 * bootstrap pair (access); `region` / `force_path_style` are companions of the `s3` shorthand.
 */
export const FLAT_KEYS: ReadonlyMap<string, (typeof SECTIONS)[number]> = (() => {
  const map = new Map<string, (typeof SECTIONS)[number]>();
  for (const key of keysOf(advancedSchema)) map.set(key, "advanced");
  for (const key of keysOf(storageSchema)) map.set(key, "storage");
  for (const key of keysOf(accessSchema)) map.set(key, "access");
  // Retired, still recognised so the flat shape reaches the warning in schema.ts.
  map.set("encryption_key", "advanced");
  return map;
})();

/** True when some root key of `document` is a flat-shape key. */
export function isLegacyShape(document: Record<string, unknown>): boolean {
  return Object.keys(document).some((key) => FLAT_KEYS.has(key));
}

/**
 * Returns `document` in the sectioned shape: unchanged when it already is, converted (with a
 * warning) when it is flat. Throws when flat keys and sections are mixed. Unknown root keys are
 * left in place for the validator to report.
 */
export function normalizeLegacy(
  document: Record<string, unknown>,
  warnings: string[],
): Record<string, unknown> {
  const flat = Object.keys(document).filter((key) => FLAT_KEYS.has(key));
  if (flat.length === 0) return document;
  const sections = Object.keys(document).filter((key) =>
    (SECTIONS as readonly string[]).includes(key)
  );
  if (sections.length > 0) {
    throw new ConfigError(
      `(document): mixed flat and sectioned config: flat keys ${flat.join(", ")} cannot be ` +
        `combined with sections ${sections.join(", ")}; move them under their section`,
    );
  }
  const out: Record<string, Record<string, unknown> | unknown> = {};
  for (const [key, value] of Object.entries(document)) {
    const section = FLAT_KEYS.get(key);
    if (section === undefined) {
      out[key] = value;
      continue;
    }
    const target = (out[section] ??= {}) as Record<string, unknown>;
    target[key] = value;
  }
  warnings.push(
    "the configuration uses the legacy flat shape; it was read into sections " +
      "(admission/access/storage/advanced); rewrite the file in the sectioned shape",
  );
  return out;
}
