/**
 * The config database: a libSQL file `<state dir>/config.db`, encrypted at rest with a key
 * derived from the bootstrap password hash (db-key.ts), migrated at open (migrations.ts).
 *
 * Wrong hash at boot. A file the derived key cannot open (SQLITE_NOTADB) is moved aside as
 * `config.db.mismatch-<time>` (never deleted), svc starts on a fresh database and `state` is
 * `{status: "mismatch", asidePath}` until `acknowledgeRecovery()`; the marker lives in the fresh
 * database's `meta` table, so a restart does not forget it. A later boot with a hash that opens
 * one of the aside files (the operator fixed the variable) restores that file and moves the
 * then-current one aside. Any other open error (I/O, permissions, a directory in the way) is
 * thrown: it is never read as "wrong key", which would move a healthy database aside.
 *
 * Rekey (password change), crash-safe by ordering:
 *   1. `VACUUM INTO config.db.rekey` under the new key (a consistent copy), fsync it;
 *   2. the caller stores the new hash (its commit point);
 *   3. close the old client, rename the copy over `config.db`, open a client with the new key.
 * A boot that finds `config.db.rekey` opening with the current hash completes step 3; a copy
 * that does not open was never committed and is removed (config.db still opens with the old
 * hash, which is the one stored). Calls run one at a time through a queue (serial-queue.ts, which
 * says why); a rekey is one entry of it, so calls behind it run on the new client and none ever
 * sees a closed one.
 */
import type { Client, InStatement, ResultSet, Transaction, TransactionMode } from "@libsql/client";
import { getLogger } from "../observability/mod.ts";
import { fsyncDirectoryNow } from "../lib/mod.ts";
import { configDbKey } from "./db-key.ts";
import { closeWal, type Durability, mayWrite, openClient, useWal, WalSync } from "./wal-sync.ts";
import {
  DB_FILE,
  exists,
  fsyncFile,
  keyedFileUri,
  listAside,
  moveAside,
  moveDatabase,
  moveDatabaseSync,
  REKEY_FILE,
  removeDatabase,
} from "./db-files.ts";
import { appliedVersion, migrate, type Migration, MIGRATIONS } from "./migrations.ts";
import { SerialQueue } from "./serial-queue.ts";
import { type OpenFailure, openFailureOf, recordKeyCheck } from "./key-check.ts";

const log = getLogger("svc::db");

/** `meta` key holding the aside path while a recovery is pending. */
const RECOVERY_KEY = "recovery_pending_aside";

export type DbState = { status: "ok" } | { status: "mismatch"; asidePath: string };

export interface OpenConfigDbOptions {
  /** The state directory (e.g. `<data>/.svc`); created 0700 when missing. */
  dir: string;
  /** The bootstrap password's bcrypt hash; the encryption key derives from it. */
  passwordHash: string;
  /** Clock (ms), for aside file names and migration times. */
  now?: () => number;
  /** The migration list (tests); default MIGRATIONS. */
  migrations?: readonly Migration[];
}

/**
 * What stores use: one statement, an atomic batch, or an interactive transaction. Writes resolve
 * once synced to disk, or for a batch with `durability: "committed"` once committed (wal-sync.ts).
 */
export interface DbClient {
  execute(stmt: InStatement): Promise<ResultSet>;
  batch(
    stmts: InStatement[],
    mode?: TransactionMode,
    durability?: Durability,
  ): Promise<ResultSet[]>;
  /**
   * Runs `fn` in a transaction: committed when it returns, rolled back when it throws. Other calls
   * wait until it ends, so inside `fn` query through `tx` only (calling the client deadlocks).
   */
  transaction<T>(fn: (tx: Transaction) => Promise<T>, mode?: TransactionMode): Promise<T>;
}

function errorCode(err: unknown): string | undefined {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === "string" ? code : undefined;
}

/**
 * Opens `path` with `key` and reads its schema: true when it opens, false when the key is wrong
 * (SQLITE_NOTADB; also what a file that is not a database gives). `alsoWrongKey` lists further
 * codes to read as "does not open" (for an uncommitted rekey copy). Anything else is thrown.
 */
async function opensWith(path: string, key: string, alsoWrongKey: string[] = []): Promise<boolean> {
  let client: Client | undefined;
  try {
    client = openClient(path, key);
    await client.execute("SELECT count(*) FROM sqlite_master");
    return true;
  } catch (err) {
    const code = errorCode(err);
    if (code === "SQLITE_NOTADB" || (code !== undefined && alsoWrongKey.includes(code))) {
      return false;
    }
    throw new Error(`Cannot open config database "${path}": ${(err as Error).message}`, {
      cause: err,
    });
  } finally {
    client?.close();
  }
}

/** Completes or discards a rekey a crash interrupted (see the header). */
async function finishPendingRekey(dir: string, key: string): Promise<void> {
  const copy = `${dir}/${REKEY_FILE}`;
  if (!await exists(copy)) return;
  if (await opensWith(copy, key, ["SQLITE_CORRUPT"])) {
    await moveDatabase(copy, `${dir}/${DB_FILE}`);
    await fsyncDirectoryNow(dir);
    log.warn("completed a password change interrupted before the config database was swapped");
  } else {
    await removeDatabase(copy);
    log.warn("discarded the copy of an interrupted password change (the old password stands)");
  }
}

/**
 * The newest aside file `key` opens. Best effort: an aside file that cannot be read is skipped
 * with a warning rather than stopping the start (it stays on disk for a later boot).
 */
async function findOpenableAside(dir: string, key: string): Promise<string | null> {
  for (const path of await listAside(dir)) {
    try {
      if (await opensWith(path, key)) return path;
    } catch (err) {
      log.warn("skipped an aside config database that cannot be read", {
        path,
        error: (err as Error).message,
      });
    }
  }
  return null;
}

/**
 * Puts the right file at `<dir>/config.db` for `key`; returns the aside path when the existing
 * database could not be opened and nothing could be restored (a recovery is now pending).
 */
async function settleDatabaseFile(dir: string, key: string, now: number): Promise<string | null> {
  const path = `${dir}/${DB_FILE}`;
  const present = await exists(path);
  if (present && await opensWith(path, key)) return null;
  const restorable = await findOpenableAside(dir, key);
  const failure = present ? await openFailureOf(dir, key) : undefined;
  const movedTo = present ? await moveAside(dir, now) : null;
  if (restorable !== null) {
    await moveDatabase(restorable, path);
    await fsyncDirectoryNow(dir);
    log.warn("restored the config database the bootstrap password hash opens", {
      restored: restorable,
      ...(movedTo ? { moved_aside: movedTo } : {}),
    });
    return null;
  }
  if (movedTo !== null) log.error(unopenedMessage(failure!), { moved_aside: movedTo });
  return movedTo;
}

/**
 * The operator's story of a config database the current hash does not open (key-check.ts tells
 * which): what happened, and what `POST /recover-db` keeps and loses. Accepting the empty
 * database keeps the config file, the objects and the moved-aside file (never deleted); it loses
 * what only the database held: IAM users, groups and keys, sessions, login providers, job
 * history, undelivered events and persisted usage counters (rebuilt by a scan).
 */
function unopenedMessage(failure: OpenFailure): string {
  const after = "it was moved aside and svc runs on an empty one (S3 answers 503) until an " +
    "operator accepts that (POST /_/api/admin/recover-db: keeps the config file, the objects and " +
    "the moved-aside file; loses IAM users, groups and keys, sessions, login providers, job " +
    "history, undelivered events and usage counters)";
  if (failure === "damaged") {
    return "the config database is damaged: the bootstrap password hash is the one that " +
      `encrypted it, yet it does not open; ${after}, or restores a backup (POST /_/api/admin/backup)`;
  }
  if (failure === "other_hash") {
    return "the bootstrap password hash does not open the config database (another hash " +
      `encrypted it); ${after}, or restarts with the hash that encrypted it`;
  }
  return "the config database does not open with the bootstrap password hash (another hash " +
    `encrypted it, or the file is damaged); ${after}, or restarts with the right hash`;
}

export async function openConfigDb(options: OpenConfigDbOptions): Promise<ConfigDb> {
  const { dir, passwordHash } = options;
  const now = options.now ?? Date.now;
  await Deno.mkdir(dir, { recursive: true, mode: 0o700 });
  const key = configDbKey(passwordHash);
  await finishPendingRekey(dir, key);
  const asidePath = await settleDatabaseFile(dir, key, now());
  const path = `${dir}/${DB_FILE}`;
  // Created 0600 before libSQL opens it (libSQL would create it with the umask's mode).
  if (!await exists(path)) {
    await Deno.writeFile(path, new Uint8Array(), { mode: 0o600, createNew: true });
  }
  await Deno.chmod(path, 0o600);
  const client = openClient(path, key);
  try {
    await useWal(client);
    await migrate(client, options.migrations ?? MIGRATIONS, now);
    await recordKeyCheck(dir, key);
    if (asidePath !== null) {
      await client.execute({
        sql: "INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)",
        args: [RECOVERY_KEY, asidePath],
      });
    }
    const pending = await client.execute({
      sql: "SELECT value FROM meta WHERE key = ?",
      args: [RECOVERY_KEY],
    });
    const pendingAside = pending.rows[0]?.value;
    const state: DbState = typeof pendingAside === "string"
      ? { status: "mismatch", asidePath: pendingAside }
      : { status: "ok" };
    return new ConfigDb(dir, client, key, state);
  } catch (err) {
    client.close();
    throw err;
  }
}

export class ConfigDb implements DbClient {
  readonly dir: string;
  readonly path: string;
  readonly #queue = new SerialQueue();
  readonly #wal: WalSync;
  #raw: Client;
  #key: string;
  #state: DbState;
  #closed = false;

  /** Use openConfigDb. */
  constructor(dir: string, raw: Client, key: string, state: DbState) {
    this.dir = dir;
    this.path = `${dir}/${DB_FILE}`;
    this.#raw = raw;
    this.#key = key;
    this.#state = state;
    this.#wal = new WalSync(this.path, dir);
  }

  /** `mismatch` while a recovery is pending (S3 answers 503 then). */
  get state(): DbState {
    return this.#state;
  }

  /** The client to query through; it stays valid across a rekey. */
  get client(): DbClient {
    return this;
  }

  #enter<T>(fn: (raw: Client) => Promise<T>): Promise<T> {
    if (this.#closed) return Promise.reject(new Error("The config database is closed"));
    return this.#queue.run(() => fn(this.#raw));
  }

  async execute(stmt: InStatement): Promise<ResultSet> {
    const result = await this.#enter((raw) => raw.execute(stmt));
    if (mayWrite(stmt, result.rowsAffected)) await this.#wal.sync();
    return result;
  }

  async batch(stmts: InStatement[], mode: TransactionMode = "write", durability?: Durability) {
    const results = await this.#enter((raw) => raw.batch(stmts, mode));
    await this.#wal.settle(mode, durability);
    return results;
  }

  async transaction<T>(fn: (tx: Transaction) => Promise<T>, mode: TransactionMode = "write") {
    const result = await this.#enter(async (raw) => {
      const tx = await raw.transaction(mode);
      try {
        const result = await fn(tx);
        await tx.commit();
        return result;
      } catch (err) {
        if (!tx.closed) await tx.rollback().catch(() => {});
        throw err;
      } finally {
        tx.close();
      }
    });
    await this.#wal.settle(mode);
    return result;
  }

  /** The applied schema version. */
  schemaVersion(): Promise<number> {
    return this.#enter((raw) => appliedVersion(raw));
  }

  /**
   * Ends a pending recovery: the fresh database is kept (the aside file stays on disk). Throws
   * when no recovery is pending.
   */
  async acknowledgeRecovery(): Promise<{ asidePath: string }> {
    const state = this.#state;
    if (state.status !== "mismatch") throw new Error("No config database recovery is pending");
    await this.execute({ sql: "DELETE FROM meta WHERE key = ?", args: [RECOVERY_KEY] });
    this.#state = { status: "ok" };
    return { asidePath: state.asidePath };
  }

  /**
   * Re-encrypts the database for `newHash`. `commitHash` stores the new hash; it runs after the
   * re-encrypted copy is durable and before the swap (see the header). When it throws, the copy
   * is removed and nothing changed.
   */
  rekey(newHash: string, commitHash: () => Promise<void>): Promise<void> {
    if (this.#closed) return Promise.reject(new Error("The config database is closed"));
    return this.#queue.run(async () => {
      const newKey = configDbKey(newHash);
      const copy = `${this.dir}/${REKEY_FILE}`;
      await removeDatabase(copy);
      try {
        await this.#raw.execute({ sql: "VACUUM INTO ?", args: [keyedFileUri(copy, newKey)] });
        await fsyncFile(copy);
        await fsyncDirectoryNow(this.dir);
        if (!await opensWith(copy, newKey)) {
          throw new Error("The re-encrypted copy of the config database does not open");
        }
        await commitHash();
      } catch (err) {
        await removeDatabase(copy).catch(() => {});
        throw err;
      }
      // Committed: from here the new hash is stored. Swap without an await in between, so no
      // other call can run on the old client or see a closed one.
      this.#raw.close();
      try {
        moveDatabaseSync(copy, this.path);
      } catch (err) {
        // The next boot completes the swap (the copy opens with the stored hash); until then
        // keep serving from the old file.
        this.#raw = openClient(this.path, this.#key);
        log.error("config database swap failed after the new password was stored", {
          error: (err as Error).message,
        });
        throw err;
      }
      this.#raw = openClient(this.path, newKey);
      this.#key = newKey;
      await useWal(this.#raw);
      await fsyncDirectoryNow(this.dir);
      await recordKeyCheck(this.dir, newKey);
    });
  }

  /** A consistent copy of the database at `path`, encrypted with the same key (VACUUM INTO). */
  vacuumInto(path: string): Promise<void> {
    return this.#enter((raw) =>
      raw.execute({ sql: "VACUUM INTO ?", args: [keyedFileUri(path, this.#key)] }).then(() => {})
    );
  }

  /** A client on another database file encrypted with this database's key (a synced copy). */
  openSibling(path: string): Client {
    return openClient(path, this.#key);
  }

  /** Readiness: reads the schema version within `timeoutMs`; throws with the reason. */
  async ping(timeoutMs = 2000): Promise<void> {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(new Error(`Config database did not answer within ${timeoutMs} ms`)),
        timeoutMs,
      );
    });
    try {
      await Promise.race([
        this.#enter((raw) => raw.execute("SELECT MAX(version) FROM schema_migrations")),
        timeout,
      ]);
    } finally {
      clearTimeout(timer);
    }
  }

  /** Waits for calls in flight, then closes. */
  async close(): Promise<void> {
    if (this.#closed) return;
    await this.#queue.run(() => {
      this.#closed = true;
      this.#wal.stop();
      return closeWal(this.#raw);
    });
  }
}
