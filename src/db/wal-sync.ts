/**
 * The config database in write-ahead-log mode, with its commits made durable off the event loop.
 *
 * libSQL's local calls are synchronous: a commit in rollback-journal mode with `synchronous=FULL`
 * (journal written and synced, pages written and synced, journal deleted) held the event loop
 * 9-27 ms on a loaded box, and since issue 27 the event outbox commits before every S3 answer
 * (group commit). In WAL mode with `synchronous=NORMAL` a commit only appends to `config.db-wal`
 * (0.06 ms measured); `WalSync` then fdatasyncs that file on Deno's blocking pool, and ConfigDb
 * resolves a write only after it: every committed write is on disk before its caller continues,
 * as with FULL, without blocking the loop. Concurrent writes share one sync (one running, at most
 * one queued). SQLite syncs the WAL itself before each checkpoint and the database file after it,
 * so a commit checkpointed meanwhile is durable too. The companions (`-wal`, `-shm`) move with
 * the file (db-files.ts); consistent copies use VACUUM INTO.
 */
import { type Client, createClient } from "@libsql/client";
import { pathToFileURL } from "node:url";
import { fsyncDirectoryNow } from "../lib/mod.ts";

/** A libSQL client on the database file at `path`, encrypted with `key`. */
export function openClient(path: string, key: string): Client {
  return createClient({ url: pathToFileURL(path).href, encryptionKey: key });
}

/** Switches the database to WAL (persistent in the file) and this connection to NORMAL sync. */
export async function useWal(client: Client): Promise<void> {
  await client.execute("PRAGMA journal_mode=WAL");
  await client.execute("PRAGMA synchronous=NORMAL");
  // A checkpoint runs inside the commit that crosses the mark, on the event loop, with two
  // fsyncs: one every 1,000 pages (SQLite's default) came every ~200 small PUTs (each commits
  // its event: ~5 pages). 10,000 pages (40 MiB of WAL at most) make them ten times rarer.
  await client.execute("PRAGMA wal_autocheckpoint=10000");
}

/**
 * When a write resolves: `synced` (default) once on disk; `committed` once committed (in the page
 * cache: a kill -9 loses nothing) with the sync following within `SOON_MS` (a power loss may lose
 * that window). The event outbox uses `committed` (ARCHITECTURE.md, "Events").
 */
export type Durability = "synced" | "committed";

/** How long a `committed` write waits at most for its sync. */
const SOON_MS = 200;

/**
 * Closes a client, back in rollback-journal mode first (which checkpoints and removes the WAL):
 * a stopped svc leaves `config.db` alone, as the boot's checks expect (a wrong key or a damaged
 * file must not be masked by a WAL beside it). A crash leaves the WAL, which the next open (with
 * the same key) recovers; the companions move with the file (db-files.ts).
 */
export async function closeWal(client: Client): Promise<void> {
  // A switch that fails (a full disk) leaves the WAL, recovered at the next open.
  await client.execute("PRAGMA journal_mode=DELETE").catch(() => {});
  client.close();
}

export class WalSync {
  readonly #walPath: string;
  readonly #dir: string;
  #timer: ReturnType<typeof setTimeout> | undefined;
  #running: Promise<void> | undefined;
  #queued: Promise<void> | undefined;
  /** The WAL file whose directory entry is known to be on disk (its inode). */
  #syncedInode: number | null = null;

  constructor(dbPath: string, dir: string) {
    this.#walPath = `${dbPath}-wal`;
    this.#dir = dir;
  }

  /** What a write of `mode` waits for before it resolves (see Durability). */
  async settle(mode: "read" | string, durability: Durability = "synced"): Promise<void> {
    if (mode === "read") return;
    if (durability === "synced") return await this.sync();
    this.#timer ??= setTimeout(() => {
      this.#timer = undefined;
      // A failure here is seen again by the next synced write, which throws it to its caller.
      this.sync().catch(() => {});
    }, SOON_MS);
  }

  /** Ends the pending timer (the database is closing; SQLite checkpoints on close). */
  stop(): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
  }

  /** Resolves once every commit made before the call is on disk. */
  sync(): Promise<void> {
    if (this.#queued !== undefined) return this.#queued;
    if (this.#running === undefined) return this.#start();
    const again = () => {
      this.#queued = undefined;
      return this.#start();
    };
    this.#queued = this.#running.then(again, again);
    return this.#queued;
  }

  #start(): Promise<void> {
    const run = this.#syncOnce().finally(() => {
      if (this.#running === run) this.#running = undefined;
    });
    this.#running = run;
    return run;
  }

  async #syncOnce(): Promise<void> {
    let file: Deno.FsFile;
    try {
      file = await Deno.open(this.#walPath, { read: true });
    } catch (err) {
      // No WAL: nothing committed since the last full checkpoint (which synced the database).
      if (err instanceof Deno.errors.NotFound) return;
      throw err;
    }
    try {
      await file.syncData();
      // A WAL created since the last look needs its directory entry on disk too.
      const inode = (await file.stat()).ino;
      if (inode !== this.#syncedInode) {
        await fsyncDirectoryNow(this.#dir);
        this.#syncedInode = inode;
      }
    } finally {
      file.close();
    }
  }
}

/** Whether a statement run through `execute` may have changed the database. */
export function mayWrite(stmt: string | { sql: string }, rowsAffected: number): boolean {
  if (rowsAffected > 0) return true;
  const sql = typeof stmt === "string" ? stmt : stmt.sql;
  return !/^\s*select\b/i.test(sql);
}
