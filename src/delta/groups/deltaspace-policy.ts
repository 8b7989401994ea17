/**
 * Which deltaspace a key's delta joins: the bucket's `deltaspace` setting (docs/DELTA.md).
 *
 * - `parent`: the key's parent folder (`releases/1.2.3/app.zip` -> `releases/1.2.3/`), the
 *   baseline `<folder>reference.bin` beside the keys. The rule of data written before groups.
 * - `auto` (the default): the key with its version tokens folded out (version-fold.ts), so the
 *   versions of one artifact share one baseline whatever the layout.
 * - `template:<pattern>[;<pattern>…]`: patterns for layouts `auto` misreads. In a pattern,
 *   `{version}` matches one or more characters within a segment and is folded out, `*` matches
 *   any characters within a segment and `**` any characters across segments (both kept); every
 *   other character is literal. The first pattern matching the whole key gives the group key
 *   (the key with each `{version}` match replaced by `*`); a key matching none falls back to
 *   `auto`. `template:nightly/{version}/**` groups `nightly/2024-05-01_build7/app.zip` with
 *   `nightly/2024-05-02_build9/app.zip` as `nightly/*\/app.zip`.
 *
 * `auto` and template groups keep their baseline under `.dg/<id>/` (group-refs.ts), where `<id>`
 * hashes the group key alone, so a policy change that gives a key the same group key (auto ->
 * template) finds the same baseline. Where a delta's baseline lives is recorded in its metadata
 * (`deltaspace`), so a policy change never orphans what is stored.
 */

import { createHash } from "node:crypto";
import type { ObjectMeta } from "../../storage/mod.ts";
import { baselineFolderOf, type DeltaMeta, type DeltaSettings } from "../delta-context.ts";
import { deltaspaceOf, GROUP_PREFIX } from "../layout.ts";
import { foldVersions } from "./version-fold.ts";

export type DeltaspacePolicy =
  | { kind: "parent" }
  | { kind: "auto" }
  | { kind: "template"; patterns: RegExp[] };

/** Where a key's delta gets its baseline. */
export interface Deltaspace {
  /** The folder of the baseline: `.dg/<id>/` for a group, the parent folder for `parent`. */
  folder: string;
  /** The group key, or the parent folder: what `x-svc-deltaspace` shows. */
  label: string;
  /** A group (tracked by reference markers) rather than a parent folder. */
  grouped: boolean;
}

/** The setting's syntax, checked by the config schema too (it cannot import this room). */
export const POLICY_SYNTAX = "parent, auto or template:<pattern>[;<pattern>…]";

const parsed = new Map<string, DeltaspacePolicy>();

/** The policy of a `deltaspace` setting; undefined means `auto`. Throws on a malformed value. */
export function parseDeltaspacePolicy(raw: string | undefined): DeltaspacePolicy {
  if (raw === undefined || raw === "auto") return { kind: "auto" };
  if (raw === "parent") return { kind: "parent" };
  const cached = parsed.get(raw);
  if (cached) return cached;
  if (!raw.startsWith("template:")) {
    throw new RangeError(`Deltaspace policy "${raw}" is not ${POLICY_SYNTAX}`);
  }
  const patterns = raw.slice("template:".length).split(";").map((p) => p.trim());
  if (patterns.some((p) => p === "" || !p.includes("{version}"))) {
    throw new RangeError(`Deltaspace template "${raw}" needs {version} in every pattern`);
  }
  const policy: DeltaspacePolicy = { kind: "template", patterns: patterns.map(compilePattern) };
  if (parsed.size > 64) parsed.clear();
  parsed.set(raw, policy);
  return policy;
}

/** The policy of `bucket` in a settings snapshot. */
export function policyFor(settings: DeltaSettings, bucket: string): DeltaspacePolicy {
  return parseDeltaspacePolicy(settings.bucketDeltaspace?.(bucket));
}

/**
 * A pattern as a regular expression over the whole key; `{version}` matches are capture groups
 * (read through `indices`), `*` and `**` are not captured.
 */
function compilePattern(pattern: string): RegExp {
  let source = "";
  for (let i = 0; i < pattern.length;) {
    if (pattern.startsWith("{version}", i)) {
      source += "([^/]+?)";
      i += "{version}".length;
    } else if (pattern.startsWith("**", i)) {
      source += ".*";
      i += 2;
    } else if (pattern[i] === "*") {
      source += "[^/]*";
      i++;
    } else {
      source += pattern[i].replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
      i++;
    }
  }
  return new RegExp(`^${source}$`, "sd");
}

/** The group key of `key` under a template, or null when no pattern matches it. */
export function templateGroupKey(patterns: readonly RegExp[], key: string): string | null {
  for (const pattern of patterns) {
    const match = pattern.exec(key);
    if (!match?.indices) continue;
    let out = "";
    let at = 0;
    for (const span of match.indices.slice(1)) {
      if (!span) continue;
      out += key.slice(at, span[0]) + "*";
      at = span[1];
    }
    return out + key.slice(at);
  }
  return null;
}

/** The baseline folder of a group key: `.dg/` + the first 32 hex digits of its sha256. */
export function groupFolder(groupKey: string): string {
  return `${GROUP_PREFIX}${createHash("sha256").update(groupKey).digest("hex").slice(0, 32)}/`;
}

export function isGroupFolder(folder: string): boolean {
  return folder.startsWith(GROUP_PREFIX);
}

/** Where the delta of `key` gets its baseline under `policy`. */
export function resolveDeltaspace(policy: DeltaspacePolicy, key: string): Deltaspace {
  if (policy.kind === "parent") {
    const folder = deltaspaceOf(key);
    return { folder, label: folder, grouped: false };
  }
  const groupKey = (policy.kind === "template" ? templateGroupKey(policy.patterns, key) : null) ??
    foldVersions(key);
  return { folder: groupFolder(groupKey), label: groupKey, grouped: true };
}

/**
 * The `x-svc-deltaspace` of a stored object: the group key (or parent folder) its delta joined,
 * or for an object stored whole, the one it would join under `policy`.
 */
export function deltaspaceLabel(policy: DeltaspacePolicy, key: string, meta: ObjectMeta): string {
  if (meta.storage === "delta") {
    return (meta as DeltaMeta).deltaGroup ?? baselineFolderOf(key, meta);
  }
  return resolveDeltaspace(policy, key).label;
}
