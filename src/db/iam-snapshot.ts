/**
 * The IAM part of the config database as a file another instance can adopt (config sync,
 * `advanced.config_sync_bucket`): a copy of the database, encrypted with the same key, keeping the
 * IAM tables, the session revocations and the IAM version only (jobs, the event outbox, usage
 * counters and leases stay node-local). Adopting one replaces this instance's IAM rows with the
 * copy's and merges its session revocations into this instance's (revocations only grow), in one
 * transaction; the copy must open with this instance's key (same bootstrap password hash) and
 * carry this schema version or an older one with the same IAM tables (a snapshot from before
 * session revocations travelled: none merged), else nothing changes.
 */
import type { Client } from "@libsql/client";
import type { ConfigDb } from "./config-db.ts";
import { removeDatabase } from "./db-files.ts";
import { appliedVersion } from "./migrations.ts";
import { type Revocation, toRevocation, upsertRevocation } from "./session-store.ts";
import { assertNotBootstrapKey } from "../iam/mod.ts";

/** Parents before children: inserts run in this order, deletes in reverse. */
export const IAM_TABLES = [
  "iam_users",
  "iam_groups",
  "iam_memberships",
  "iam_auth_providers",
  "iam_group_mapping_rules",
  "iam_external_identities",
] as const;

/** Session revocations travel with IAM (session-store.ts); merged on adoption, not replaced. */
const REVOCATIONS = "session_revocations";
const KEPT = new Set<string>([...IAM_TABLES, REVOCATIONS, "meta", "schema_migrations"]);
/**
 * The oldest schema version whose snapshot is adopted: the IAM tables are the same since it
 * (migration 10 added only the session revocations). Raise it when a migration changes them.
 */
export const OLDEST_ADOPTABLE_VERSION = 9;

/** What adopting a snapshot did. */
export interface Adopted {
  users: number;
  /** Session revocations this instance held that the snapshot lacked: publish them again. */
  revocationsAhead: boolean;
}

/** Whether `ours` holds a live revocation `theirs` lacks or has older (expired ones: no matter). */
function revocationsAhead(ours: Revocation[], theirs: Revocation[], now: number): boolean {
  const known = new Map(theirs.map((row) => [row.subject, row]));
  return ours.some((row) => {
    if (row.expiresAt !== null && row.expiresAt <= now) return false;
    const other = known.get(row.subject);
    return other === undefined || other.notBefore < row.notBefore;
  });
}

/** Writes the IAM snapshot of `db` to `path` (replacing a file there). */
export async function writeIamSnapshot(db: ConfigDb, path: string): Promise<void> {
  await removeDatabase(path);
  await db.vacuumInto(path);
  const copy = db.openSibling(path);
  try {
    const tables = await copy.execute(
      "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'",
    );
    for (const row of tables.rows) {
      const name = String(row.name);
      if (!KEPT.has(name)) await copy.execute(`DROP TABLE "${name}"`);
    }
    await copy.execute("DELETE FROM meta WHERE key <> 'iam_version'");
    await copy.execute("VACUUM");
  } finally {
    copy.close();
  }
}

export class SnapshotMismatch extends Error {}

async function readRows(client: Client, table: string) {
  return (await client.execute(`SELECT * FROM "${table}"`)).rows;
}

/**
 * Replaces the IAM rows of `db` with those of the snapshot at `path`. Throws SnapshotMismatch when
 * the file does not open with this database's key or has another schema version, and IamError
 * when a user of the copy holds `bootstrapKeyId` (this instance's `access.access_key_id`: the
 * rule every user-writing path shares, iam/model.ts); nothing changes then.
 */
export async function adoptIamSnapshot(
  db: ConfigDb,
  path: string,
  bootstrapKeyId?: string,
): Promise<Adopted> {
  const copy = db.openSibling(path);
  let rows: Map<string, Awaited<ReturnType<typeof readRows>>>;
  let version: string | null;
  let revocations: Revocation[];
  try {
    let theirs: number;
    try {
      theirs = await appliedVersion(copy);
    } catch (err) {
      throw new SnapshotMismatch(
        `The synced config database does not open with this instance's key (is the bootstrap ` +
          `password hash the same on every instance?): ${(err as Error).message}`,
      );
    }
    const ours = await db.schemaVersion();
    if (theirs > ours || theirs < OLDEST_ADOPTABLE_VERSION) {
      throw new SnapshotMismatch(
        `The synced config database has schema version ${theirs}, this instance ${ours}: ` +
          `run the same svc version on every instance`,
      );
    }
    rows = new Map();
    for (const table of IAM_TABLES) rows.set(table, await readRows(copy, table));
    const hasRevocations = await copy.execute({
      sql: "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?",
      args: [REVOCATIONS],
    });
    revocations = hasRevocations.rows.length === 0
      ? []
      : (await readRows(copy, REVOCATIONS)).map((row) =>
        toRevocation(row as unknown as Record<string, unknown>)
      );
    for (const user of rows.get("iam_users")!) {
      assertNotBootstrapKey(
        { name: String(user.name), access_key_id: String(user.access_key_id) },
        bootstrapKeyId,
        `Synced user "${String(user.name)}"`,
      );
    }
    const meta = await copy.execute("SELECT value FROM meta WHERE key = 'iam_version'");
    version = meta.rows.length > 0 ? String(meta.rows[0].value) : null;
  } finally {
    copy.close();
  }
  const ahead = await db.transaction(async (tx) => {
    const ours = (await tx.execute(`SELECT * FROM "${REVOCATIONS}"`)).rows.map((row) =>
      toRevocation(row as unknown as Record<string, unknown>)
    );
    for (const row of revocations) await tx.execute(upsertRevocation(row));
    for (const table of [...IAM_TABLES].reverse()) await tx.execute(`DELETE FROM "${table}"`);
    for (const table of IAM_TABLES) {
      for (const row of rows.get(table)!) {
        const columns = Object.keys(row);
        await tx.execute({
          sql: `INSERT INTO "${table}" (${columns.map((c) => `"${c}"`).join(", ")}) VALUES (${
            columns.map(() => "?").join(", ")
          })`,
          args: columns.map((column) => row[column] as never),
        });
      }
    }
    // Past both versions: the index holder never swaps in an older version than it holds.
    await tx.execute({
      sql: "UPDATE meta SET value = CAST(MAX(CAST(value AS INTEGER), ?) + 1 AS TEXT) " +
        "WHERE key = 'iam_version'",
      args: [Number(version ?? 0)],
    });
    return revocationsAhead(ours, revocations, Date.now());
  });
  return { users: rows.get("iam_users")!.length, revocationsAhead: ahead };
}
