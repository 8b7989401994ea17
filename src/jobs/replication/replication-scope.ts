/**
 * What one replication rule covers: the source bucket/prefix, where a source key lands at the
 * destination (the prefix remap), and which keys are never replicated (SPEC "Replication
 * scope"): directory markers, svc's internal prefixes (`.svc/`, `.dg/`), storage artifacts
 * (`reference.bin`, `*.delta`), `exclude_globs` matches and keys outside a non-empty
 * `include_globs`. Globs match the full source key (`*` within one path segment, `**` across
 * segments, `?` one character; the admission blocks' syntax).
 *
 * A rule whose destination lies inside its own source (same bucket, destination prefix under
 * the source prefix) would copy its copies forever: keys under the destination prefix are
 * skipped as a source.
 */
import type { ReplicationRule } from "../../config/mod.ts";
import { globMatcher } from "../../lib/mod.ts";

export class RuleScope {
  readonly sourceBucket: string;
  readonly sourcePrefix: string;
  readonly destinationBucket: string;
  readonly destinationPrefix: string;
  readonly #include: ((key: string) => boolean)[];
  readonly #exclude: ((key: string) => boolean)[];
  readonly #stamp: string;

  constructor(rule: ReplicationRule) {
    this.sourceBucket = rule.source.bucket;
    this.sourcePrefix = rule.source.prefix ?? "";
    this.destinationBucket = rule.destination.bucket;
    this.destinationPrefix = rule.destination.prefix ?? this.sourcePrefix;
    this.#include = (rule.include_globs ?? []).map(globMatcher);
    this.#exclude = (rule.exclude_globs ?? []).map(globMatcher);
    // Everything that changes which keys the walk visits or where they land.
    this.#stamp = JSON.stringify([
      this.sourceBucket,
      this.sourcePrefix,
      this.destinationBucket,
      this.destinationPrefix,
      rule.include_globs ?? [],
      rule.exclude_globs ?? [],
      rule.replicate_deletes ?? false,
    ]);
  }

  /** Identifies the scope; a resume cursor stamped with another one restarts from the top. */
  get stamp(): string {
    return this.#stamp;
  }

  /** Whether `bucket`/`key` is a source key of this rule (filters aside). */
  covers(bucket: string, key: string): boolean {
    return bucket === this.sourceBucket && key.startsWith(this.sourcePrefix);
  }

  /** Where source key `key` (inside the source prefix) lands at the destination. */
  toDestination(key: string): string {
    return this.destinationPrefix + key.slice(this.sourcePrefix.length);
  }

  /** The source key a destination key (inside the destination prefix) came from. */
  toSource(key: string): string {
    return this.sourcePrefix + key.slice(this.destinationPrefix.length);
  }

  /** Why source key `key` is never replicated, or null when it is. */
  skipReason(key: string): string | null {
    if (key.endsWith("/")) return "directory marker";
    if (isInternal(key)) return "svc internal key";
    if (isArtifact(key)) return "storage artifact";
    if (this.#selfTarget(key)) return "inside the rule's own destination";
    if (this.#exclude.some((match) => match(key))) return "excluded by exclude_globs";
    if (this.#include.length > 0 && !this.#include.some((match) => match(key))) {
      return "outside include_globs";
    }
    return null;
  }

  /** Whether no key under directory prefix `prefix` can be replicated (svc's own trees). */
  skipsTree(prefix: string): boolean {
    return isInternal(prefix) || this.#selfTarget(prefix);
  }

  #selfTarget(key: string): boolean {
    return this.sourceBucket === this.destinationBucket &&
      this.destinationPrefix !== this.sourcePrefix &&
      this.destinationPrefix.startsWith(this.sourcePrefix) &&
      key.startsWith(this.destinationPrefix);
  }
}

function isInternal(key: string): boolean {
  return key.startsWith(".svc/") || key.startsWith(".dg/") || key === ".svc" || key === ".dg";
}

function isArtifact(key: string): boolean {
  const base = key.slice(key.lastIndexOf("/") + 1);
  return base === "reference.bin" || key.endsWith(".delta");
}
