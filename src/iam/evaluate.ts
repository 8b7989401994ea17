/**
 * Compiling a user's permissions (templates expanded, globs and CIDRs parsed once) and deciding a
 * request against them. Evaluation order: every statement of the user (group permissions first,
 * then direct ones) is checked; a matching Deny decides at once (explicit Deny wins); otherwise
 * the first matching Allow allows; no match denies. Cost: one pass over the user's statements.
 *
 * What a resource matches:
 * - `*`: everything, service-level requests (no bucket) included;
 * - `bucket` (no `/`; globs allowed): the bucket and every key in it;
 * - `bucket/keyglob`: keys matching the glob; `bucket/*` also the bucket itself. A bucket-level
 *   `list` (ListObjects with `prefix`) is allowed by a key glob that some key under the prefix
 *   could match (listing `home/` or `` with a grant on `home/alice/*`); the listing is then
 *   filtered key by key (`keyFilter`). A Deny decides a list request only when it covers every
 *   key under the prefix; a narrower Deny hides keys in the filter instead.
 */
import type { Conditions, Permission, RequestAction } from "./model.ts";
import { isIpOrCidr } from "../config/mod.ts";
import { addressMatcher } from "../http/mod.ts";

export interface AuthzRequest {
  action: RequestAction;
  /** Absent for service-level requests (ListBuckets). */
  bucket?: string;
  /** Absent for bucket-level requests. */
  key?: string;
  /** The client address (`aws:SourceIp`). */
  sourceIp?: string;
  /** The listing prefix (`s3:prefix`); list requests only ("" when the client sent none). */
  prefix?: string;
}

export interface StatementRef {
  /** `user` for direct permissions, `group:<name>` for inherited ones. */
  source: string;
  /** Position in its source's permission list. */
  index: number;
  /** The permission with templates expanded. */
  permission: Permission;
}

export type Decision =
  | { allowed: true; reason: "allow"; statement: StatementRef }
  | { allowed: true; reason: "bootstrap" }
  | { allowed: false; reason: "explicit_deny"; statement: StatementRef }
  | { allowed: false; reason: "no_match" | "unknown_principal" };

interface Glob {
  regex: RegExp | null;
  /** The text before the first `*` (all of it when there is none). */
  literal: string;
  hasStar: boolean;
  /** `literal*`: one trailing star, matches everything under `literal`. */
  prefixOnly: boolean;
}

type CompiledResource =
  | { kind: "all" }
  | { kind: "bucket"; bucket: Glob }
  | { kind: "keys"; bucket: Glob; key: Glob };

interface CompiledCondition {
  test(request: AuthzRequest, username: string): boolean;
}

export interface CompiledStatement {
  ref: StatementRef;
  deny: boolean;
  /** null = every action (`*`). */
  actions: ReadonlySet<RequestAction> | null;
  resources: CompiledResource[];
  conditions: CompiledCondition[];
}

function escapeRegex(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}

function compileGlob(pattern: string): Glob {
  const star = pattern.indexOf("*");
  const hasStar = star >= 0;
  const literal = hasStar ? pattern.slice(0, star) : pattern;
  return {
    regex: hasStar
      ? new RegExp("^" + pattern.split("*").map(escapeRegex).join("[\\s\\S]*") + "$")
      : null,
    literal,
    hasStar,
    prefixOnly: hasStar && star === pattern.length - 1,
  };
}

function globMatches(glob: Glob, text: string): boolean {
  return glob.regex ? glob.regex.test(text) : glob.literal === text;
}

/** Could some key starting with `prefix` match `glob`? (See the header.) */
function globReachesUnder(glob: Glob, prefix: string): boolean {
  if (!glob.hasStar) return glob.literal.startsWith(prefix);
  return glob.literal.startsWith(prefix) || prefix.startsWith(glob.literal);
}

/** Does `glob` match every key starting with `prefix`? */
function globCoversUnder(glob: Glob, prefix: string): boolean {
  return glob.prefixOnly && prefix.startsWith(glob.literal);
}

function compileResource(resource: string): CompiledResource {
  if (resource === "*") return { kind: "all" };
  const slash = resource.indexOf("/");
  if (slash < 0) return { kind: "bucket", bucket: compileGlob(resource) };
  return {
    kind: "keys",
    bucket: compileGlob(resource.slice(0, slash)),
    key: compileGlob(resource.slice(slash + 1)),
  };
}

function resourceMatches(
  resource: CompiledResource,
  request: AuthzRequest,
  deny: boolean,
): boolean {
  if (resource.kind === "all") return true;
  if (request.bucket === undefined || !globMatches(resource.bucket, request.bucket)) return false;
  if (resource.kind === "bucket") return true;
  if (request.key !== undefined) return globMatches(resource.key, request.key);
  // A bucket-level request against a key glob.
  if (request.action === "list") {
    const prefix = request.prefix ?? "";
    return deny ? globCoversUnder(resource.key, prefix) : globReachesUnder(resource.key, prefix);
  }
  return resource.key.prefixOnly && resource.key.literal === "";
}

/** Characters a template value keeps; everything else (`/`, `*`, `$`, …) is percent-encoded. */
const KEEP = /[A-Za-z0-9._~@+=,-]/;

export function encodeTemplateValue(value: string): string {
  let out = "";
  for (const char of value) {
    out += KEEP.test(char)
      ? char
      : [...new TextEncoder().encode(char)].map((b) =>
        "%" + b.toString(16).toUpperCase().padStart(2, "0")
      ).join("");
  }
  return out;
}

export interface TemplateValues {
  username: string;
  accessKeyId: string;
}

export function expandTemplates(text: string, values: TemplateValues): string {
  return text
    .replaceAll("${iam:username}", encodeTemplateValue(values.username))
    .replaceAll("${iam:access_key_id}", encodeTemplateValue(values.accessKeyId));
}

/** The permission with `${iam:…}` expanded in resources and string condition values. */
export function expandPermission(permission: Permission, values: TemplateValues): Permission {
  const expanded: Permission = {
    effect: permission.effect,
    actions: permission.actions,
    resources: permission.resources.map((r) => expandTemplates(r, values)),
  };
  if (permission.conditions) {
    const conditions: Conditions = {};
    for (const [operator, block] of Object.entries(permission.conditions)) {
      const keys: Record<string, string[]> = {};
      for (const [key, list] of Object.entries(block ?? {})) {
        keys[key] = list.map((value) => expandTemplates(value, values));
      }
      conditions[operator as keyof Conditions] = keys;
    }
    expanded.conditions = conditions;
  }
  return expanded;
}

function conditionValue(key: string, request: AuthzRequest, username: string): string | undefined {
  if (key === "s3:prefix") return request.prefix;
  if (key === "aws:username") return username;
  return undefined;
}

function compileConditions(conditions: Conditions | undefined): CompiledCondition[] {
  const out: CompiledCondition[] = [];
  for (const [operator, block] of Object.entries(conditions ?? {})) {
    for (const [key, values] of Object.entries(block ?? {})) {
      const negated = operator.includes("Not");
      if (operator === "IpAddress" || operator === "NotIpAddress") {
        // Values were validated when stored; an invalid one never matches rather than throwing.
        const matches = addressMatcher(values.filter(isIpOrCidr));
        out.push({
          // An address that is absent or not an IP matches no block.
          test: (request) =>
            (request.sourceIp !== undefined && matches(request.sourceIp)) !== negated,
        });
        continue;
      }
      const like = operator === "StringLike" || operator === "StringNotLike";
      const globs = values.map(compileGlob);
      out.push({
        test(request, username) {
          const value = conditionValue(key, request, username);
          if (value === undefined) return negated;
          const hit = like ? globs.some((g) => globMatches(g, value)) : values.includes(value);
          return hit !== negated;
        },
      });
    }
  }
  return out;
}

/** Compiles one (already expanded) permission. */
export function compileStatement(ref: StatementRef): CompiledStatement {
  const { permission } = ref;
  return {
    ref,
    deny: permission.effect === "Deny",
    actions: permission.actions.includes("*")
      ? null
      : new Set(permission.actions as RequestAction[]),
    resources: permission.resources.map(compileResource),
    conditions: compileConditions(permission.conditions),
  };
}

/** Decides `request` for a user whose compiled statements are `statements`. */
export function evaluate(
  statements: readonly CompiledStatement[],
  request: AuthzRequest,
  username: string,
): Decision {
  let allow: StatementRef | undefined;
  for (const statement of statements) {
    if (!statement.deny && allow !== undefined) continue;
    if (statement.actions !== null && !statement.actions.has(request.action)) continue;
    if (!statement.resources.some((r) => resourceMatches(r, request, statement.deny))) continue;
    if (!statement.conditions.every((c) => c.test(request, username))) continue;
    if (statement.deny) {
      return { allowed: false, reason: "explicit_deny", statement: statement.ref };
    }
    allow = statement.ref;
  }
  return allow
    ? { allowed: true, reason: "allow", statement: allow }
    : { allowed: false, reason: "no_match" };
}

/**
 * Where a listing of `bucket` may find keys the statements let the user do `action` on (`list`
 * or `read`): the literal prefixes of the Allow grants on that bucket ("" for a grant on the whole
 * bucket), and whether the per-entry filter is needed at all (a Deny or a condition on the
 * bucket, or a glob that is not a plain `prefix*`, means some entries inside those ranges may be
 * hidden).
 */
export function listRanges(
  statements: readonly CompiledStatement[],
  bucket: string,
  action: RequestAction = "list",
): { prefixes: string[]; filtered: boolean } {
  const prefixes = new Set<string>();
  let filtered = false;
  for (const statement of statements) {
    if (statement.actions !== null && !statement.actions.has(action)) continue;
    const onBucket = statement.resources.filter((r) =>
      r.kind === "all" || globMatches(r.bucket, bucket)
    );
    if (onBucket.length === 0) continue;
    if (statement.deny || statement.conditions.length > 0) filtered = true;
    if (statement.deny) continue;
    for (const resource of onBucket) {
      if (resource.kind !== "keys") {
        prefixes.add("");
      } else {
        prefixes.add(resource.key.literal);
        if (!resource.key.prefixOnly) filtered = true;
      }
    }
  }
  return { prefixes: outermost(prefixes), filtered };
}

/** The prefixes no other one of the set contains (a range inside another is read by it). */
function outermost(prefixes: Iterable<string>): string[] {
  const sorted = [...new Set(prefixes)].sort();
  return sorted.filter((p, i) => !sorted.slice(0, i).some((q) => p.startsWith(q)));
}

/** The key ranges inside both sets of ranges (each a set of key prefixes). */
export function intersectRanges(a: readonly string[], b: readonly string[]): string[] {
  const both: string[] = [];
  for (const p of a) {
    for (const q of b) {
      if (p.startsWith(q)) both.push(p);
      else if (q.startsWith(p)) both.push(q);
    }
  }
  return outermost(both);
}

/**
 * The longest prefix of `key` under which an unconditional Deny of one of `actions` hides every
 * key of `bucket` (`bucket/private/*`), or undefined: a listing that met a hidden key may jump
 * past the whole denied range instead of reading it key by key.
 */
export function deniedRange(
  statements: readonly CompiledStatement[],
  bucket: string,
  key: string,
  actions: readonly RequestAction[],
): string | undefined {
  let longest: string | undefined;
  for (const statement of statements) {
    if (!statement.deny || statement.conditions.length > 0) continue;
    if (statement.actions !== null && !actions.some((a) => statement.actions!.has(a))) continue;
    for (const resource of statement.resources) {
      if (resource.kind !== "all" && !globMatches(resource.bucket, bucket)) continue;
      // `*` and a whole-bucket resource deny every key: the range is the whole bucket.
      const literal = resource.kind === "keys" ? resource.key.literal : "";
      if (resource.kind === "keys" && !resource.key.prefixOnly) continue;
      if (!key.startsWith(literal)) continue;
      if (longest === undefined || literal.length > longest.length) longest = literal;
    }
  }
  return longest;
}
