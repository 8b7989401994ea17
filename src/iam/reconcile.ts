/**
 * The declarative IAM reconcile plan (SPEC "Declarative IAM" 2-3, 5-6): the database state
 * compared with the desired IAM by NAME per entity type. Equal = nothing; differing = an update
 * that keeps the row id (and so external identity bindings and memberships by id); only in YAML =
 * create; only in the database = delete (its memberships, bindings and, for a provider, its
 * bindings go with it). Mapping rules are one list: kept when equal, else wiped and rebuilt.
 *
 * Pure: the store (src/db/iam-reconciler.ts) reads the state and writes the plan in one
 * transaction. `planReconcile` throws IamError("invalid") for the one check that needs the
 * database: a YAML access key that belongs to a user this plan deletes.
 */
import {
  type DesiredGroup,
  type DesiredIam,
  type DesiredIdentity,
  type DesiredProvider,
  type DesiredRule,
  type DesiredUser,
  PROVIDER_SETTINGS,
} from "./declarative.ts";
import { type AuthSource, IamError, type Permission } from "./model.ts";

/** The database's IAM as the reconciler compares it (ids included; secrets included). */
export interface IamState {
  users: (Omit<DesiredUser, "auth_source"> & { id: string; auth_source: AuthSource })[];
  groups: (DesiredGroup & { id: string })[];
  providers: (DesiredProvider & { id: string })[];
  /** In stored order. */
  rules: DesiredRule[];
  identities: (DesiredIdentity & { id: string })[];
}

export type StateUser = IamState["users"][number];

export interface EntityPlan<Desired, Stored> {
  create: Desired[];
  /** `next` is what the row becomes (stored secrets filled in where YAML left them empty). */
  update: { id: string; next: Desired; before: Stored }[];
  delete: Stored[];
}

export interface ReconcilePlan {
  users: EntityPlan<DesiredUser & { auth_source: AuthSource }, StateUser>;
  groups: EntityPlan<DesiredGroup, IamState["groups"][number]>;
  providers: EntityPlan<DesiredProvider, IamState["providers"][number]>;
  /** The rules to write, or null to keep the stored ones. */
  rules: DesiredRule[] | null;
  identities: { create: DesiredIdentity[]; update: { id: string; next: DesiredIdentity }[] };
  /** Entity counts the YAML states (the N of the summary line). */
  totals: { users: number; groups: number; providers: number; rules: number };
}

function samePermissions(a: Permission[], b: Permission[]): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}

function byName<T extends { name: string }>(items: T[]): Map<string, T> {
  return new Map(items.map((item) => [item.name, item]));
}

/** Name-keyed diff; `merge` gives the row to write (or null when it equals the stored one). */
function diff<D extends { name: string }, S extends { name: string; id: string }, N>(
  desired: D[],
  stored: S[],
  merge: (wanted: D, current: S | undefined) => N | null,
): EntityPlan<N, S> {
  const current = byName(stored);
  const wanted = new Set(desired.map((d) => d.name));
  const plan: EntityPlan<N, S> = { create: [], update: [], delete: [] };
  for (const item of desired) {
    const before = current.get(item.name);
    const next = merge(item, before);
    if (before === undefined) plan.create.push(next!);
    else if (next !== null) plan.update.push({ id: before.id, next, before });
  }
  plan.delete = stored.filter((s) => !wanted.has(s.name));
  return plan;
}

function mergeUser(
  wanted: DesiredUser,
  current: StateUser | undefined,
): (DesiredUser & { auth_source: AuthSource }) | null {
  if (current === undefined) {
    if (wanted.secret_access_key === "") {
      throw new IamError(
        "invalid",
        `User "${wanted.name}" is new and needs a secret_access_key (an empty one keeps the ` +
          `stored secret of an existing user only)`,
      );
    }
    return { ...wanted, auth_source: wanted.auth_source ?? "local" };
  }
  const next = {
    ...wanted,
    secret_access_key: wanted.secret_access_key || current.secret_access_key,
    auth_source: wanted.auth_source ?? current.auth_source,
  };
  const same = next.access_key_id === current.access_key_id &&
    next.secret_access_key === current.secret_access_key &&
    next.enabled === current.enabled &&
    next.auth_source === current.auth_source &&
    next.groups.join("\n") === current.groups.join("\n") &&
    samePermissions(next.permissions, current.permissions);
  return same ? null : next;
}

function mergeGroup(
  wanted: DesiredGroup,
  current: IamState["groups"][number] | undefined,
): DesiredGroup | null {
  if (current === undefined) return wanted;
  const same = wanted.description === current.description &&
    samePermissions(wanted.permissions, current.permissions);
  return same ? null : wanted;
}

function mergeProvider(
  wanted: DesiredProvider,
  current: IamState["providers"][number] | undefined,
): DesiredProvider | null {
  if (current === undefined) return wanted;
  const next = { ...wanted, client_secret: wanted.client_secret ?? current.client_secret };
  return PROVIDER_SETTINGS.every((field) => next[field] === current[field]) ? null : next;
}

function ruleKey(rule: DesiredRule): string {
  return JSON.stringify([
    rule.provider,
    rule.priority,
    rule.match_type,
    rule.match_field,
    rule.match_value,
    rule.group,
    rule.require_verified_email,
  ]);
}

function planIdentities(desired: DesiredIdentity[] | undefined, stored: IamState["identities"]) {
  const plan: ReconcilePlan["identities"] = { create: [], update: [] };
  if (desired === undefined) return plan;
  const current = new Map(stored.map((s) => [`${s.provider}\n${s.subject}`, s]));
  for (const identity of desired) {
    const before = current.get(`${identity.provider}\n${identity.subject}`);
    if (before === undefined) plan.create.push(identity);
    else if (
      before.user !== identity.user || before.email !== identity.email ||
      JSON.stringify(before.claims) !== JSON.stringify(identity.claims)
    ) {
      plan.update.push({ id: before.id, next: identity });
    }
  }
  return plan;
}

export function planReconcile(desired: DesiredIam, state: IamState): ReconcilePlan {
  const users = diff(desired.users, state.users, mergeUser);
  // A key moving from a deleted user to another one: refused, so a key never changes hands
  // silently within one apply (SPEC "Declarative IAM" 3).
  const keyOwners = new Map(desired.users.map((u) => [u.access_key_id, u.name]));
  for (const gone of users.delete) {
    const taker = keyOwners.get(gone.access_key_id);
    if (taker !== undefined) {
      throw new IamError(
        "invalid",
        `Access key "${gone.access_key_id}" of user "${taker}" belongs to user "${gone.name}", ` +
          `which this apply deletes; give "${taker}" another key, or delete "${gone.name}" first`,
      );
    }
  }
  const sameRules = desired.rules.length === state.rules.length &&
    desired.rules.every((rule, i) => ruleKey(rule) === ruleKey(state.rules[i]));
  return {
    users,
    groups: diff(desired.groups, state.groups, mergeGroup),
    providers: diff(desired.providers, state.providers, mergeProvider),
    rules: sameRules ? null : desired.rules,
    identities: planIdentities(desired.identities, state.identities),
    totals: {
      users: desired.users.length,
      groups: desired.groups.length,
      providers: desired.providers.length,
      rules: desired.rules.length,
    },
  };
}

/** True when the plan writes nothing (no version bump, no audit, no summary line). */
export function isNoop(plan: ReconcilePlan): boolean {
  const empty = (p: EntityPlan<unknown, unknown>) =>
    p.create.length + p.update.length + p.delete.length === 0;
  return empty(plan.users) && empty(plan.groups) && empty(plan.providers) &&
    plan.rules === null && plan.identities.create.length + plan.identities.update.length === 0;
}

function counts(p: EntityPlan<unknown, unknown>): string {
  return `+${p.create.length}/~${p.update.length}/-${p.delete.length}`;
}

/** SPEC "Declarative IAM" 5: the dry-run preview line. */
export function previewLine(plan: ReconcilePlan): string {
  if (isNoop(plan)) return "declarative IAM preview: no IAM changes (idempotent apply)";
  return `declarative IAM preview: users(${counts(plan.users)}) groups(${
    counts(plan.groups)
  }) providers(${counts(plan.providers)}) mapping_rules=${
    plan.rules === null ? "keep" : "replace"
  }`;
}

/**
 * SPEC "Declarative IAM" 6: the apply summary line, or null when nothing changed. N is the count
 * the YAML states; the mapping rule count is the number of rules written (0 when kept).
 */
export function summaryLine(plan: ReconcilePlan): string | null {
  if (isNoop(plan)) return null;
  const t = plan.totals;
  return `declarative IAM reconciled: ${t.users} users (${counts(plan.users)}), ${t.groups} ` +
    `groups (${counts(plan.groups)}), ${t.providers} providers (${counts(plan.providers)}), ` +
    `${plan.rules === null ? 0 : plan.rules.length} mapping rules replaced`;
}
