/**
 * IAM rows in the config database: users, groups and memberships (migration v2). Every change is
 * one transaction that also bumps `meta.iam_version`, so the counter the index reports survives a
 * restart and moves exactly when IAM changed. Inputs are validated by src/iam/model.ts before the
 * transaction starts; names and access keys are checked for uniqueness inside it (calls are
 * serialised, so the check and the write see the same state). Secrets leave the store only from
 * create, rotate and clone (shown once) and from `snapshot()` (the index, for SigV4).
 */
import type { ResultSet, Transaction } from "@libsql/client";
import {
  assertKeyFree,
  assertNameFree,
  bumpVersion,
  groupIdsByName,
  insertGroupRow,
  insertUserRow,
  notFound,
  readGroups,
  readUsers,
  readVersion,
  requireGroupRecord,
  requireUser,
  setMemberships,
  userWithSecret,
} from "./iam-rows.ts";
import type { DbClient } from "./config-db.ts";
import {
  type AuthSource,
  generateAccessKeyId,
  generateSecretAccessKey,
  type GroupRecord,
  IamError,
  type IamSnapshotData,
  type UserRecord,
  type UserWithSecret,
  validateAccessKeyId,
  validateGroupNames,
  validateName,
  validatePermissions,
  validateSecret,
} from "../iam/mod.ts";

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

function bool(value: unknown, what: string): boolean {
  if (typeof value !== "boolean") {
    throw new IamError("invalid", `${what} must be true or false, got ${JSON.stringify(value)}`);
  }
  return value;
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
    return (await this.#db.transaction((tx) => readUsers(tx), "read")).map(withoutSecret);
  }

  async getUser(id: string): Promise<UserRecord> {
    const users = await this.#db.transaction((tx) => readUsers(tx, id), "read");
    if (users.length === 0) throw notFound("User", id);
    return withoutSecret(users[0]);
  }

  async listGroups(): Promise<GroupRecord[]> {
    return await this.#db.transaction((tx) => readGroups(tx), "read");
  }

  async getGroup(id: string): Promise<GroupRecord> {
    const groups = await this.#db.transaction((tx) => readGroups(tx, id), "read");
    if (groups.length === 0) throw notFound("Group", id);
    return groups[0];
  }

  /** Users (with secrets), groups and the version, consistent with each other. */
  snapshot(): Promise<IamSnapshotData> {
    return this.#db.transaction(async (tx) => ({
      version: await readVersion(tx),
      users: await readUsers(tx),
      groups: await readGroups(tx),
    }), "read");
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
      await assertNameFree(tx, "iam_users", "User", name);
      await assertKeyFree(tx, accessKeyId);
      const groupIds = await groupIdsByName(tx, groups);
      const id = crypto.randomUUID();
      const now = this.#now();
      await insertUserRow(tx, {
        id,
        name,
        access_key_id: accessKeyId,
        secret_access_key: secret,
        enabled,
        auth_source: authSource,
        permissions,
      }, now);
      await setMemberships(tx, id, groupIds);
      return await userWithSecret(tx, id);
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
      const current = await requireUser(tx, id);
      if (name !== undefined && name !== current.name) {
        await assertNameFree(tx, "iam_users", "User", name);
      }
      const groupIds = groups === undefined ? undefined : await groupIdsByName(tx, groups);
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
      if (groupIds !== undefined) await setMemberships(tx, id, groupIds);
      return withoutSecret(await userWithSecret(tx, id));
    });
  }

  deleteUser(id: string): Promise<UserRecord> {
    return this.#change(async (tx) => {
      const user = withoutSecret(await userWithSecret(tx, id));
      await tx.execute({ sql: "DELETE FROM iam_memberships WHERE user_id = ?", args: [id] });
      await tx.execute({
        sql: "DELETE FROM iam_external_identities WHERE user_id = ?",
        args: [id],
      });
      await tx.execute({ sql: "DELETE FROM iam_users WHERE id = ?", args: [id] });
      return user;
    });
  }

  /** A fresh key pair; the old one stops working at the next index rebuild. */
  rotateKeys(id: string): Promise<UserWithSecret> {
    return this.#change(async (tx) => {
      await requireUser(tx, id);
      const accessKeyId = generateAccessKeyId();
      await assertKeyFree(tx, accessKeyId);
      await tx.execute({
        sql: `UPDATE iam_users SET access_key_id = ?, secret_access_key = ?, updated_at = ?
          WHERE id = ?`,
        args: [accessKeyId, generateSecretAccessKey(), this.#now(), id],
      });
      return await userWithSecret(tx, id);
    });
  }

  /** A new local user named `name` with new keys, the same permissions, groups and state. */
  cloneUser(id: string, name: unknown): Promise<UserWithSecret> {
    const newName = validateName(name, "User");
    return this.#change(async (tx) => {
      const source = await userWithSecret(tx, id);
      await assertNameFree(tx, "iam_users", "User", newName);
      const accessKeyId = generateAccessKeyId();
      await assertKeyFree(tx, accessKeyId);
      const newId = crypto.randomUUID();
      const now = this.#now();
      await insertUserRow(tx, {
        id: newId,
        name: newName,
        access_key_id: accessKeyId,
        secret_access_key: generateSecretAccessKey(),
        enabled: source.enabled,
        auth_source: "local",
        permissions: source.permissions,
      }, now);
      await tx.execute({
        sql: `INSERT INTO iam_memberships (group_id, user_id)
          SELECT group_id, ? FROM iam_memberships WHERE user_id = ?`,
        args: [newId, id],
      });
      return await userWithSecret(tx, newId);
    });
  }

  // --- groups ---------------------------------------------------------------------------------

  createGroup(input: NewGroup): Promise<GroupRecord> {
    const name = validateName(input.name, "Group");
    const description = description_(input.description);
    const permissions = validatePermissions(input.permissions);
    return this.#change(async (tx) => {
      await assertNameFree(tx, "iam_groups", "Group", name);
      const id = crypto.randomUUID();
      await insertGroupRow(
        tx,
        { id, name, description: description ?? "", permissions },
        this.#now(),
      );
      return await requireGroupRecord(tx, id);
    });
  }

  updateGroup(id: string, patch: GroupPatch): Promise<GroupRecord> {
    const name = patch.name === undefined ? undefined : validateName(patch.name, "Group");
    const description = description_(patch.description);
    const permissions = patch.permissions === undefined
      ? undefined
      : validatePermissions(patch.permissions);
    return this.#change(async (tx) => {
      const current = await requireGroupRecord(tx, id);
      if (name !== undefined && name !== current.name) {
        await assertNameFree(tx, "iam_groups", "Group", name);
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
      return await requireGroupRecord(tx, id);
    });
  }

  deleteGroup(id: string): Promise<GroupRecord> {
    return this.#change(async (tx) => {
      const group = await requireGroupRecord(tx, id);
      await tx.execute({ sql: "DELETE FROM iam_memberships WHERE group_id = ?", args: [id] });
      await tx.execute({
        sql: "DELETE FROM iam_group_mapping_rules WHERE group_id = ?",
        args: [id],
      });
      await tx.execute({ sql: "DELETE FROM iam_groups WHERE id = ?", args: [id] });
      return group;
    });
  }

  /** A new group named `name` with the same description and permissions (no members). */
  cloneGroup(id: string, name: unknown): Promise<GroupRecord> {
    const newName = validateName(name, "Group");
    return this.#change(async (tx) => {
      const source = await requireGroupRecord(tx, id);
      await assertNameFree(tx, "iam_groups", "Group", newName);
      const newId = crypto.randomUUID();
      await insertGroupRow(
        tx,
        {
          id: newId,
          name: newName,
          description: source.description,
          permissions: source.permissions,
        },
        this.#now(),
      );
      return await requireGroupRecord(tx, newId);
    });
  }

  /** Adds the user to the group; a repeat is a no-op that still answers the group. */
  addMember(groupId: string, userId: string): Promise<GroupRecord> {
    return this.#change(async (tx) => {
      await requireGroupRecord(tx, groupId);
      await requireUser(tx, userId);
      await tx.execute({
        sql: "INSERT OR IGNORE INTO iam_memberships (group_id, user_id) VALUES (?, ?)",
        args: [groupId, userId],
      });
      return await requireGroupRecord(tx, groupId);
    });
  }

  removeMember(groupId: string, userId: string): Promise<GroupRecord> {
    return this.#change(async (tx) => {
      await requireGroupRecord(tx, groupId);
      const result: ResultSet = await tx.execute({
        sql: "DELETE FROM iam_memberships WHERE group_id = ? AND user_id = ?",
        args: [groupId, userId],
      });
      if (result.rowsAffected === 0) {
        throw new IamError("not_found", `User "${userId}" is not a member of group "${groupId}"`);
      }
      return await requireGroupRecord(tx, groupId);
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
}

function description_(value: unknown): string | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== "string" || value.length > 1024) {
    throw new IamError("invalid", "description must be a string of at most 1024 characters");
  }
  return value;
}

/** The record lists may show: the secret dropped, `has_secret` kept. */
export function withoutSecret(user: UserWithSecret): UserRecord {
  const { secret_access_key: _secret, ...rest } = user;
  return rest;
}
