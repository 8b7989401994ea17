/**
 * Group mapping rules (SPEC IAM records: `access.group_mapping_rules[]`): which groups an external
 * identity gets. A rule applies to its provider (or every provider when it names none) and
 * matches one claim (`match_field`, `email` by default):
 * - `email_domain`: the claim is an email address whose domain is `match_value` (no subdomains),
 * - `email`: the claim is the address `match_value` (the domain compares without case; so does
 *   the local part, as most providers treat it),
 * Email rules read the claim as one strictly parsed address (`parseEmail`: exactly one `@`, a
 * dot-atom local part, a DNS domain): `eve@evil.example@corp.example` is no address at all. At
 * login (`checkVerifiedEmail`) an email rule on the `email` claim matches only when the token says
 * `email_verified: true`, unless the rule sets `require_verified_email: false`.
 * - `equals`: the claim, a string or one of a list of strings, equals `match_value` (e.g. a
 *   `groups` or `hd` claim).
 * An identity gets the union of its matching rules' groups; none matching means no account is
 * provisioned (SPEC Authentication 10). Rules are tried by `priority` (lower first) for a stable
 * preview order; the result does not depend on it.
 */
export interface MappingRule {
  /** Provider name; null = every provider. */
  provider: string | null;
  priority: number;
  match_type: string;
  match_field: string;
  match_value: string;
  group: string;
  /**
   * An email rule on the `email` claim matches only when the token says `email_verified: true`
   * (default true; false for a provider that never sends the claim).
   */
  require_verified_email: boolean;
}

export const MATCH_TYPES = ["email_domain", "email", "equals"] as const;

function claimValues(claims: Record<string, unknown>, field: string): string[] {
  const value = claims[field];
  if (typeof value === "string") return [value];
  if (Array.isArray(value)) return value.filter((item): item is string => typeof item === "string");
  return [];
}

export interface MappingOptions {
  /**
   * Apply the rules' `require_verified_email` (login and membership sync: the claims are a
   * token's). Off for the preview, whose claims are made up (default: off).
   */
  checkVerifiedEmail?: boolean;
}

const LOCAL_PART = /^[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+(\.[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+)*$/;
const DOMAIN_LABEL = /^[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?$/;

/**
 * An email address parsed strictly: exactly one `@`, a dot-atom local part (RFC 5322, no quoted
 * forms) of at most 64 characters, and a domain of at least two DNS labels (at most 253
 * characters). Answers the local part and the lower-cased domain, or null.
 */
export function parseEmail(value: string): { local: string; domain: string } | null {
  const parts = value.split("@");
  if (parts.length !== 2) return null;
  const [local, domain] = parts;
  if (local.length === 0 || local.length > 64 || !LOCAL_PART.test(local)) return null;
  const labels = domain.split(".");
  if (domain.length > 253 || labels.length < 2 || !labels.every((l) => DOMAIN_LABEL.test(l))) {
    return null;
  }
  return { local, domain: domain.toLowerCase() };
}

function sameAddress(a: string, b: string): boolean {
  const left = parseEmail(a);
  const right = parseEmail(b);
  return left !== null && right !== null && left.domain === right.domain &&
    left.local.toLowerCase() === right.local.toLowerCase();
}

function matches(
  rule: MappingRule,
  claims: Record<string, unknown>,
  options: MappingOptions,
): boolean {
  const values = claimValues(claims, rule.match_field);
  const wanted = rule.match_value.toLowerCase();
  const emailRule = rule.match_type === "email_domain" || rule.match_type === "email";
  if (
    emailRule && options.checkVerifiedEmail && rule.require_verified_email !== false &&
    rule.match_field === "email" && claims.email_verified !== true
  ) {
    return false;
  }
  switch (rule.match_type) {
    case "email_domain":
      return values.some((value) => parseEmail(value)?.domain === wanted.replace(/^@/, ""));
    case "email":
      return values.some((value) => sameAddress(value, rule.match_value));
    case "equals":
      return values.includes(rule.match_value);
    default:
      return false;
  }
}

/** The group names the identity's claims map to through `rules`, for `provider`. */
export function mappedGroups(
  rules: MappingRule[],
  provider: string,
  claims: Record<string, unknown>,
  options: MappingOptions = {},
): string[] {
  const groups: string[] = [];
  const ordered = [...rules].sort((a, b) => a.priority - b.priority);
  for (const rule of ordered) {
    if (rule.provider !== null && rule.provider !== provider) continue;
    if (matches(rule, claims, options) && !groups.includes(rule.group)) groups.push(rule.group);
  }
  return groups;
}
