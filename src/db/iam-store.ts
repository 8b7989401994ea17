/**
 * IAM rows in the config database: users, groups and memberships (migration v2). Every change is
 * one transaction that also bumps `meta.iam_version`, so the counter the index reports survives a
 * restart and moves exactly when IAM changed. Inputs are validated by src/iam/model.ts before the
 * transaction starts; names and access keys are checked for uniqueness inside it (calls are
 * serialised, so the check and the write see the same state). Secrets leave the store only from
 * create, rotate and clone (shown once) and from `snapshot()` (the index, for SigV4).
 */
import type { ResultSet, Transaction } from "@libsql/client";
import type { DbClient } from "./config-db.ts";
import {
  type AuthSource,
  type GroupRecord,
  IamError,
  type Permission,
  type UserRecord,
  type UserWithSecret,
  validateAccessKeyId,
  validateGroupNames,
  validateName,
  validatePermissions,
  validateSecret,
} from "../iam/model.ts";
import { generateAccessKeyId, generateSecretAccessKey } from "../iam/keys.ts";

export interface NewUser {
  name: string;
  /** Generated when absent. */
  access_key_id?: string;
  /** Generated when absent. */
  secret_access_key?: string;
  enabled?: boolean;
  auth_source?: AuthSource;
  /** Group names. */
  groups?: string[];
  permissions?: unknown[];
}

export interface UserPatch {
  name?: string;
  enabled?: boolean;
  /** Replaces the memberships. */
  groups?: string[];
  permissions?: unknown[];
}

export interface NewGroup {
  name: string;
  description?: string;
  permissions?: unknown[];
}

export type GroupPatch = Partial<NewGroup>;

/** Everything the index needs, read in one transaction. */
export interface IamSnapshotData {
  version: number;
  users: (UserWithSecret)[];
  groups: GroupRecord[];
}

type Row = Record<string, unknown>;
type Query = Pick<Transaction, "execute">;

function parsePermissions(text: unknown): Permission[] {
  return JSON.parse(String(text)) as Permission[];
}

function bool(value: unknown, what: string): boolean {
  if (typeof value !== "boolean") {
    throw new IamError("invalid", `${what} must be true or false, got ${JSON.stringify(value)}`);
  }
  return value;
}

async function bumpVersion(tx: Query): Promise<void> {
  await tx.execute(
    "UPDATE meta SET value = CAST(CAST(value AS INTEGER) + 1 AS TEXT) WHERE key = 'iam_version'",
  );
}

async function readVersion(q: Query): Promise<number> {
  const result = await q.execute("SELECT value FROM meta WHERE key = 'iam_version'");
  return Number(result.rows[0]?.value ?? 0);
}

async function one(q: Query, sql: string, args: (string | number)[]): Promise<Row | undefined> {
  return (await q.execute({ sql, args })).rows[0] as Row | undefined;
}

export class IamStore {
  readonly #db: DbClient;
  readonly #now: () => number;

  constructor(db: DbClient, options: { now?: () => number } = {}) {
    this.#db = db;
    this.#now = options.now ?? Date.now;
  }

  /** The IAM version (0 on a fresh database). */
  async version(): Promise<number> {
    return await readVersion(this.#db);
  }

  // --- reads ----------------------------------------------------------------------------------

  async listUsers(): Promise<UserRecord[]> {
    return (await this.#db.transaction((tx) => this.#users(tx), "read")).map(withoutSecret);
  }

  async getUser(id: string): Promise<UserRecord> {
    const users = await this.#db.transaction((tx) => this.#users(tx, id), "read");
    if (users.length === 0) throw notFound("User", id);
    return withoutSecret(users[0]);
  }

  async listGroups(): Promise<GroupRecord[]> {
    return await this.#db.transaction((tx) => this.#groups(tx), "read");
  }

  async getGroup(id: string): Promise<GroupRecord> {
    const groups = await this.#db.transaction((tx) => this.#groups(tx, id), "read");
    if (groups.length === 0) throw notFound("Group", id);
    return groups[0];
  }

  /** Users (with secrets), groups and the version, consistent with each other. */
  snapshot(): Promise<IamSnapshotData> {
    return this.#db.transaction(async (tx) => ({
      version: await readVersion(tx),
      users: await this.#users(tx),
      groups: await this.#groups(tx),
    }), "read");
  }

  async #users(q: Query, id?: string): Promise<UserWithSecret[]> {
    const users = await q.execute({
      sql: `SELECT * FROM iam_users ${id === undefined ? "" : "WHERE id = ?"} ORDER BY name`,
      args: id === undefined ? [] : [id],
    });
    const memberships = await q.execute({
      sql: `SELECT m.user_id, g.name FROM iam_memberships m JOIN iam_groups g ON g.id = m.group_id
        ${id === undefined ? "" : "WHERE m.user_id = ?"} ORDER BY g.name`,
      args: id === undefined ? [] : [id],
    });
    const groupsOf = new Map<string, string[]>();
    for (const row of memberships.rows) {
      const list = groupsOf.get(String(row.user_id)) ?? [];
      list.push(String(row.name));
      groupsOf.set(String(row.user_id), list);
    }
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

  async #groups(q: Query, id?: string): Promise<GroupRecord[]> {
    const groups = await q.execute({
      sql: `SELECT * FROM iam_groups ${id === undefined ? "" : "WHERE id = ?"} ORDER BY name`,
      args: id === undefined ? [] : [id],
    });
    const members = await q.execute({
      sql: `SELECT m.group_id, u.name FROM iam_memberships m JOIN iam_users u ON u.id = m.user_id
        ${id === undefined ? "" : "WHERE m.group_id = ?"} ORDER BY u.name`,
      args: id === undefined ? [] : [id],
    });
    const membersOf = new Map<string, string[]>();
    for (const row of members.rows) {
      const list = membersOf.get(String(row.group_id)) ?? [];
      list.push(String(row.name));
      membersOf.set(String(row.group_id), list);
    }
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

  // --- users ----------------------------------------------------------------------------------

  createUser(input: NewUser): Promise<UserWithSecret> {
    const name = validateName(input.name, "User");
    const accessKeyId = input.access_key_id === undefined
      ? generateAccessKeyId()
      : validateAccessKeyId(input.access_key_id);
    const secret = input.secret_access_key === undefined
      ? generateSecretAccessKey()
      : validateSecret(input.secret_access_key);
    const enabled = input.enabled === undefined ? true : bool(input.enabled, "enabled");
    const authSource = input.auth_source ?? "local";
    if (authSource !== "local" && authSource !== "external") {
      throw new IamError("invalid", `auth_source must be "local" or "external"`);
    }
    const groups = validateGroupNames(input.groups);
    const permissions = validatePermissions(input.permissions);
    return this.#change(async (tx) => {
      await this.#assertNameFree(tx, "iam_users", "User", name);
      await this.#assertKeyFree(tx, accessKeyId);
      const groupIds = await this.#groupIds(tx, groups);
      const id = crypto.randomUUID();
      const now = this.#now();
      await tx.execute({
        sql: `INSERT INTO iam_users (id, name, access_key_id, secret_access_key, enabled,
          auth_source, permissions, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
        args: [
          id,
          name,
          accessKeyId,
          secret,
          enabled ? 1 : 0,
          authSource,
          JSON.stringify(permissions),
          now,
          now,
        ],
      });
      await this.#setMemberships(tx, id, groupIds);
      return await this.#userWithSecret(tx, id);
    });
  }

  updateUser(id: string, patch: UserPatch): Promise<UserRecord> {
    const name = patch.name === undefined ? undefined : validateName(patch.name, "User");
    const enabled = patch.enabled === undefined ? undefined : bool(patch.enabled, "enabled");
    const groups = patch.groups === undefined ? undefined : validateGroupNames(patch.groups);
    const permissions = patch.permissions === undefined
      ? undefined
      : validatePermissions(patch.permissions);
    return this.#change(async (tx) => {
      const current = await this.#requireUser(tx, id);
      if (name !== undefined && name !== current.name) {
        await this.#assertNameFree(tx, "iam_users", "User", name);
      }
      const groupIds = groups === undefined ? undefined : await this.#groupIds(tx, groups);
      await tx.execute({
        sql: `UPDATE iam_users SET name = ?, enabled = ?, permissions = ?, updated_at = ?
          WHERE id = ?`,
        args: [
          name ?? String(current.name),
          enabled === undefined ? Number(current.enabled) : enabled ? 1 : 0,
          permissions === undefined ? String(current.permissions) : JSON.stringify(permissions),
          this.#now(),
          id,
        ],
      });
      if (groupIds !== undefined) await this.#setMemberships(tx, id, groupIds);
      return withoutSecret(await this.#userWithSecret(tx, id));
    });
  }

  deleteUser(id: string): Promise<UserRecord> {
    return this.#change(async (tx) => {
      const user = withoutSecret(await this.#userWithSecret(tx, id));
      await tx.execute({ sql: "DELETE FROM iam_memberships WHERE user_id = ?", args: [id] });
      await tx.execute({ sql: "DELETE FROM iam_users WHERE id = ?", args: [id] });
      return user;
    });
  }

  /** A fresh key pair; the old one stops working at the next index rebuild. */
  rotateKeys(id: string): Promise<UserWithSecret> {
    return this.#change(async (tx) => {
      await this.#requireUser(tx, id);
      const accessKeyId = generateAccessKeyId();
      await this.#assertKeyFree(tx, accessKeyId);
      await tx.execute({
        sql: `UPDATE iam_users SET access_key_id = ?, secret_access_key = ?, updated_at = ?
          WHERE id = ?`,
        args: [accessKeyId, generateSecretAccessKey(), this.#now(), id],
      });
      return await this.#userWithSecret(tx, id);
    });
  }

  /** A new local user named `name` with new keys, the same permissions, groups and state. */
  cloneUser(id: string, name: unknown): Promise<UserWithSecret> {
    const newName = validateName(name, "User");
    return this.#change(async (tx) => {
      const source = await this.#userWithSecret(tx, id);
      await this.#assertNameFree(tx, "iam_users", "User", newName);
      const accessKeyId = generateAccessKeyId();
      await this.#assertKeyFree(tx, accessKeyId);
      const newId = crypto.randomUUID();
      const now = this.#now();
      await tx.execute({
        sql: `INSERT INTO iam_users (id, name, access_key_id, secret_access_key, enabled,
          auth_source, permissions, created_at, updated_at) VALUES (?, ?, ?, ?, ?, 'local', ?, ?, ?)`,
        args: [
          newId,
          newName,
          accessKeyId,
          generateSecretAccessKey(),
          source.enabled ? 1 : 0,
          JSON.stringify(source.permissions),
          now,
          now,
        ],
      });
      await tx.execute({
        sql: `INSERT INTO iam_memberships (group_id, user_id)
          SELECT group_id, ? FROM iam_memberships WHERE user_id = ?`,
        args: [newId, id],
      });
      return await this.#userWithSecret(tx, newId);
    });
  }

  // --- groups ---------------------------------------------------------------------------------

  createGroup(input: NewGroup): Promise<GroupRecord> {
    const name = validateName(input.name, "Group");
    const description = description_(input.description);
    const permissions = validatePermissions(input.permissions);
    return this.#change(async (tx) => {
      await this.#assertNameFree(tx, "iam_groups", "Group", name);
      const id = crypto.randomUUID();
      await this.#insertGroup(tx, id, name, description ?? "", permissions);
      return await this.#requireGroupRecord(tx, id);
    });
  }

  updateGroup(id: string, patch: GroupPatch): Promise<GroupRecord> {
    const name = patch.name === undefined ? undefined : validateName(patch.name, "Group");
    const description = description_(patch.description);
    const permissions = patch.permissions === undefined
      ? undefined
      : validatePermissions(patch.permissions);
    return this.#change(async (tx) => {
      const current = await this.#requireGroupRecord(tx, id);
      if (name !== undefined && name !== current.name) {
        await this.#assertNameFree(tx, "iam_groups", "Group", name);
      }
      await tx.execute({
        sql: `UPDATE iam_groups SET name = ?, description = ?, permissions = ?, updated_at = ?
          WHERE id = ?`,
        args: [
          name ?? current.name,
          description ?? current.description,
          JSON.stringify(permissions ?? current.permissions),
          this.#now(),
          id,
        ],
      });
      return await this.#requireGroupRecord(tx, id);
    });
  }

  deleteGroup(id: string): Promise<GroupRecord> {
    return this.#change(async (tx) => {
      const group = await this.#requireGroupRecord(tx, id);
      await tx.execute({ sql: "DELETE FROM iam_memberships WHERE group_id = ?", args: [id] });
      await tx.execute({ sql: "DELETE FROM iam_groups WHERE id = ?", args: [id] });
      return group;
    });
  }

  /** A new group named `name` with the same description and permissions (no members). */
  cloneGroup(id: string, name: unknown): Promise<GroupRecord> {
    const newName = validateName(name, "Group");
    return this.#change(async (tx) => {
      const source = await this.#requireGroupRecord(tx, id);
      await this.#assertNameFree(tx, "iam_groups", "Group", newName);
      const newId = crypto.randomUUID();
      await this.#insertGroup(tx, newId, newName, source.description, source.permissions);
      return await this.#requireGroupRecord(tx, newId);
    });
  }

  /** Adds the user to the group; a repeat is a no-op that still answers the group. */
  addMember(groupId: string, userId: string): Promise<GroupRecord> {
    return this.#change(async (tx) => {
      await this.#requireGroupRecord(tx, groupId);
      await this.#requireUser(tx, userId);
      await tx.execute({
        sql: "INSERT OR IGNORE INTO iam_memberships (group_id, user_id) VALUES (?, ?)",
        args: [groupId, userId],
      });
      return await this.#requireGroupRecord(tx, groupId);
    });
  }

  removeMember(groupId: string, userId: string): Promise<GroupRecord> {
    return this.#change(async (tx) => {
      await this.#requireGroupRecord(tx, groupId);
      const result: ResultSet = await tx.execute({
        sql: "DELETE FROM iam_memberships WHERE group_id = ? AND user_id = ?",
        args: [groupId, userId],
      });
      if (result.rowsAffected === 0) {
        throw new IamError("not_found", `User "${userId}" is not a member of group "${groupId}"`);
      }
      return await this.#requireGroupRecord(tx, groupId);
    });
  }

  // --- helpers --------------------------------------------------------------------------------

  /** Runs a change in one write transaction with the version bump. */
  #change<T>(fn: (tx: Transaction) => Promise<T>): Promise<T> {
    return this.#db.transaction(async (tx) => {
      const result = await fn(tx);
      await bumpVersion(tx);
      return result;
    });
  }

  async #insertGroup(
    tx: Query,
    id: string,
    name: string,
    description: string,
    permissions: Permission[],
  ): Promise<void> {
    const now = this.#now();
    await tx.execute({
      sql: `INSERT INTO iam_groups (id, name, description, permissions, created_at, updated_at)
        VALUES (?, ?, ?, ?, ?, ?)`,
      args: [id, name, description, JSON.stringify(permissions), now, now],
    });
  }

  async #assertNameFree(tx: Query, table: string, what: string, name: string): Promise<void> {
    if (await one(tx, `SELECT 1 FROM ${table} WHERE name = ?`, [name])) {
      throw new IamError("conflict", `${what} "${name}" already exists`);
    }
  }

  async #assertKeyFree(tx: Query, accessKeyId: string): Promise<void> {
    if (await one(tx, "SELECT 1 FROM iam_users WHERE access_key_id = ?", [accessKeyId])) {
      throw new IamError("conflict", `Access key id "${accessKeyId}" is already in use`);
    }
  }

  async #groupIds(tx: Query, names: string[]): Promise<string[]> {
    const ids: string[] = [];
    for (const name of names) {
      const row = await one(tx, "SELECT id FROM iam_groups WHERE name = ?", [name]);
      if (!row) throw new IamError("invalid", `Unknown group "${name}"`);
      ids.push(String(row.id));
    }
    return ids;
  }

  async #setMemberships(tx: Query, userId: string, groupIds: string[]): Promise<void> {
    await tx.execute({ sql: "DELETE FROM iam_memberships WHERE user_id = ?", args: [userId] });
    for (const groupId of groupIds) {
      await tx.execute({
        sql: "INSERT INTO iam_memberships (group_id, user_id) VALUES (?, ?)",
        args: [groupId, userId],
      });
    }
  }

  async #requireUser(tx: Query, id: string): Promise<Row> {
    const row = await one(tx, "SELECT * FROM iam_users WHERE id = ?", [id]);
    if (!row) throw notFound("User", id);
    return row;
  }

  async #userWithSecret(tx: Query, id: string): Promise<UserWithSecret> {
    const users = await this.#users(tx, id);
    if (users.length === 0) throw notFound("User", id);
    return users[0];
  }

  async #requireGroupRecord(tx: Query, id: string): Promise<GroupRecord> {
    const groups = await this.#groups(tx, id);
    if (groups.length === 0) throw notFound("Group", id);
    return groups[0];
  }
}

function description_(value: unknown): string | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== "string" || value.length > 1024) {
    throw new IamError("invalid", "description must be a string of at most 1024 characters");
  }
  return value;
}

function notFound(what: string, id: string): IamError {
  return new IamError("not_found", `${what} "${id}" does not exist`);
}

/** The record lists may show: the secret dropped, `has_secret` kept. */
export function withoutSecret(user: UserWithSecret): UserRecord {
  const { secret_access_key: _secret, ...rest } = user;
  return rest;
}
