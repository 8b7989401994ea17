/**
 * Declarative IAM input: the `access` lists of a YAML document (`iam_users`, `iam_groups`,
 * `auth_providers`, `group_mapping_rules`, and — only in a full export re-applied through
 * `/config/declarative-iam-apply` — per-user `auth_source` and `external_identities`) checked and
 * normalised into records the reconciler can compare with the database. Every check runs here,
 * before the reconciler opens a transaction, so one error means zero change (SPEC "Declarative
 * IAM" 3). Messages name the record (`access.iam_users.2`) and the value.
 *
 * Normal forms (what the database stores, so "equal" means equal): permissions through
 * `validatePermission` (effect filled in, actions deduplicated, condition values as lists), a
 * user's groups sorted and deduplicated, optional strings as `""` (group description) or `null`
 * (provider display name), rule defaults filled in.
 */
import { type MappingRule, MATCH_TYPES } from "./mapping-rules.ts";
import { isPlainObject } from "../lib/mod.ts";
import {
  assertNotBootstrapKey,
  type AuthSource,
  IamError,
  type Permission,
  validateAccessKeyId,
  validateName,
  validatePermissions,
  validateSecret,
} from "./model.ts";

export interface DesiredUser {
  name: string;
  access_key_id: string;
  /** `""` = keep the stored secret (a redacted export); refused for a new user. */
  secret_access_key: string;
  enabled: boolean;
  /** Sorted, unique. */
  groups: string[];
  permissions: Permission[];
  /** Absent = keep the stored one (`local` for a new user). */
  auth_source?: AuthSource;
}

export interface DesiredGroup {
  name: string;
  description: string;
  permissions: Permission[];
}

export interface DesiredProvider {
  name: string;
  provider_type: "oidc";
  enabled: boolean;
  priority: number;
  display_name: string | null;
  client_id: string;
  /** `null` = keep the stored secret (a redacted export) or none for a new provider. */
  client_secret: string | null;
  issuer_url: string;
  scopes: string;
}

/** A group mapping rule as YAML and the store hold it (iam/mapping-rules.ts evaluates it). */
export type DesiredRule = MappingRule;

export interface DesiredIdentity {
  user: string;
  provider: string;
  subject: string;
  email: string | null;
  claims: unknown;
}

export interface DesiredIam {
  users: DesiredUser[];
  groups: DesiredGroup[];
  providers: DesiredProvider[];
  rules: DesiredRule[];
  /** Absent = leave every binding untouched (SPEC: bindings are never deleted by the reconciler). */
  identities?: DesiredIdentity[];
}

export const DEFAULT_SCOPES = "openid email profile";

const USER_FIELDS = [
  "name",
  "access_key_id",
  "secret_access_key",
  "enabled",
  "groups",
  "permissions",
  "auth_source",
];
const GROUP_FIELDS = ["name", "description", "permissions"];
/** A provider's settings: what a reconcile compares (reconcile.ts) besides its name. */
export const PROVIDER_SETTINGS = [
  "provider_type",
  "enabled",
  "priority",
  "display_name",
  "client_id",
  "client_secret",
  "issuer_url",
  "scopes",
] as const;
const PROVIDER_FIELDS = ["name", ...PROVIDER_SETTINGS];
const RULE_FIELDS = ["provider", "priority", "match_type", "match_field", "match_value", "group"];
const IDENTITY_FIELDS = ["user", "provider", "subject", "email", "claims"];

function invalid(message: string): never {
  throw new IamError("invalid", message);
}

function quote(value: unknown): string {
  return JSON.stringify(value) ?? String(value);
}

/** Runs a model validator, prefixing its message with where the value sits. */
function at<T>(where: string, fn: () => T): T {
  try {
    return fn();
  } catch (err) {
    if (err instanceof IamError) invalid(`${where}: ${err.message}`);
    throw err;
  }
}

function records(value: unknown, where: string, fields: string[]): Record<string, unknown>[] {
  if (value === undefined || value === null) return [];
  if (!Array.isArray(value)) invalid(`${where} must be a list, got ${quote(value)}`);
  return value.map((item, index) => {
    if (!isPlainObject(item)) invalid(`${where}.${index} must be a mapping, got ${quote(item)}`);
    const unknown = Object.keys(item).find((key) => !fields.includes(key));
    if (unknown !== undefined) {
      invalid(`${where}.${index}: unknown field "${unknown}" (expected ${fields.join(", ")})`);
    }
    return item;
  });
}

function optionalBool(value: unknown, where: string, fallback: boolean): boolean {
  if (value === undefined || value === null) return fallback;
  if (typeof value !== "boolean") invalid(`${where} must be true or false, got ${quote(value)}`);
  return value;
}

function optionalInt(value: unknown, where: string, fallback: number): number {
  if (value === undefined || value === null) return fallback;
  if (!Number.isSafeInteger(value)) invalid(`${where} must be an integer, got ${quote(value)}`);
  return value as number;
}

function requiredString(value: unknown, where: string): string {
  if (typeof value !== "string" || value.trim() === "") {
    invalid(`${where} must be a non-empty string, got ${quote(value)}`);
  }
  return value;
}

function optionalString(value: unknown, where: string): string | null {
  if (value === undefined || value === null) return null;
  if (typeof value !== "string") invalid(`${where} must be a string, got ${quote(value)}`);
  return value;
}

/** Reports the first repeat of `key` among `items`. */
function assertUnique<T>(items: T[], key: (item: T) => string, what: string, where: string) {
  const seen = new Map<string, number>();
  items.forEach((item, index) => {
    const value = key(item);
    const first = seen.get(value);
    if (first !== undefined) {
      invalid(`${where}.${index}: duplicate ${what} "${value}" (also at ${where}.${first})`);
    }
    seen.set(value, index);
  });
}

function parseUser(raw: Record<string, unknown>, where: string): DesiredUser {
  const name = at(where, () => validateName(raw.name, "User"));
  const accessKeyId = at(where, () => validateAccessKeyId(raw.access_key_id));
  const secret = raw.secret_access_key ?? "";
  if (secret !== "") at(`${where} (user "${name}")`, () => validateSecret(secret));
  const groups = raw.groups ?? [];
  if (!Array.isArray(groups)) invalid(`${where}.groups must be a list of group names`);
  const groupNames = groups.map((g, i) =>
    at(`${where}.groups.${i}`, () => validateName(g, "Group"))
  );
  const user: DesiredUser = {
    name,
    access_key_id: accessKeyId,
    secret_access_key: secret as string,
    enabled: optionalBool(raw.enabled, `${where}.enabled`, true),
    groups: [...new Set(groupNames)].sort(),
    permissions: at(where, () => validatePermissions(raw.permissions, "permissions")),
  };
  if (raw.auth_source !== undefined && raw.auth_source !== null) {
    if (raw.auth_source !== "local" && raw.auth_source !== "external") {
      invalid(`${where}.auth_source must be "local" or "external", got ${quote(raw.auth_source)}`);
    }
    user.auth_source = raw.auth_source;
  }
  return user;
}

function parseGroup(raw: Record<string, unknown>, where: string): DesiredGroup {
  const description = optionalString(raw.description, `${where}.description`) ?? "";
  if (description.length > 1024) invalid(`${where}.description is longer than 1024 characters`);
  return {
    name: at(where, () => validateName(raw.name, "Group")),
    description,
    permissions: at(where, () => validatePermissions(raw.permissions, "permissions")),
  };
}

export function parseProvider(raw: Record<string, unknown>, where: string): DesiredProvider {
  const type = raw.provider_type ?? "oidc";
  if (type !== "oidc") invalid(`${where}.provider_type must be "oidc", got ${quote(type)}`);
  const issuer = requiredString(raw.issuer_url, `${where}.issuer_url`);
  if (!/^https?:\/\//.test(issuer)) {
    invalid(`${where}.issuer_url must be an http(s) URL, got ${quote(issuer)}`);
  }
  return {
    name: at(where, () => validateName(raw.name, "Provider")),
    provider_type: "oidc",
    enabled: optionalBool(raw.enabled, `${where}.enabled`, true),
    priority: optionalInt(raw.priority, `${where}.priority`, 0),
    display_name: optionalString(raw.display_name, `${where}.display_name`),
    client_id: requiredString(raw.client_id, `${where}.client_id`),
    client_secret: optionalString(raw.client_secret, `${where}.client_secret`),
    issuer_url: issuer,
    scopes: optionalString(raw.scopes, `${where}.scopes`) ?? DEFAULT_SCOPES,
  };
}

export function parseRule(raw: Record<string, unknown>, where: string): DesiredRule {
  const matchType = optionalString(raw.match_type, `${where}.match_type`) ?? "email_domain";
  if (!(MATCH_TYPES as readonly string[]).includes(matchType)) {
    invalid(
      `${where}.match_type must be one of ${MATCH_TYPES.join(", ")}, got ${quote(matchType)}`,
    );
  }
  return {
    provider: raw.provider === undefined || raw.provider === null
      ? null
      : requiredString(raw.provider, `${where}.provider`),
    priority: optionalInt(raw.priority, `${where}.priority`, 0),
    match_type: matchType,
    match_field: optionalString(raw.match_field, `${where}.match_field`) ?? "email",
    match_value: requiredString(raw.match_value, `${where}.match_value`),
    group: requiredString(raw.group, `${where}.group`),
  };
}

function parseIdentity(raw: Record<string, unknown>, where: string): DesiredIdentity {
  return {
    user: requiredString(raw.user, `${where}.user`),
    provider: requiredString(raw.provider, `${where}.provider`),
    subject: requiredString(raw.subject, `${where}.subject`),
    email: optionalString(raw.email, `${where}.email`),
    claims: raw.claims ?? {},
  };
}

/**
 * The desired IAM of an `access` mapping, with every YAML-only check (SPEC "Declarative IAM" 3
 * except the one that needs the database: a key of a to-be-deleted user, in reconcile.ts), and
 * the rule every user-writing path shares: no user holds `bootstrapKeyId` (the running
 * `access.access_key_id`; a fragment applied alone does not carry it). Throws IamError.
 */
export function desiredIam(
  access: Record<string, unknown>,
  bootstrapKeyId?: string | null,
): DesiredIam {
  const base = "access";
  const groups = records(access.iam_groups, `${base}.iam_groups`, GROUP_FIELDS)
    .map((raw, i) => parseGroup(raw, `${base}.iam_groups.${i}`));
  const users = records(access.iam_users, `${base}.iam_users`, USER_FIELDS)
    .map((raw, i) => parseUser(raw, `${base}.iam_users.${i}`));
  const providers = records(access.auth_providers, `${base}.auth_providers`, PROVIDER_FIELDS)
    .map((raw, i) => parseProvider(raw, `${base}.auth_providers.${i}`));
  const rules = records(access.group_mapping_rules, `${base}.group_mapping_rules`, RULE_FIELDS)
    .map((raw, i) => parseRule(raw, `${base}.group_mapping_rules.${i}`));
  assertUnique(groups, (g) => g.name, "group name", `${base}.iam_groups`);
  assertUnique(users, (u) => u.name, "user name", `${base}.iam_users`);
  assertUnique(users, (u) => u.access_key_id, "access key", `${base}.iam_users`);
  assertUnique(providers, (p) => p.name, "provider name", `${base}.auth_providers`);

  const groupNames = new Set(groups.map((g) => g.name));
  const providerNames = new Set(providers.map((p) => p.name));
  users.forEach((user, i) => {
    assertNotBootstrapKey(user, bootstrapKeyId, `${base}.iam_users.${i} (user "${user.name}")`);
    for (const group of user.groups) {
      if (!groupNames.has(group)) {
        invalid(`${base}.iam_users.${i}: user "${user.name}" names unknown group "${group}"`);
      }
    }
  });
  rules.forEach((rule, i) => {
    const where = `${base}.group_mapping_rules.${i}`;
    if (rule.provider !== null && !providerNames.has(rule.provider)) {
      invalid(`${where}: mapping rule names unknown provider "${rule.provider}"`);
    }
    if (!groupNames.has(rule.group)) {
      invalid(`${where}: mapping rule names unknown group "${rule.group}"`);
    }
  });

  const desired: DesiredIam = { users, groups, providers, rules };
  if (access.external_identities !== undefined && access.external_identities !== null) {
    const where = `${base}.external_identities`;
    const identities = records(access.external_identities, where, IDENTITY_FIELDS)
      .map((raw, i) => parseIdentity(raw, `${where}.${i}`));
    const userNames = new Set(users.map((u) => u.name));
    identities.forEach((identity, i) => {
      if (!userNames.has(identity.user)) {
        invalid(`${where}.${i}: external identity names unknown user "${identity.user}"`);
      }
      if (!providerNames.has(identity.provider)) {
        invalid(`${where}.${i}: external identity names unknown provider "${identity.provider}"`);
      }
    });
    assertUnique(
      identities,
      (id) => `${id.provider}/${id.subject}`,
      "provider/subject binding",
      where,
    );
    desired.identities = identities;
  }
  return desired;
}

/** True when the YAML holds no users and no groups (the gui → declarative gate). */
export function hasNoUsersOrGroups(access: Record<string, unknown>): boolean {
  const empty = (list: unknown) => !Array.isArray(list) || list.length === 0;
  return empty(access.iam_users) && empty(access.iam_groups);
}
