/**
 * External authentication in the config database (migration v5 tables): OIDC providers, group
 * mapping rules and the external identities an OAuth callback binds to users. Every change runs
 * in one transaction and moves `meta.iam_version`, like the IAM store, so the index and config
 * sync follow. Client secrets are stored with the encrypted database and never listed.
 */
import type { Transaction } from "@libsql/client";
import {
  type DesiredProvider,
  generateAccessKeyId,
  generateSecretAccessKey,
  IamError,
  type MappingRule,
  parseProvider,
  parseRule,
  validateName,
} from "../iam/mod.ts";
import type { DbClient } from "./config-db.ts";
import {
  bumpVersion,
  groupIdsByName,
  insertUserRow,
  one,
  type Row,
  setMemberships,
} from "./iam-rows.ts";

export interface ProviderRecord extends Omit<DesiredProvider, "client_secret"> {
  id: string;
  has_secret: boolean;
  created_at: number;
  updated_at: number;
}

export interface RuleRecord extends MappingRule {
  id: string;
}

export interface IdentityRecord {
  id: string;
  user: string;
  provider: string;
  subject: string;
  email: string | null;
  created_at: number;
}

function providerOf(
  row: Row,
): DesiredProvider & { id: string; created_at: number; updated_at: number } {
  return {
    id: String(row.id),
    name: String(row.name),
    provider_type: "oidc",
    enabled: Number(row.enabled) === 1,
    priority: Number(row.priority),
    display_name: row.display_name === null ? null : String(row.display_name),
    client_id: String(row.client_id),
    client_secret: row.client_secret === null ? null : String(row.client_secret),
    issuer_url: String(row.issuer_url),
    scopes: String(row.scopes),
    created_at: Number(row.created_at),
    updated_at: Number(row.updated_at),
  };
}

function listed(provider: ReturnType<typeof providerOf>): ProviderRecord {
  const { client_secret, ...rest } = provider;
  return { ...rest, has_secret: client_secret !== null && client_secret !== "" };
}

export class ExtAuthStore {
  readonly #db: DbClient;
  readonly #now: () => number;

  constructor(db: DbClient, options: { now?: () => number } = {}) {
    this.#db = db;
    this.#now = options.now ?? Date.now;
  }

  #change<T>(fn: (tx: Transaction) => Promise<T>): Promise<T> {
    return this.#db.transaction(async (tx) => {
      const result = await fn(tx);
      await bumpVersion(tx);
      return result;
    });
  }

  async listProviders(): Promise<ProviderRecord[]> {
    const rows = await this.#db.execute("SELECT * FROM iam_auth_providers ORDER BY priority, name");
    return rows.rows.map((row) => listed(providerOf(row)));
  }

  /** A provider with its secret (the OAuth flow), by name; null when there is none. */
  async providerByName(name: string) {
    const rows = await this.#db.execute({
      sql: "SELECT * FROM iam_auth_providers WHERE name = ?",
      args: [name],
    });
    return rows.rows.length === 0 ? null : providerOf(rows.rows[0]);
  }

  async #providerRow(tx: Transaction, id: string) {
    const row = await one(tx, "SELECT * FROM iam_auth_providers WHERE id = ?", [id]);
    if (!row) throw new IamError("not_found", `No auth provider with id "${id}"`);
    return providerOf(row);
  }

  createProvider(input: Record<string, unknown>): Promise<ProviderRecord> {
    const provider = parseProvider(input, "provider");
    return this.#change(async (tx) => {
      if (await one(tx, "SELECT 1 FROM iam_auth_providers WHERE name = ?", [provider.name])) {
        throw new IamError("conflict", `An auth provider named "${provider.name}" exists`);
      }
      const id = crypto.randomUUID();
      const now = this.#now();
      await tx.execute({
        sql: `INSERT INTO iam_auth_providers (id, name, provider_type, enabled, priority,
          display_name, client_id, client_secret, issuer_url, scopes, created_at, updated_at)
          VALUES (?, ?, 'oidc', ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
        args: [
          id,
          provider.name,
          provider.enabled ? 1 : 0,
          provider.priority,
          provider.display_name,
          provider.client_id,
          provider.client_secret,
          provider.issuer_url,
          provider.scopes,
          now,
          now,
        ],
      });
      return listed(await this.#providerRow(tx, id));
    });
  }

  /** Merges `patch` into the provider; an absent or null `client_secret` keeps the stored one. */
  updateProvider(id: string, patch: Record<string, unknown>): Promise<ProviderRecord> {
    return this.#change(async (tx) => {
      const current = await this.#providerRow(tx, id);
      const { id: _id, created_at: _c, updated_at: _u, ...fields } = current;
      const next = parseProvider({ ...fields, ...patch }, "provider");
      const secret = patch.client_secret === undefined || patch.client_secret === null
        ? current.client_secret
        : next.client_secret;
      if (next.name !== current.name) {
        const taken = await one(tx, "SELECT 1 FROM iam_auth_providers WHERE name = ?", [next.name]);
        if (taken) throw new IamError("conflict", `An auth provider named "${next.name}" exists`);
      }
      await tx.execute({
        sql: `UPDATE iam_auth_providers SET name = ?, enabled = ?, priority = ?, display_name = ?,
          client_id = ?, client_secret = ?, issuer_url = ?, scopes = ?, updated_at = ?
          WHERE id = ?`,
        args: [
          next.name,
          next.enabled ? 1 : 0,
          next.priority,
          next.display_name,
          next.client_id,
          secret,
          next.issuer_url,
          next.scopes,
          this.#now(),
          id,
        ],
      });
      return listed(await this.#providerRow(tx, id));
    });
  }

  /** Removes the provider with its rules and identities (their users stay). */
  deleteProvider(id: string): Promise<void> {
    return this.#change(async (tx) => {
      await this.#providerRow(tx, id);
      for (const table of ["iam_external_identities", "iam_group_mapping_rules"]) {
        await tx.execute({ sql: `DELETE FROM ${table} WHERE provider_id = ?`, args: [id] });
      }
      await tx.execute({ sql: "DELETE FROM iam_auth_providers WHERE id = ?", args: [id] });
    });
  }

  listRules(): Promise<RuleRecord[]> {
    return this.#rules(this.#db);
  }

  async #ruleArgs(tx: Transaction, input: Record<string, unknown>) {
    const rule = parseRule(input, "rule");
    const [groupId] = await groupIdsByName(tx, [rule.group]);
    let providerId: string | null = null;
    if (rule.provider !== null) {
      const row = await one(tx, "SELECT id FROM iam_auth_providers WHERE name = ?", [
        rule.provider,
      ]);
      if (!row) throw new IamError("invalid", `Unknown auth provider "${rule.provider}"`);
      providerId = String(row.id);
    }
    // The row's columns from provider_id to require_verified_email, in table order.
    const columns = [
      providerId,
      rule.priority,
      rule.match_type,
      rule.match_field,
      rule.match_value,
      groupId,
      rule.require_verified_email ? 1 : 0,
    ];
    return { rule, columns };
  }

  createRule(input: Record<string, unknown>): Promise<RuleRecord> {
    return this.#change(async (tx) => {
      const { rule, columns } = await this.#ruleArgs(tx, input);
      const position = await one(
        tx,
        "SELECT COALESCE(MAX(position), -1) + 1 AS next FROM iam_group_mapping_rules",
        [],
      );
      const id = crypto.randomUUID();
      await tx.execute({
        sql: `INSERT INTO iam_group_mapping_rules (id, position, provider_id, priority, match_type,
          match_field, match_value, group_id, require_verified_email)
          VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
        args: [id, Number(position?.next ?? 0), ...columns],
      });
      return { id, ...rule };
    });
  }

  updateRule(id: string, patch: Record<string, unknown>): Promise<RuleRecord> {
    return this.#change(async (tx) => {
      const current = (await this.#rules(tx)).find((rule) => rule.id === id);
      if (!current) throw new IamError("not_found", `No mapping rule with id "${id}"`);
      const { id: _id, ...fields } = current;
      const { rule, columns } = await this.#ruleArgs(tx, { ...fields, ...patch });
      await tx.execute({
        sql: `UPDATE iam_group_mapping_rules SET provider_id = ?, priority = ?, match_type = ?,
          match_field = ?, match_value = ?, group_id = ?, require_verified_email = ? WHERE id = ?`,
        args: [...columns, id],
      });
      return { id, ...rule };
    });
  }

  deleteRule(id: string): Promise<void> {
    return this.#change(async (tx) => {
      const gone = await tx.execute({
        sql: "DELETE FROM iam_group_mapping_rules WHERE id = ?",
        args: [id],
      });
      if (gone.rowsAffected === 0) {
        throw new IamError("not_found", `No mapping rule with id "${id}"`);
      }
    });
  }

  async #rules(q: Pick<Transaction, "execute">): Promise<RuleRecord[]> {
    const rows = await q.execute(
      `SELECT r.*, p.name AS provider_name, g.name AS group_name FROM iam_group_mapping_rules r
        LEFT JOIN iam_auth_providers p ON p.id = r.provider_id
        JOIN iam_groups g ON g.id = r.group_id ORDER BY r.priority, r.position`,
    );
    return rows.rows.map((row) => ({
      id: String(row.id),
      provider: row.provider_name === null ? null : String(row.provider_name),
      priority: Number(row.priority),
      match_type: String(row.match_type),
      match_field: String(row.match_field),
      match_value: String(row.match_value),
      group: String(row.group_name),
      require_verified_email: Number(row.require_verified_email) !== 0,
    }));
  }

  async listIdentities(): Promise<IdentityRecord[]> {
    const rows = await this.#db.execute(
      `SELECT i.id, i.subject, i.email, i.created_at, u.name AS user_name, p.name AS provider_name
        FROM iam_external_identities i JOIN iam_users u ON u.id = i.user_id
        JOIN iam_auth_providers p ON p.id = i.provider_id ORDER BY p.name, u.name`,
    );
    return rows.rows.map((row) => ({
      id: String(row.id),
      user: String(row.user_name),
      provider: String(row.provider_name),
      subject: String(row.subject),
      email: row.email === null ? null : String(row.email),
      created_at: Number(row.created_at),
    }));
  }

  /**
   * The user bound to (provider, subject), creating it when there is none: a new external user
   * named `name` (or `name-2`, … when taken) with fresh keys and `groups`, bound in the same
   * transaction. Answers the user's name and whether it was created now.
   */
  signIn(input: {
    providerId: string;
    subject: string;
    email: string | null;
    claims: Record<string, unknown>;
    name: string;
    groups: string[];
  }): Promise<{ user: string; created: boolean }> {
    return this.#db.transaction(async (tx) => {
      const bound = await one(
        tx,
        `SELECT u.name FROM iam_external_identities i JOIN iam_users u ON u.id = i.user_id
          WHERE i.provider_id = ? AND i.subject = ?`,
        [input.providerId, input.subject],
      );
      if (bound) return { user: String(bound.name), created: false };
      if (input.groups.length === 0) {
        throw new IamError("invalid", "No group mapping rule matches this identity");
      }
      const base = validateName(input.name, "User");
      let name = base;
      for (let n = 2; await one(tx, "SELECT 1 FROM iam_users WHERE name = ?", [name]); n++) {
        name = `${base}-${n}`.slice(-64);
      }
      const userId = crypto.randomUUID();
      const now = this.#now();
      await insertUserRow(tx, {
        id: userId,
        name,
        access_key_id: generateAccessKeyId(),
        secret_access_key: generateSecretAccessKey(),
        enabled: true,
        auth_source: "external",
        permissions: [],
      }, now);
      await setMemberships(tx, userId, await groupIdsByName(tx, input.groups));
      await tx.execute({
        sql: `INSERT INTO iam_external_identities (id, user_id, provider_id, subject, email, claims,
          created_at) VALUES (?, ?, ?, ?, ?, ?, ?)`,
        args: [
          crypto.randomUUID(),
          userId,
          input.providerId,
          input.subject,
          input.email,
          JSON.stringify(input.claims),
          now,
        ],
      });
      await bumpVersion(tx);
      return { user: name, created: true };
    });
  }

  /**
   * Re-evaluates the rules for every external identity and sets its user's memberships to what
   * they map to (`groupsFor`). Answers how many users changed.
   */
  syncMemberships(
    groupsFor: (provider: string, claims: Record<string, unknown>) => string[],
  ): Promise<number> {
    return this.#change(async (tx) => {
      const rows = await tx.execute(
        `SELECT i.user_id, i.claims, p.name AS provider_name,
          (SELECT GROUP_CONCAT(g.name, char(10)) FROM iam_memberships m
            JOIN iam_groups g ON g.id = m.group_id WHERE m.user_id = i.user_id) AS current
          FROM iam_external_identities i JOIN iam_auth_providers p ON p.id = i.provider_id`,
      );
      let changed = 0;
      for (const row of rows.rows) {
        const claims = JSON.parse(String(row.claims)) as Record<string, unknown>;
        const wanted = groupsFor(String(row.provider_name), claims).sort();
        const current = row.current === null ? [] : String(row.current).split("\n").sort();
        if (JSON.stringify(wanted) === JSON.stringify(current)) continue;
        await setMemberships(tx, String(row.user_id), await groupIdsByName(tx, wanted));
        changed++;
      }
      return changed;
    });
  }
}
