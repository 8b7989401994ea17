/**
 * The config database schema as numbered, forward-only migrations. Adding a table family (IAM,
 * jobs, outbox, …) is one new entry at the end of `MIGRATIONS`, never an edit of an applied one:
 * a database remembers which versions it ran in `schema_migrations`, and an older binary refuses
 * a database newer than it knows (SPEC: "forward migration is one-way").
 *
 * Each migration runs in one transaction together with its `schema_migrations` row, so a crash
 * leaves it either applied and recorded or not at all. SQL stays portable (plain SQLite types, no
 * extension functions) so a remote libSQL server can hold the same schema later.
 */
import type { InStatement } from "@libsql/client";

export interface Migration {
  /** 1, 2, 3, … in order, no gaps. */
  version: number;
  /** snake_case, for the log and the `schema_migrations` row. */
  name: string;
  sql: string[];
}

export const MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    name: "sessions_and_meta",
    sql: [
      // Admin sessions. Only a SHA-256 of the cookie token is stored: a copied database file
      // yields no usable cookie. Times are Unix milliseconds.
      `CREATE TABLE sessions (
        id TEXT PRIMARY KEY,
        token_hash TEXT NOT NULL UNIQUE,
        user_name TEXT NOT NULL,
        admin INTEGER NOT NULL,
        client_ip TEXT NOT NULL,
        created_at INTEGER NOT NULL,
        expires_at INTEGER NOT NULL
      )`,
      `CREATE INDEX sessions_expires_at ON sessions (expires_at)`,
      // Small facts about the database itself (for example a pending recovery).
      `CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)`,
    ],
  },
  {
    version: 2,
    name: "iam",
    sql: [
      // IAM users. The secret is stored as is: the whole file is encrypted (libSQL encryptionKey)
      // and SigV4 needs the plain secret to verify. Permissions are a JSON list validated by
      // src/iam/model.ts before every write. Times are Unix milliseconds.
      `CREATE TABLE iam_users (
        id TEXT PRIMARY KEY,
        name TEXT NOT NULL UNIQUE,
        access_key_id TEXT NOT NULL UNIQUE,
        secret_access_key TEXT NOT NULL,
        enabled INTEGER NOT NULL,
        auth_source TEXT NOT NULL,
        permissions TEXT NOT NULL,
        created_at INTEGER NOT NULL,
        updated_at INTEGER NOT NULL
      )`,
      `CREATE TABLE iam_groups (
        id TEXT PRIMARY KEY,
        name TEXT NOT NULL UNIQUE,
        description TEXT NOT NULL,
        permissions TEXT NOT NULL,
        created_at INTEGER NOT NULL,
        updated_at INTEGER NOT NULL
      )`,
      // Memberships are removed by the store in the same transaction as the user or group (no
      // reliance on SQLite's per-connection foreign_keys pragma).
      `CREATE TABLE iam_memberships (
        group_id TEXT NOT NULL,
        user_id TEXT NOT NULL,
        PRIMARY KEY (group_id, user_id)
      )`,
      `CREATE INDEX iam_memberships_user ON iam_memberships (user_id)`,
      // The IAM version: bumped in the transaction of every IAM change, read by the index.
      `INSERT INTO meta (key, value) VALUES ('iam_version', '0')`,
    ],
  },
  {
    version: 3,
    name: "jobs",
    sql: [
      // One row per job of the unified jobs surface (src/jobs/). `id` is the public id
      // (`maintenance:<n>`, later `replication:<name>`, `lifecycle:<name>`); `type` the job's work
      // within its kind (`reencrypt`, `migrate`); `scope` and `progress` are JSON; `state` is the
      // kind's private resume state (phase, cursor, parameters). Times are Unix milliseconds.
      `CREATE TABLE jobs (
        id TEXT PRIMARY KEY,
        kind TEXT NOT NULL,
        type TEXT NOT NULL,
        bucket TEXT,
        scope TEXT NOT NULL,
        status TEXT NOT NULL,
        paused INTEGER NOT NULL DEFAULT 0,
        cancel_requested INTEGER NOT NULL DEFAULT 0,
        progress TEXT NOT NULL,
        state TEXT NOT NULL,
        error TEXT,
        created_by TEXT NOT NULL,
        created_at INTEGER NOT NULL,
        started_at INTEGER,
        finished_at INTEGER,
        updated_at INTEGER NOT NULL
      )`,
      `CREATE INDEX jobs_kind_status ON jobs (kind, status)`,
      `CREATE INDEX jobs_bucket ON jobs (bucket)`,
      // Runs of recurring jobs (replication, lifecycle). A maintenance one-off has no run rows: its
      // one run is synthesized from the job row.
      `CREATE TABLE job_runs (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        job_id TEXT NOT NULL,
        triggered_by TEXT NOT NULL,
        status TEXT NOT NULL,
        counters TEXT NOT NULL,
        error TEXT,
        started_at INTEGER NOT NULL,
        finished_at INTEGER
      )`,
      `CREATE INDEX job_runs_job ON job_runs (job_id, id)`,
      // Per-object failures, newest read first; bounded per job by the store.
      `CREATE TABLE job_failures (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        job_id TEXT NOT NULL,
        run_id INTEGER,
        bucket TEXT NOT NULL,
        object_key TEXT NOT NULL,
        error_message TEXT NOT NULL,
        occurred_at INTEGER NOT NULL
      )`,
      `CREATE INDEX job_failures_job ON job_failures (job_id, id)`,
      // The last maintenance number handed out (`maintenance:<n>` never repeats).
      `INSERT INTO meta (key, value) VALUES ('maintenance_seq', '0')`,
    ],
  },
  {
    version: 4,
    name: "event_outbox",
    sql: [
      // The durable record of every object mutation (src/events/). `id` is the monotonic cursor
      // (AUTOINCREMENT: never reused, even after the newest rows are pruned); `event_id` is the
      // id receivers dedupe on; `payload` the event as JSON. Delivery state: `status` pending |
      // delivering | delivered | failed | recorded (appended while delivery was off),
      // `delivered_targets` a JSON list of endpoints that already took the event. Times are Unix
      // milliseconds. No index on the random `event_id` (a UUID): random b-tree inserts were the
      // dearest part of an append, and nothing looks rows up by it.
      `CREATE TABLE event_outbox (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        event_id TEXT NOT NULL,
        kind TEXT NOT NULL,
        bucket TEXT NOT NULL,
        object_key TEXT NOT NULL,
        payload TEXT NOT NULL,
        occurred_at INTEGER NOT NULL,
        status TEXT NOT NULL,
        attempts INTEGER NOT NULL DEFAULT 0,
        next_attempt_at INTEGER NOT NULL DEFAULT 0,
        claimed_at INTEGER,
        claim_token TEXT,
        delivered_targets TEXT NOT NULL DEFAULT '[]',
        last_error TEXT,
        finished_at INTEGER,
        updated_at INTEGER NOT NULL
      )`,
      `CREATE INDEX event_outbox_due ON event_outbox (status, next_attempt_at, id)`,
      `CREATE INDEX event_outbox_finished ON event_outbox (status, finished_at)`,
      `CREATE INDEX event_outbox_occurred ON event_outbox (occurred_at)`,
    ],
  },
  {
    version: 5,
    name: "iam_providers",
    sql: [
      // OIDC providers and group mapping rules: stored records (declarative YAML or backup);
      // the OIDC login that would use them is not built. The client secret sits in the
      // encrypted file like the users' secrets.
      `CREATE TABLE iam_auth_providers (
        id TEXT PRIMARY KEY,
        name TEXT NOT NULL UNIQUE,
        provider_type TEXT NOT NULL,
        enabled INTEGER NOT NULL,
        priority INTEGER NOT NULL,
        display_name TEXT,
        client_id TEXT NOT NULL,
        client_secret TEXT,
        issuer_url TEXT NOT NULL,
        scopes TEXT NOT NULL,
        created_at INTEGER NOT NULL,
        updated_at INTEGER NOT NULL
      )`,
      // Rules keep the YAML order in `position`; they are wiped and rebuilt as a whole.
      // provider_id NULL = every provider.
      `CREATE TABLE iam_group_mapping_rules (
        id TEXT PRIMARY KEY,
        position INTEGER NOT NULL,
        provider_id TEXT,
        priority INTEGER NOT NULL,
        match_type TEXT NOT NULL,
        match_field TEXT NOT NULL,
        match_value TEXT NOT NULL,
        group_id TEXT NOT NULL
      )`,
      // Bindings of IdP subjects to users (written by an OAuth callback or an import), unique
      // per provider. Removed with their user or provider, in the same transaction.
      `CREATE TABLE iam_external_identities (
        id TEXT PRIMARY KEY,
        user_id TEXT NOT NULL,
        provider_id TEXT NOT NULL,
        subject TEXT NOT NULL,
        email TEXT,
        claims TEXT NOT NULL,
        created_at INTEGER NOT NULL,
        UNIQUE (provider_id, subject)
      )`,
      `CREATE INDEX iam_external_identities_user ON iam_external_identities (user_id)`,
    ],
  },
  {
    version: 6,
    name: "rule_state",
    sql: [
      // Replication and lifecycle rules keep their state row in `jobs` (id `replication:<name>`,
      // `lifecycle:<name>`; `state` holds the resume cursor, next due time and lifetime
      // counters), their runs in `job_runs` and failures in `job_failures`. What they add: the
      // node-local leader lease of a rule (one runner at a time; `token` changes with every
      // acquisition so a holder that lost its lease cannot renew it by accident).
      `CREATE TABLE job_leases (
        job_id TEXT PRIMARY KEY,
        holder TEXT NOT NULL,
        token TEXT NOT NULL,
        acquired_at INTEGER NOT NULL,
        expires_at INTEGER NOT NULL
      )`,
      // The replication event consumer's position in event_outbox (the last id it handled).
      `INSERT INTO meta (key, value) VALUES ('replication_outbox_cursor', '0')`,
    ],
  },
  {
    version: 7,
    name: "bucket_usage",
    sql: [
      // The per-bucket usage counters (src/objects/usage.ts), written in batches by
      // src/objects/usage-flusher.ts so a restart does not rescan every bucket. One row per bucket
      // svc has counted; `last_scan_at` (Unix ms) is when the last full scan (or the creation of
      // the empty bucket through svc) established the totals the inline updates build on.
      `CREATE TABLE bucket_usage (
        bucket TEXT PRIMARY KEY,
        object_count INTEGER NOT NULL,
        logical_bytes INTEGER NOT NULL,
        stored_bytes INTEGER NOT NULL,
        last_scan_at INTEGER NOT NULL,
        updated_at INTEGER NOT NULL
      )`,
    ],
  },
  {
    version: 8,
    name: "session_keys_verified_email",
    sql: [
      // The access key an IAM user's session was opened under: rotating the user's keys ends
      // the session at its next request, like disabling the user. NULL for sessions of no IAM
      // user (the bootstrap password, open access) and for rows older than this column.
      `ALTER TABLE sessions ADD COLUMN access_key_id TEXT`,
      // Email mapping rules need the token's email_verified: true unless this is 0.
      `ALTER TABLE iam_group_mapping_rules
        ADD COLUMN require_verified_email INTEGER NOT NULL DEFAULT 1`,
    ],
  },
  {
    version: 9,
    name: "event_journal",
    sql: [
      // Events written before the change they describe (src/events/outbox-writer.ts): a job's
      // removal journals its events durably, removes, then moves them into event_outbox in the
      // writer's order (one transaction deletes the journal row). A row left by a crash is
      // settled at the next start: the object still there as `etag` means the removal did not
      // happen (the row goes), else it did (its events are appended). `payload` is a JSON list
      // of events; times are Unix milliseconds.
      `CREATE TABLE event_journal (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        bucket TEXT NOT NULL,
        object_key TEXT NOT NULL,
        etag TEXT NOT NULL,
        payload TEXT NOT NULL,
        created_at INTEGER NOT NULL
      )`,
    ],
  },
  {
    version: 10,
    name: "session_revocations",
    sql: [
      // Admin sessions became signed cookies that carry their own record (any instance of a
      // fleet verifies them), so no row per session is kept. What a database holds instead is
      // what ended sessions early, synced to the other instances with the IAM snapshot
      // (db/iam-snapshot.ts): `session:<id>` (a logout; kept until that session's `expires_at`),
      // `user:<name>` and `all` (sessions created before `not_before` are void; `expires_at`
      // NULL: kept). Times are Unix milliseconds.
      `DROP TABLE sessions`,
      `CREATE TABLE session_revocations (
        subject TEXT PRIMARY KEY,
        not_before INTEGER NOT NULL,
        expires_at INTEGER
      )`,
    ],
  },
];

/** The schema version this build creates and understands. */
export function latestVersion(migrations: readonly Migration[] = MIGRATIONS): number {
  return migrations.at(-1)?.version ?? 0;
}

/** Throws unless versions run 1, 2, 3, … without gaps or repeats. */
export function checkMigrationList(migrations: readonly Migration[]): void {
  migrations.forEach((migration, index) => {
    if (migration.version !== index + 1) {
      throw new Error(
        `Migration "${migration.name}" has version ${migration.version}; expected ${index + 1}`,
      );
    }
    if (migration.sql.length === 0) {
      throw new Error(`Migration ${migration.version} "${migration.name}" has no SQL`);
    }
  });
}

/** What a migration runner needs of a database. */
export interface MigrationTarget {
  execute(stmt: InStatement): Promise<{ rows: ArrayLike<Record<string, unknown>> }>;
  batch(stmts: InStatement[], mode: "write"): Promise<unknown>;
}

const CREATE_MIGRATIONS_TABLE = `CREATE TABLE IF NOT EXISTS schema_migrations (
  version INTEGER PRIMARY KEY,
  name TEXT NOT NULL,
  applied_at TEXT NOT NULL
)`;

/** The highest applied version (0 for a fresh database). */
export async function appliedVersion(db: MigrationTarget): Promise<number> {
  await db.execute(CREATE_MIGRATIONS_TABLE);
  const result = await db.execute("SELECT MAX(version) AS version FROM schema_migrations");
  return Number(result.rows[0]?.version ?? 0);
}

/**
 * Brings the database to the newest version; returns the versions applied now. Refuses a
 * database whose version this build does not know (written by a newer svc).
 */
export async function migrate(
  db: MigrationTarget,
  migrations: readonly Migration[] = MIGRATIONS,
  now: () => number = Date.now,
): Promise<number[]> {
  checkMigrationList(migrations);
  const current = await appliedVersion(db);
  const latest = latestVersion(migrations);
  if (current > latest) {
    throw new Error(
      `Config database schema is v${current}, newer than this build supports (v${latest}); ` +
        `run a newer svc or restore a backup`,
    );
  }
  const applied: number[] = [];
  for (const migration of migrations.slice(current)) {
    await db.batch([
      ...migration.sql,
      {
        sql: "INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)",
        args: [migration.version, migration.name, new Date(now()).toISOString()],
      },
    ], "write");
    applied.push(migration.version);
  }
  return applied;
}
