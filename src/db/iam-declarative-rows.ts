/**
 * The SQL of declarative IAM (migrations v2 and `iam_providers`): the whole IAM read as an
 * `IamState` (names, not ids, in references) and a reconcile plan written inside the caller's
 * transaction. Deletes cascade by hand (memberships, external identities, mapping rules), like
 * the rest of the IAM store, so nothing depends on SQLite's per-connection foreign_keys pragma.
 */
import type {
  AuthSource,
  DesiredIdentity,
  DesiredProvider,
  DesiredRule,
  IamState,
  Permission,
  ReconcilePlan,
} from "../iam/mod.ts";
import {
  bumpVersion,
  insertGroupRow,
  insertUserRow,
  type Query,
  readGroups,
  readUsers,
  setMemberships,
} from "./iam-rows.ts";

function nullable(value: unknown): string | null {
  return value === null || value === undefined ? null : String(value);
}

/** Everything declarative IAM compares, consistent within `tx`. */
export async function readIamState(tx: Query): Promise<IamState> {
  const users = (await readUsers(tx)).map((u) => ({
    id: u.id,
    name: u.name,
    access_key_id: u.access_key_id,
    secret_access_key: u.secret_access_key,
    enabled: u.enabled,
    groups: [...u.groups].sort(),
    permissions: u.permissions,
    auth_source: u.auth_source as AuthSource,
  }));
  const groups = (await readGroups(tx)).map((g) => ({
    id: g.id,
    name: g.name,
    description: g.description,
    permissions: g.permissions as Permission[],
  }));
  const providerRows = await tx.execute("SELECT * FROM iam_auth_providers ORDER BY name");
  const providers = providerRows.rows.map((row) => ({
    id: String(row.id),
    name: String(row.name),
    provider_type: "oidc" as const,
    enabled: Number(row.enabled) === 1,
    priority: Number(row.priority),
    display_name: nullable(row.display_name),
    client_id: String(row.client_id),
    client_secret: nullable(row.client_secret),
    issuer_url: String(row.issuer_url),
    scopes: String(row.scopes),
  }));
  const ruleRows = await tx.execute(
    `SELECT r.*, p.name AS provider_name, g.name AS group_name FROM iam_group_mapping_rules r
      LEFT JOIN iam_auth_providers p ON p.id = r.provider_id
      LEFT JOIN iam_groups g ON g.id = r.group_id ORDER BY r.position`,
  );
  const rules: DesiredRule[] = ruleRows.rows.map((row) => ({
    provider: nullable(row.provider_name),
    priority: Number(row.priority),
    match_type: String(row.match_type),
    match_field: String(row.match_field),
    match_value: String(row.match_value),
    group: String(row.group_name ?? ""),
    require_verified_email: Number(row.require_verified_email) !== 0,
  }));
  const identityRows = await tx.execute(
    `SELECT i.*, u.name AS user_name, p.name AS provider_name FROM iam_external_identities i
      JOIN iam_users u ON u.id = i.user_id JOIN iam_auth_providers p ON p.id = i.provider_id
      ORDER BY p.name, i.subject`,
  );
  const identities = identityRows.rows.map((row) => ({
    id: String(row.id),
    user: String(row.user_name),
    provider: String(row.provider_name),
    subject: String(row.subject),
    email: nullable(row.email),
    claims: JSON.parse(String(row.claims)) as unknown,
  }));
  return { users, groups, providers, rules, identities };
}

/** Name → id of the rows of `table` (after the plan's creates). */
async function idsByName(tx: Query, table: string): Promise<Map<string, string>> {
  const rows = await tx.execute(`SELECT id, name FROM ${table}`);
  return new Map(rows.rows.map((row) => [String(row.name), String(row.id)]));
}

function providerArgs(p: DesiredProvider): (string | number | null)[] {
  return [
    p.provider_type,
    p.enabled ? 1 : 0,
    p.priority,
    p.display_name,
    p.client_id,
    p.client_secret,
    p.issuer_url,
    p.scopes,
  ];
}

async function writeIdentity(
  tx: Query,
  id: string | null,
  identity: DesiredIdentity,
  userIds: Map<string, string>,
  providerIds: Map<string, string>,
  now: number,
): Promise<void> {
  const args = [
    userIds.get(identity.user)!,
    providerIds.get(identity.provider)!,
    identity.subject,
    identity.email,
    JSON.stringify(identity.claims),
  ];
  if (id === null) {
    await tx.execute({
      sql: `INSERT INTO iam_external_identities (user_id, provider_id, subject, email, claims,
        created_at, id) VALUES (?, ?, ?, ?, ?, ?, ?)`,
      args: [...args, now, crypto.randomUUID()],
    });
  } else {
    await tx.execute({
      sql: `UPDATE iam_external_identities SET user_id = ?, provider_id = ?, subject = ?,
        email = ?, claims = ? WHERE id = ?`,
      args: [...args, id],
    });
  }
}

/**
 * Writes `plan` inside `tx` and bumps the IAM version once. Order: deletes (with their
 * cascades), then groups and providers, then users (a changed key first parks on a unique
 * placeholder so two users may swap keys), then memberships, rules and bindings by the ids
 * that now exist.
 */
export async function writePlan(tx: Query, plan: ReconcilePlan, now: number): Promise<void> {
  for (const user of plan.users.delete) {
    for (const table of ["iam_memberships", "iam_external_identities"]) {
      await tx.execute({ sql: `DELETE FROM ${table} WHERE user_id = ?`, args: [user.id] });
    }
    await tx.execute({ sql: "DELETE FROM iam_users WHERE id = ?", args: [user.id] });
  }
  for (const group of plan.groups.delete) {
    for (const table of ["iam_memberships", "iam_group_mapping_rules"]) {
      await tx.execute({ sql: `DELETE FROM ${table} WHERE group_id = ?`, args: [group.id] });
    }
    await tx.execute({ sql: "DELETE FROM iam_groups WHERE id = ?", args: [group.id] });
  }
  for (const provider of plan.providers.delete) {
    for (const table of ["iam_external_identities", "iam_group_mapping_rules"]) {
      await tx.execute({ sql: `DELETE FROM ${table} WHERE provider_id = ?`, args: [provider.id] });
    }
    await tx.execute({ sql: "DELETE FROM iam_auth_providers WHERE id = ?", args: [provider.id] });
  }

  for (const group of plan.groups.create) {
    await insertGroupRow(tx, group, now);
  }
  for (const { id, next } of plan.groups.update) {
    await tx.execute({
      sql: "UPDATE iam_groups SET description = ?, permissions = ?, updated_at = ? WHERE id = ?",
      args: [next.description, JSON.stringify(next.permissions), now, id],
    });
  }
  for (const provider of plan.providers.create) {
    await tx.execute({
      sql: `INSERT INTO iam_auth_providers (provider_type, enabled, priority, display_name,
        client_id, client_secret, issuer_url, scopes, id, name, created_at, updated_at)
        VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      args: [...providerArgs(provider), crypto.randomUUID(), provider.name, now, now],
    });
  }
  for (const { id, next } of plan.providers.update) {
    await tx.execute({
      sql: `UPDATE iam_auth_providers SET provider_type = ?, enabled = ?, priority = ?,
        display_name = ?, client_id = ?, client_secret = ?, issuer_url = ?, scopes = ?,
        updated_at = ? WHERE id = ?`,
      args: [...providerArgs(next), now, id],
    });
  }

  for (const { id, next, before } of plan.users.update) {
    if (next.access_key_id !== before.access_key_id) {
      await tx.execute({
        sql: "UPDATE iam_users SET access_key_id = ? WHERE id = ?",
        args: [`\u0000moving:${id}`, id],
      });
    }
  }
  const userArgs = (u: ReconcilePlan["users"]["create"][number]) => [
    u.access_key_id,
    u.secret_access_key,
    u.enabled ? 1 : 0,
    u.auth_source,
    JSON.stringify(u.permissions),
  ];
  for (const { id, next } of plan.users.update) {
    await tx.execute({
      sql: `UPDATE iam_users SET access_key_id = ?, secret_access_key = ?, enabled = ?,
        auth_source = ?, permissions = ?, updated_at = ? WHERE id = ?`,
      args: [...userArgs(next), now, id],
    });
  }
  for (const user of plan.users.create) {
    await insertUserRow(tx, { ...user, id: crypto.randomUUID() }, now);
  }

  const userIds = await idsByName(tx, "iam_users");
  const groupIds = await idsByName(tx, "iam_groups");
  const providerIds = await idsByName(tx, "iam_auth_providers");
  for (const user of [...plan.users.create, ...plan.users.update.map((u) => u.next)]) {
    await setMemberships(tx, userIds.get(user.name)!, user.groups.map((g) => groupIds.get(g)!));
  }
  if (plan.rules !== null) {
    await tx.execute("DELETE FROM iam_group_mapping_rules");
    for (const [position, rule] of plan.rules.entries()) {
      await tx.execute({
        sql: `INSERT INTO iam_group_mapping_rules (id, position, provider_id, priority,
          match_type, match_field, match_value, group_id, require_verified_email)
          VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
        args: [
          crypto.randomUUID(),
          position,
          rule.provider === null ? null : providerIds.get(rule.provider)!,
          rule.priority,
          rule.match_type,
          rule.match_field,
          rule.match_value,
          groupIds.get(rule.group)!,
          rule.require_verified_email ? 1 : 0,
        ],
      });
    }
  }
  for (const identity of plan.identities.create) {
    await writeIdentity(tx, null, identity, userIds, providerIds, now);
  }
  for (const { id, next } of plan.identities.update) {
    await writeIdentity(tx, id, next, userIds, providerIds, now);
  }
  await bumpVersion(tx);
}
