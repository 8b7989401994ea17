/**
 * Group mapping rules (SPEC IAM records: `access.group_mapping_rules[]`): which groups an external
 * identity gets. A rule applies to its provider (or every provider when it names none) and
 * matches one claim (`match_field`, `email` by default):
 * - `email_domain`: the claim is an email address whose domain is `match_value` (no subdomains),
 * - `email`: the claim is exactly `match_value` (emails compare without case),
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
}

export const MATCH_TYPES = ["email_domain", "email", "equals"] as const;

function claimValues(claims: Record<string, unknown>, field: string): string[] {
  const value = claims[field];
  if (typeof value === "string") return [value];
  if (Array.isArray(value)) return value.filter((item): item is string => typeof item === "string");
  return [];
}

function matches(rule: MappingRule, claims: Record<string, unknown>): boolean {
  const values = claimValues(claims, rule.match_field);
  const wanted = rule.match_value.toLowerCase();
  switch (rule.match_type) {
    case "email_domain":
      return values.some((value) => {
        const at = value.lastIndexOf("@");
        return at > 0 && value.slice(at + 1).toLowerCase() === wanted.replace(/^@/, "");
      });
    case "email":
      return values.some((value) => value.toLowerCase() === wanted);
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
): string[] {
  const groups: string[] = [];
  const ordered = [...rules].sort((a, b) => a.priority - b.priority);
  for (const rule of ordered) {
    if (rule.provider !== null && rule.provider !== provider) continue;
    if (matches(rule, claims) && !groups.includes(rule.group)) groups.push(rule.group);
  }
  return groups;
}
