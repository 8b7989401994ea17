/**
 * The IAM store's SQL pieces (migration v2): rows read into records, the `meta.iam_version`
 * counter, and the uniqueness checks and lookups a change runs inside its transaction (each takes
 * the transaction as `tx`; the store composes them in iam-store.ts).
 */
import type { Transaction } from "@libsql/client";
import {
  type AuthSource,
  type GroupRecord,
  IamError,
  type Permission,
  type UserWithSecret,
} from "../iam/mod.ts";

export type Row = Record<string, unknown>;
export type Query = Pick<Transaction, "execute">;

function parsePermissions(text: unknown): Permission[] {
  return JSON.parse(String(text)) as Permission[];
}

export async function bumpVersion(tx: Query): Promise<void> {
  await tx.execute(
    "UPDATE meta SET value = CAST(CAST(value AS INTEGER) + 1 AS TEXT) WHERE key = 'iam_version'",
  );
}

export async function readVersion(q: Query): Promise<number> {
  const result = await q.execute("SELECT value FROM meta WHERE key = 'iam_version'");
  return Number(result.rows[0]?.value ?? 0);
}

/** The `name` column of membership rows, grouped by the id in `column` (in row order). */
function namesBy(rows: ArrayLike<Record<string, unknown>>, column: string): Map<string, string[]> {
  const names = new Map<string, string[]>();
  for (const row of Array.from(rows)) {
    const id = String(row[column]);
    names.set(id, [...names.get(id) ?? [], String(row.name)]);
  }
  return names;
}

/** The columns of a new `iam_users` row (memberships are written apart). */
export interface NewUserRow {
  id: string;
  name: string;
  access_key_id: string;
  secret_access_key: string;
  enabled: boolean;
  auth_source: AuthSource;
  permissions: Permission[];
}

/** Inserts one user row created and updated at `now`. */
export async function insertUserRow(tx: Query, user: NewUserRow, now: number): Promise<void> {
  await tx.execute({
    sql: `INSERT INTO iam_users (id, name, access_key_id, secret_access_key, enabled,
      auth_source, permissions, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    args: [
      user.id,
      user.name,
      user.access_key_id,
      user.secret_access_key,
      user.enabled ? 1 : 0,
      user.auth_source,
      JSON.stringify(user.permissions),
      now,
      now,
    ],
  });
}

/** Inserts one group row (a fresh id unless given) created and updated at `now`. */
export async function insertGroupRow(
  tx: Query,
  group: { id?: string; name: string; description: string; permissions: Permission[] },
  now: number,
): Promise<void> {
  await tx.execute({
    sql: `INSERT INTO iam_groups (id, name, description, permissions, created_at, updated_at)
      VALUES (?, ?, ?, ?, ?, ?)`,
    args: [
      group.id ?? crypto.randomUUID(),
      group.name,
      group.description,
      JSON.stringify(group.permissions),
      now,
      now,
    ],
  });
}

/** Users with their secrets and group names (all, or the one with `id`), sorted by name. */
export async function readUsers(q: Query, id?: string): Promise<UserWithSecret[]> {
  const users = await q.execute({
    sql: `SELECT * FROM iam_users ${id === undefined ? "" : "WHERE id = ?"} ORDER BY name`,
    args: id === undefined ? [] : [id],
  });
  const memberships = await q.execute({
    sql: `SELECT m.user_id, g.name FROM iam_memberships m JOIN iam_groups g ON g.id = m.group_id
      ${id === undefined ? "" : "WHERE m.user_id = ?"} ORDER BY g.name`,
    args: id === undefined ? [] : [id],
  });
  const groupsOf = namesBy(memberships.rows, "user_id");
  return users.rows.map((row) => ({
    id: String(row.id),
    name: String(row.name),
    access_key_id: String(row.access_key_id),
    secret_access_key: String(row.secret_access_key),
    has_secret: String(row.secret_access_key) !== "",
    enabled: Number(row.enabled) === 1,
    auth_source: String(row.auth_source) as AuthSource,
    groups: groupsOf.get(String(row.id)) ?? [],
    permissions: parsePermissions(row.permissions),
    created_at: Number(row.created_at),
    updated_at: Number(row.updated_at),
  }));
}

/** Groups with their member names (all, or the one with `id`), sorted by name. */
export async function readGroups(q: Query, id?: string): Promise<GroupRecord[]> {
  const groups = await q.execute({
    sql: `SELECT * FROM iam_groups ${id === undefined ? "" : "WHERE id = ?"} ORDER BY name`,
    args: id === undefined ? [] : [id],
  });
  const members = await q.execute({
    sql: `SELECT m.group_id, u.name FROM iam_memberships m JOIN iam_users u ON u.id = m.user_id
      ${id === undefined ? "" : "WHERE m.group_id = ?"} ORDER BY u.name`,
    args: id === undefined ? [] : [id],
  });
  const membersOf = namesBy(members.rows, "group_id");
  return groups.rows.map((row) => ({
    id: String(row.id),
    name: String(row.name),
    description: String(row.description),
    permissions: parsePermissions(row.permissions),
    members: membersOf.get(String(row.id)) ?? [],
    created_at: Number(row.created_at),
    updated_at: Number(row.updated_at),
  }));
}

// --- checks and lookups inside a change transaction ----------------------------------------

export async function one(
  q: Query,
  sql: string,
  args: (string | number)[],
): Promise<Row | undefined> {
  return (await q.execute({ sql, args })).rows[0] as Row | undefined;
}

export function notFound(what: string, id: string): IamError {
  return new IamError("not_found", `${what} "${id}" does not exist`);
}

export async function assertNameFree(
  tx: Query,
  table: string,
  what: string,
  name: string,
): Promise<void> {
  if (await one(tx, `SELECT 1 FROM ${table} WHERE name = ?`, [name])) {
    throw new IamError("conflict", `${what} "${name}" already exists`);
  }
}

export async function assertKeyFree(tx: Query, accessKeyId: string): Promise<void> {
  if (await one(tx, "SELECT 1 FROM iam_users WHERE access_key_id = ?", [accessKeyId])) {
    throw new IamError("conflict", `Access key id "${accessKeyId}" is already in use`);
  }
}

export async function groupIdsByName(tx: Query, names: string[]): Promise<string[]> {
  const ids: string[] = [];
  for (const name of names) {
    const row = await one(tx, "SELECT id FROM iam_groups WHERE name = ?", [name]);
    if (!row) throw new IamError("invalid", `Unknown group "${name}"`);
    ids.push(String(row.id));
  }
  return ids;
}

export async function setMemberships(tx: Query, userId: string, groupIds: string[]): Promise<void> {
  await tx.execute({ sql: "DELETE FROM iam_memberships WHERE user_id = ?", args: [userId] });
  for (const groupId of groupIds) {
    await tx.execute({
      sql: "INSERT INTO iam_memberships (group_id, user_id) VALUES (?, ?)",
      args: [groupId, userId],
    });
  }
}

export async function requireUser(tx: Query, id: string): Promise<Row> {
  const row = await one(tx, "SELECT * FROM iam_users WHERE id = ?", [id]);
  if (!row) throw notFound("User", id);
  return row;
}

export async function userWithSecret(tx: Query, id: string): Promise<UserWithSecret> {
  const users = await readUsers(tx, id);
  if (users.length === 0) throw notFound("User", id);
  return users[0];
}

export async function requireGroupRecord(tx: Query, id: string): Promise<GroupRecord> {
  const groups = await readGroups(tx, id);
  if (groups.length === 0) throw notFound("Group", id);
  return groups[0];
}
