/**
 * What the parts of a backup hold (docs/BACKUP.md), and the one checked shape an import starts
 * from, whether it came from a zip or from the legacy JSON body of older releases:
 *
 * - `config.yaml`: the operator's config document as svc persists it (secrets and `${env:…}`
 *   placeholders as written). Restored by the operator, never applied by an import.
 * - `iam.json`: users (name, access key id, enabled, auth source, group names, permissions) and
 *   groups (name, description, permissions); no secret, so it can be read and diffed safely.
 * - `secrets.json`: `{"iam_user_secrets": {<user name>: <secret access key>}}`.
 *
 * Optional content a later build may add (auth providers, mapping rules, external identities) is
 * reported, never silently dropped: `external_identities` are counted as skipped, the other keys
 * and unknown parts come back as warnings and `ignored_parts`.
 */
import { stringify } from "yaml";
import {
  type AuthSource,
  IamError,
  type IamSnapshotData,
  type Permission,
  validateAccessKeyId,
  validateGroupNames,
  validateName,
  validatePermissions,
  validateSecret,
} from "../iam/mod.ts";
import { isPlainObject } from "../lib/mod.ts";
import type { BackupPart } from "./backup-archive.ts";

export const CONFIG_PART = "config.yaml";
export const IAM_PART = "iam.json";
export const SECRETS_PART = "secrets.json";
/** Parts this build restores or knowingly keeps aside. */
export const KNOWN_PARTS: readonly string[] = [CONFIG_PART, IAM_PART, SECRETS_PART];
/** Keys of iam.json a later build may write that this one cannot restore. */
const UNRESTORED_IAM_KEYS = ["auth_providers", "group_mapping_rules"];

export interface ImportUser {
  name: string;
  access_key_id: string;
  secret_access_key: string;
  enabled: boolean;
  auth_source: AuthSource;
  groups: string[];
  permissions: Permission[];
}

export interface ImportGroup {
  name: string;
  description: string;
  permissions: Permission[];
}

/** A validated import: every record checked, names and keys unique within it. */
export interface IamImport {
  users: ImportUser[];
  groups: ImportGroup[];
  /** External identities in the backup; this build has no table for them (all skipped). */
  externalIdentities: number;
  warnings: string[];
}

const encode = (value: unknown) => new TextEncoder().encode(value as string);
const json = (value: unknown) => encode(JSON.stringify(value, null, 2) + "\n");

/** The parts of a backup of this instance. */
export function backupParts(
  iam: IamSnapshotData,
  configDocument: Record<string, unknown>,
): BackupPart[] {
  const users = iam.users.map((user) => ({
    name: user.name,
    access_key_id: user.access_key_id,
    enabled: user.enabled,
    auth_source: user.auth_source,
    groups: user.groups,
    permissions: user.permissions,
  }));
  const groups = iam.groups.map((group) => ({
    name: group.name,
    description: group.description,
    permissions: group.permissions,
  }));
  const secrets = Object.fromEntries(iam.users.map((u) => [u.name, u.secret_access_key]));
  return [
    { name: CONFIG_PART, bytes: encode(stringify(configDocument, { lineWidth: 0 })) },
    { name: IAM_PART, bytes: json({ users, groups }) },
    { name: SECRETS_PART, bytes: json({ iam_user_secrets: secrets }) },
  ];
}

function invalid(message: string): never {
  throw new IamError("invalid", message);
}

function parseJsonPart(name: string, bytes: Uint8Array | undefined): Record<string, unknown> {
  if (bytes === undefined) invalid(`The backup has no ${name} part`);
  let value: unknown;
  try {
    value = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(bytes));
  } catch (err) {
    invalid(`Part ${name} is not valid JSON: ${(err as Error).message}`);
  }
  if (!isPlainObject(value)) invalid(`Part ${name} must be a JSON object`);
  return value;
}

function list(value: unknown, what: string): unknown[] {
  if (value === undefined || value === null) return [];
  if (!Array.isArray(value)) invalid(`${what} must be a list`);
  return value;
}

function record(value: unknown, what: string, index: number): Record<string, unknown> {
  if (!isPlainObject(value)) invalid(`${what}[${index}] must be an object`);
  return value;
}

function group(value: unknown, index: number): ImportGroup & { members: string[] } {
  const raw = record(value, "groups", index);
  const name = validateName(raw.name, "Group");
  const description = raw.description ?? "";
  if (typeof description !== "string" || description.length > 1024) {
    invalid(`Group "${name}": description must be a string of at most 1024 characters`);
  }
  return {
    name,
    description,
    permissions: validatePermissions(raw.permissions ?? [], `group "${name}" permissions`),
    // Legacy bodies may list memberships on the group instead of the user.
    members: validateGroupNames(raw.members ?? []),
  };
}

function user(value: unknown, index: number, secretOf: (name: string) => unknown): ImportUser {
  const raw = record(value, "users", index);
  const name = validateName(raw.name, "User");
  const authSource = raw.auth_source ?? "local";
  if (authSource !== "local" && authSource !== "external") {
    invalid(`User "${name}": auth_source must be "local" or "external"`);
  }
  const enabled = raw.enabled ?? true;
  if (typeof enabled !== "boolean") invalid(`User "${name}": enabled must be true or false`);
  const secret = secretOf(name);
  if (secret === undefined) invalid(`User "${name}" has no secret access key in the backup`);
  try {
    validateSecret(secret);
  } catch {
    invalid(`User "${name}": the secret access key must be 8-128 printable characters`);
  }
  return {
    name,
    access_key_id: validateAccessKeyId(raw.access_key_id),
    secret_access_key: secret as string,
    enabled,
    auth_source: authSource,
    groups: validateGroupNames(raw.groups ?? []),
    permissions: validatePermissions(raw.permissions ?? [], `user "${name}" permissions`),
  };
}

/** Checks records, uniqueness inside the backup, and merges memberships listed on groups. */
function checked(
  rawUsers: unknown[],
  rawGroups: unknown[],
  secretOf: (name: string) => unknown,
  extra: Record<string, unknown>,
): IamImport {
  const groups = rawGroups.map(group);
  const users = rawUsers.map((raw, i) => user(raw, i, secretOf));
  const unique = (values: string[], what: string) => {
    const seen = new Set<string>();
    for (const value of values) {
      if (seen.has(value)) invalid(`The backup lists ${what} "${value}" twice`);
      seen.add(value);
    }
  };
  unique(groups.map((g) => g.name), "group");
  unique(users.map((u) => u.name), "user");
  unique(users.map((u) => u.access_key_id), "access key id");
  const byName = new Map(users.map((u) => [u.name, u]));
  for (const g of groups) {
    for (const member of g.members) {
      const target = byName.get(member);
      if (!target) invalid(`Group "${g.name}" lists member "${member}", who is not in the backup`);
      if (!target.groups.includes(g.name)) target.groups.push(g.name);
    }
  }
  const warnings: string[] = [];
  for (const key of UNRESTORED_IAM_KEYS) {
    const entries = list(extra[key], key);
    if (entries.length > 0) {
      warnings.push(`${entries.length} ${key} in the backup were not restored (not in this build)`);
    }
  }
  return {
    users,
    groups: groups.map(({ members: _members, ...g }) => g),
    externalIdentities: list(extra.external_identities, "external_identities").length,
    warnings,
  };
}

/** The import a verified zip describes, and the parts it holds that this build ignores. */
export function importFromParts(
  parts: Map<string, Uint8Array>,
): { iam: IamImport; ignoredParts: string[] } {
  const iam = parseJsonPart(IAM_PART, parts.get(IAM_PART));
  const secrets = parseJsonPart(SECRETS_PART, parts.get(SECRETS_PART));
  const userSecrets = secrets.iam_user_secrets ?? {};
  if (!isPlainObject(userSecrets)) invalid(`${SECRETS_PART}: iam_user_secrets must be an object`);
  const imported = checked(
    list(iam.users, "users"),
    list(iam.groups, "groups"),
    (name) => Object.hasOwn(userSecrets, name) ? userSecrets[name] : undefined,
    iam,
  );
  const ignoredParts = [...parts.keys()].filter((name) => !KNOWN_PARTS.includes(name));
  return { iam: imported, ignoredParts };
}

/** The legacy JSON-only import of releases before zips: `{users, groups}`, secrets inline. */
export function importFromLegacyJson(body: Record<string, unknown>): IamImport {
  if (!Array.isArray(body.users) && !Array.isArray(body.groups)) {
    invalid('A JSON backup must hold "users" and/or "groups" lists');
  }
  const users = list(body.users, "users");
  const secrets = new Map<string, unknown>();
  users.forEach((raw, i) => {
    const entry = record(raw, "users", i);
    if (typeof entry.name === "string") secrets.set(entry.name, entry.secret_access_key);
  });
  return checked(users, list(body.groups, "groups"), (name) => secrets.get(name), body);
}
