/**
 * Which keys a lifecycle rule never touches, whatever its action (SPEC "Lifecycle rule"):
 * directory markers (`folder/`), svc's internal prefixes (`.svc/**`, `.dg/**`), storage artifacts
 * (a deltaspace's `reference.bin`, `*.delta` files), keys an `exclude_globs` entry matches, and
 * keys no entry of a non-empty `include_globs` matches. Globs match the whole key (not the part
 * after the rule's prefix), as everywhere in the config: `*` a run without `/`, `**` any run,
 * `?` one character.
 */
import { REFERENCE_NAME } from "../../delta/mod.ts";
import { globMatcher } from "../../lib/mod.ts";

/** Why a key is skipped, or null when the rule may act on it. */
export type SkipReason = "directory-marker" | "internal" | "artifact" | "excluded" | "not-included";

/** The rule-independent part: markers, internal prefixes, storage artifacts. */
export function alwaysSkipped(key: string): SkipReason | null {
  if (key.endsWith("/")) return "directory-marker";
  if (key.startsWith(".svc/") || key.startsWith(".dg/")) return "internal";
  const name = key.slice(key.lastIndexOf("/") + 1);
  if (name === REFERENCE_NAME || name.endsWith(".delta")) return "artifact";
  return null;
}

/** The skip test of one rule: the always-skipped keys plus its globs. */
export function keyFilter(
  rule: { include_globs: string[]; exclude_globs: string[] },
): (key: string) => SkipReason | null {
  const include = rule.include_globs.map(globMatcher);
  const exclude = rule.exclude_globs.map(globMatcher);
  return (key) => {
    const always = alwaysSkipped(key);
    if (always !== null) return always;
    if (exclude.some((matches) => matches(key))) return "excluded";
    if (include.length > 0 && !include.some((matches) => matches(key))) return "not-included";
    return null;
  };
}
