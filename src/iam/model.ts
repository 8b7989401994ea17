/**
 * The IAM model: users, groups and permissions, and the one validator every way in uses (admin
 * API, and later the declarative reconcile and backup import), so a record the store holds is
 * always one the index can compile.
 *
 * A permission is `{effect, actions, resources, conditions?}`:
 * - `effect`: `Allow` (default) or `Deny`.
 * - `actions`: a non-empty subset of `*`, `read`, `list`, `write`, `delete`, `admin`.
 * - `resources`: `*`, `bucket` (the bucket and every key in it), or `bucket/keyglob` where `*`
 *   matches any run of characters, `/` included (`bucket/home/*`). Globs are allowed in the bucket
 *   part too (`logs-*`).
 * - `conditions`: `{Operator: {key: value | [values]}}`; every operator and key must hold (AND),
 *   any value of one key may match (OR; for the `Not` operators: none may match). Operators:
 *   `StringEquals`, `StringNotEquals`, `StringLike`, `StringNotLike` (glob `*`) on `s3:prefix`
 *   or `aws:username`; `IpAddress`, `NotIpAddress` (IPs or CIDR blocks) on `aws:SourceIp`.
 * `resources` and string condition values may hold `${iam:username}` / `${iam:access_key_id}`
 * (expanded per user by the index); any other `${…}` is refused.
 */
import { isPlainObject as isObject } from "../lib/mod.ts";
import { isIpOrCidr, unknownTemplateVariables } from "../config/mod.ts";

export const IAM_ACTIONS = ["*", "read", "list", "write", "delete", "admin"] as const;
export type IamAction = typeof IAM_ACTIONS[number];
/** The concrete actions a request resolves to (everything but `*`). */
export type RequestAction = Exclude<IamAction, "*">;

export const STRING_OPERATORS = [
  "StringEquals",
  "StringNotEquals",
  "StringLike",
  "StringNotLike",
] as const;
export const IP_OPERATORS = ["IpAddress", "NotIpAddress"] as const;
export type ConditionOperator =
  | typeof STRING_OPERATORS[number]
  | typeof IP_OPERATORS[number];
export const STRING_CONDITION_KEYS = ["s3:prefix", "aws:username"] as const;
export const IP_CONDITION_KEYS = ["aws:SourceIp"] as const;

export type Conditions = Partial<Record<ConditionOperator, Record<string, string[]>>>;

export interface Permission {
  effect: "Allow" | "Deny";
  actions: IamAction[];
  resources: string[];
  conditions?: Conditions;
}

export type AuthSource = "local" | "external";

/** A user as lists show it: never the secret. */
export interface UserRecord {
  id: string;
  name: string;
  access_key_id: string;
  has_secret: boolean;
  enabled: boolean;
  auth_source: AuthSource;
  /** Group names, sorted. */
  groups: string[];
  permissions: Permission[];
  created_at: number;
  updated_at: number;
}

/** What create, rotate and clone return: the one time the secret is shown. */
export interface UserWithSecret extends UserRecord {
  secret_access_key: string;
}

export interface GroupRecord {
  id: string;
  name: string;
  description: string;
  permissions: Permission[];
  /** Member user names, sorted. */
  members: string[];
  created_at: number;
  updated_at: number;
}

/**
 * Everything the index needs, read in one transaction: the store (db/iam-store.ts) produces it,
 * the index and backups consume it.
 */
export interface IamSnapshotData {
  version: number;
  users: UserWithSecret[];
  groups: GroupRecord[];
}

/** Why an IAM change was refused; the admin routes map `kind` to a status. */
export class IamError extends Error {
  readonly kind: "invalid" | "not_found" | "conflict";
  constructor(kind: IamError["kind"], message: string) {
    super(message);
    this.name = "IamError";
    this.kind = kind;
  }
}

const NAME = /^[A-Za-z0-9_+=,.@-]{1,64}$/;
const ACCESS_KEY_ID = /^[A-Za-z0-9_+=,.@-]{3,128}$/;
const SECRET = /^[\x21-\x7e]{8,128}$/;

function invalid(message: string): never {
  throw new IamError("invalid", message);
}

function quote(value: unknown): string {
  return typeof value === "string" ? `"${value}"` : JSON.stringify(value) ?? String(value);
}

/** A user or group name: 1-64 of `A-Z a-z 0-9 _ + = , . @ -`; `$…` is reserved. */
export function validateName(value: unknown, what: string): string {
  if (typeof value !== "string") invalid(`${what} name must be a string, got ${quote(value)}`);
  if (value.startsWith("$")) {
    invalid(`${what} name ${quote(value)}: names starting with "$" are reserved`);
  }
  if (!NAME.test(value)) {
    invalid(
      `${what} name ${quote(value)} must be 1-64 characters of letters, digits and _ + = , . @ -`,
    );
  }
  return value;
}

export function validateAccessKeyId(value: unknown): string {
  if (typeof value !== "string" || !ACCESS_KEY_ID.test(value)) {
    invalid(`Access key id ${quote(value)} must be 3-128 letters, digits or _ + = , . @ -`);
  }
  return value;
}

/**
 * The one rule on the bootstrap access key id (`access.access_key_id`): no IAM user may be given
 * it. The IAM index answers for a key before the bootstrap pair does, so a user holding that id
 * would take the bootstrap key over (its secret refused, the user's accepted). Every path that
 * writes users applies it with the running bootstrap key id: `POST /users`, a backup import (zip
 * and legacy JSON), a declarative apply and the startup reconcile, an adopted config-sync copy.
 * Only `POST /migrate` hands the bootstrap pair to a user, on purpose. Throws
 * IamError("conflict") naming `where` (the user) and how to proceed.
 */
export function assertNotBootstrapKey(
  user: { name: string; access_key_id: string },
  bootstrapKeyId: string | null | undefined,
  where = `User "${user.name}"`,
): void {
  if (!bootstrapKeyId || user.access_key_id !== bootstrapKeyId) return;
  throw new IamError(
    "conflict",
    `${where}: access key "${user.access_key_id}" is the bootstrap key (access.access_key_id); ` +
      "no IAM user may hold it (POST /migrate turns the bootstrap pair into an IAM user, " +
      "otherwise give the user another key)",
  );
}

export function validateSecret(value: unknown): string {
  if (typeof value !== "string" || !SECRET.test(value)) {
    invalid("Secret access key must be 8-128 printable characters without spaces");
  }
  return value;
}

function templatedString(value: unknown, where: string): string {
  if (typeof value !== "string" || value === "") {
    invalid(`${where} must be a non-empty string, got ${quote(value)}`);
  }
  const unknown = unknownTemplateVariables(value);
  if (unknown.length > 0) {
    invalid(
      `${where} ${quote(value)} uses unknown variable ${
        unknown.map((n) => `\${${n}}`).join(", ")
      } (only \${iam:username} and \${iam:access_key_id} are allowed)`,
    );
  }
  return value;
}

function validateResource(value: unknown, where: string): string {
  const text = templatedString(value, where);
  const slash = text.indexOf("/");
  const bucket = slash < 0 ? text : text.slice(0, slash);
  if (bucket === "") invalid(`${where} ${quote(text)} has an empty bucket part`);
  if (slash >= 0 && text.slice(slash + 1) === "") {
    invalid(`${where} ${quote(text)} ends with "/"; write "${bucket}" or "${bucket}/*"`);
  }
  return text;
}

function stringList(value: unknown, where: string): unknown[] {
  const list = typeof value === "string" ? [value] : value;
  if (!Array.isArray(list) || list.length === 0) {
    invalid(`${where} must be a string or a non-empty list of strings, got ${quote(value)}`);
  }
  return list;
}

function validateConditions(value: unknown, where: string): Conditions {
  if (!isObject(value)) invalid(`${where} must be an object, got ${quote(value)}`);
  const out: Conditions = {};
  for (const [operator, block] of Object.entries(value)) {
    const isString = (STRING_OPERATORS as readonly string[]).includes(operator);
    const isIp = (IP_OPERATORS as readonly string[]).includes(operator);
    if (!isString && !isIp) {
      invalid(
        `${where}: unknown condition operator ${quote(operator)} (expected one of ${
          [...STRING_OPERATORS, ...IP_OPERATORS].join(", ")
        })`,
      );
    }
    if (!isObject(block) || Object.keys(block).length === 0) {
      invalid(`${where}.${operator} must be a non-empty object of condition keys`);
    }
    const keys: readonly string[] = isIp ? IP_CONDITION_KEYS : STRING_CONDITION_KEYS;
    const entries: Record<string, string[]> = {};
    for (const [key, raw] of Object.entries(block)) {
      if (!keys.includes(key)) {
        invalid(
          `${where}.${operator}: condition key ${quote(key)} is not supported (expected ${
            keys.join(" or ")
          })`,
        );
      }
      entries[key] = stringList(raw, `${where}.${operator}.${key}`).map((item) => {
        if (!isIp) return templatedString(item, `${where}.${operator}.${key}`);
        if (typeof item !== "string" || !isIpOrCidr(item)) {
          invalid(`${where}.${operator}.${key}: ${quote(item)} is not an IP address or CIDR block`);
        }
        return item;
      });
    }
    out[operator as ConditionOperator] = entries;
  }
  return out;
}

/** Validates one permission (defaults applied); throws IamError("invalid") naming the field. */
export function validatePermission(value: unknown, where = "permission"): Permission {
  if (!isObject(value)) invalid(`${where} must be an object, got ${quote(value)}`);
  for (const key of Object.keys(value)) {
    if (!["effect", "actions", "resources", "conditions"].includes(key)) {
      invalid(`${where}: unknown field ${quote(key)}`);
    }
  }
  const effect = value.effect ?? "Allow";
  if (effect !== "Allow" && effect !== "Deny") {
    invalid(`${where}.effect must be "Allow" or "Deny", got ${quote(effect)}`);
  }
  if (!Array.isArray(value.actions) || value.actions.length === 0) {
    invalid(`${where}.actions must be a non-empty list`);
  }
  const actions = value.actions.map((action) => {
    if (!(IAM_ACTIONS as readonly unknown[]).includes(action)) {
      invalid(
        `${where}.actions: unknown action ${quote(action)} (expected ${IAM_ACTIONS.join(", ")})`,
      );
    }
    return action as IamAction;
  });
  if (!Array.isArray(value.resources) || value.resources.length === 0) {
    invalid(`${where}.resources must be a non-empty list`);
  }
  const resources = value.resources.map((r, i) => validateResource(r, `${where}.resources.${i}`));
  const permission: Permission = { effect, actions: [...new Set(actions)], resources };
  if (value.conditions !== undefined && value.conditions !== null) {
    const conditions = validateConditions(value.conditions, `${where}.conditions`);
    if (Object.keys(conditions).length > 0) permission.conditions = conditions;
  }
  return permission;
}

export function validatePermissions(value: unknown, where = "permissions"): Permission[] {
  if (value === undefined || value === null) return [];
  if (!Array.isArray(value)) invalid(`${where} must be a list, got ${quote(value)}`);
  return value.map((p, i) => validatePermission(p, `${where}.${i}`));
}

/** A list of group names (duplicates dropped). */
export function validateGroupNames(value: unknown): string[] {
  if (value === undefined || value === null) return [];
  if (!Array.isArray(value)) invalid(`groups must be a list of group names, got ${quote(value)}`);
  return [...new Set(value.map((name) => validateName(name, "Group")))];
}
