/**
 * What ended admin sessions early. A session is a signed cookie carrying its own record
 * (admin/session/sessions.ts), so any instance of a fleet can verify it and no row per session
 * is kept: a copied database file (or a backup) holds no cookie and no key to make one. What the
 * database keeps is the revocations (`session_revocations`, migration 10), which config sync
 * carries to the other instances with the IAM snapshot (iam-snapshot.ts):
 *
 * - `session:<id>`: one session logged out or revoked; kept until that session expires;
 * - `user:<name>`: every session of the user created before `not_before`;
 * - `all`: every session created before `not_before` (a password change).
 *
 * Revocations only ever grow (until they expire): adopting another instance's set merges it
 * with this one's (`mergeRevocations`), so two instances revoking at once both win.
 */
import type { DbClient } from "./config-db.ts";

export interface SessionRecord {
  /** Opaque id (not a secret), safe for audit entries. */
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

/** One row of `session_revocations`. */
export interface Revocation {
  subject: string;
  notBefore: number;
  /** Unix ms after which the row may go; null: kept. */
  expiresAt: number | null;
}

export const ALL_SESSIONS = "all";
export const sessionSubject = (id: string) => `session:${id}`;
export const userSubject = (user: string) => `user:${user}`;

const UPSERT = `INSERT INTO session_revocations (subject, not_before, expires_at) VALUES (?, ?, ?)
  ON CONFLICT (subject) DO UPDATE SET
    not_before = MAX(not_before, excluded.not_before),
    expires_at = CASE WHEN expires_at IS NULL OR excluded.expires_at IS NULL THEN NULL
                      ELSE MAX(expires_at, excluded.expires_at) END`;

export function upsertRevocation(row: Revocation) {
  return { sql: UPSERT, args: [row.subject, row.notBefore, row.expiresAt] };
}

export function toRevocation(row: Record<string, unknown>): Revocation {
  return {
    subject: String(row.subject),
    notBefore: Number(row.not_before),
    expiresAt: row.expires_at === null || row.expires_at === undefined
      ? null
      : Number(row.expires_at),
  };
}

export class SessionStore {
  readonly #db: DbClient;

  constructor(db: DbClient) {
    this.#db = db;
  }

  /** Ends one session (kept until it would have expired anyway). */
  async revokeSession(record: Pick<SessionRecord, "id" | "expiresAt">, now: number) {
    await this.#db.execute(
      upsertRevocation({
        subject: sessionSubject(record.id),
        notBefore: now,
        expiresAt: record.expiresAt,
      }),
    );
  }

  /** Ends every session of `user` created before `now`. */
  async revokeUser(user: string, now: number): Promise<void> {
    await this.#db.execute(
      upsertRevocation({ subject: userSubject(user), notBefore: now, expiresAt: null }),
    );
  }

  /** Ends every session created before `now` (a password change). */
  async revokeAll(now: number): Promise<void> {
    await this.#db.execute(
      upsertRevocation({ subject: ALL_SESSIONS, notBefore: now, expiresAt: null }),
    );
  }

  /** Whether the session was ended early (logout, its user's or every session's revocation). */
  async revoked(record: Pick<SessionRecord, "id" | "user" | "createdAt">): Promise<boolean> {
    const result = await this.#db.execute({
      sql: "SELECT subject, not_before FROM session_revocations WHERE subject IN (?, ?, ?)",
      args: [sessionSubject(record.id), userSubject(record.user), ALL_SESSIONS],
    });
    return result.rows.some((row) =>
      String(row.subject).startsWith("session:") || record.createdAt < Number(row.not_before)
    );
  }

  /** Removes revocations of sessions expired at `now`; returns how many. */
  async prune(now: number): Promise<number> {
    const result = await this.#db.execute({
      sql: "DELETE FROM session_revocations WHERE expires_at IS NOT NULL AND expires_at <= ?",
      args: [now],
    });
    return result.rowsAffected;
  }

  async list(): Promise<Revocation[]> {
    const result = await this.#db.execute("SELECT * FROM session_revocations ORDER BY subject");
    return result.rows.map((row) => toRevocation(row as Record<string, unknown>));
  }
}
