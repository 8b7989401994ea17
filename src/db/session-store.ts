/**
 * Admin session rows. The cookie token itself is never stored: rows are found by its SHA-256, so
 * a copied database file (or a backup) yields no cookie that works. Sessions expire at a fixed
 * time set at login (no sliding renewal: a request never writes to the database).
 */
import { createHash, randomBytes } from "node:crypto";
import type { DbClient } from "./config-db.ts";

export interface SessionRecord {
  /** Opaque id (not the token), safe for audit entries. */
  id: string;
  user: string;
  /** May use the admin console. */
  admin: boolean;
  /** The client address the session is bound to. */
  clientIp: string;
  /** The IAM user's access key when the session was opened (null: not an IAM user's). */
  accessKeyId: string | null;
  /** Unix ms. */
  createdAt: number;
  /** Unix ms. */
  expiresAt: number;
}

export interface NewSession {
  user: string;
  admin: boolean;
  clientIp: string;
  /** Absent: null (not an IAM user's session). */
  accessKeyId?: string | null;
  createdAt: number;
  expiresAt: number;
}

/** Hex SHA-256 of a session token: the only form of it the database sees. */
export function tokenHash(token: string): string {
  return createHash("sha256").update(token).digest("hex");
}

function toRecord(row: Record<string, unknown>): SessionRecord {
  return {
    id: String(row.id),
    user: String(row.user_name),
    admin: Number(row.admin) === 1,
    clientIp: String(row.client_ip),
    accessKeyId: row.access_key_id === null || row.access_key_id === undefined
      ? null
      : String(row.access_key_id),
    createdAt: Number(row.created_at),
    expiresAt: Number(row.expires_at),
  };
}

export class SessionStore {
  readonly #db: DbClient;

  constructor(db: DbClient) {
    this.#db = db;
  }

  /** Stores a session for `token` (hashed here); returns the row. */
  async create(token: string, session: NewSession): Promise<SessionRecord> {
    const id = randomBytes(16).toString("hex");
    await this.#db.execute({
      sql: `INSERT INTO sessions
        (id, token_hash, user_name, admin, client_ip, access_key_id, created_at, expires_at)
        VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
      args: [
        id,
        tokenHash(token),
        session.user,
        session.admin ? 1 : 0,
        session.clientIp,
        session.accessKeyId ?? null,
        session.createdAt,
        session.expiresAt,
      ],
    });
    return { id, ...session, accessKeyId: session.accessKeyId ?? null };
  }

  /** The session of `token` that has not expired at `now`, or null. */
  async find(token: string, now: number): Promise<SessionRecord | null> {
    const result = await this.#db.execute({
      sql: "SELECT * FROM sessions WHERE token_hash = ? AND expires_at > ?",
      args: [tokenHash(token), now],
    });
    const row = result.rows[0];
    return row ? toRecord(row as Record<string, unknown>) : null;
  }

  /** Ends one session; true when it existed. */
  async delete(id: string): Promise<boolean> {
    const result = await this.#db.execute({ sql: "DELETE FROM sessions WHERE id = ?", args: [id] });
    return result.rowsAffected > 0;
  }

  /** Ends every session (a password change); returns how many there were. */
  async deleteAll(): Promise<number> {
    return (await this.#db.execute("DELETE FROM sessions")).rowsAffected;
  }

  /** Removes sessions expired at `now`; returns how many. */
  async prune(now: number): Promise<number> {
    const result = await this.#db.execute({
      sql: "DELETE FROM sessions WHERE expires_at <= ?",
      args: [now],
    });
    return result.rowsAffected;
  }

  /** Sessions alive at `now`. */
  async count(now: number): Promise<number> {
    const result = await this.#db.execute({
      sql: "SELECT COUNT(*) AS n FROM sessions WHERE expires_at > ?",
      args: [now],
    });
    return Number(result.rows[0]?.n ?? 0);
  }
}
