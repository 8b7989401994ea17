/**
 * The `event_outbox` table (migration "event_outbox"): appends in batches, the dispatcher's
 * claim / finish / reclaim / prune, and the admin API's listing and requeue. Every statement is
 * plain SQLite so a remote libSQL server can hold the table later.
 *
 * Row statuses:
 * - `pending`: waiting for delivery (due at `next_attempt_at`);
 * - `delivering`: claimed by a dispatcher at `claimed_at` (a claim older than
 *   `stale_claim_after` is reclaimed: its dispatcher died or hung);
 * - `delivered`: every endpoint took it; pruned by retention;
 * - `failed`: `max_attempts` used up; requeue makes it pending again;
 * - `recorded`: appended while delivery was off; kept for the record (and replication's cursor)
 *   and pruned like delivered rows, never delivered.
 */
import type { DbClient } from "../db/mod.ts";
import type { ObjectEvent } from "./event.ts";

export const OUTBOX_STATUSES = [
  "pending",
  "delivering",
  "delivered",
  "failed",
  "recorded",
] as const;
export type OutboxStatus = typeof OUTBOX_STATUSES[number];

export interface OutboxRow {
  id: number;
  event: ObjectEvent;
  status: OutboxStatus;
  attempts: number;
  /** Unix ms. */
  occurredAt: number;
  nextAttemptAt: number;
  claimedAt: number | null;
  /** Endpoints (target names) that already answered 2xx. */
  deliveredTargets: string[];
  lastError: string | null;
  finishedAt: number | null;
}

/** A row's fate after one delivery attempt. */
export type AttemptOutcome =
  | { status: "delivered"; targets: string[] }
  | { status: "pending"; targets: string[]; nextAttemptAt: number; error: string }
  | { status: "failed"; targets: string[]; error: string };

export interface ListQuery {
  status?: OutboxStatus;
  limit: number;
  offset: number;
  order: "asc" | "desc";
}

const COLUMNS = `id, payload, status, attempts, occurred_at, next_attempt_at, claimed_at,
  delivered_targets, last_error, finished_at`;

function toRow(row: Record<string, unknown>): OutboxRow {
  const nullable = (value: unknown) => value === null || value === undefined ? null : Number(value);
  return {
    id: Number(row.id),
    event: JSON.parse(String(row.payload)) as ObjectEvent,
    status: String(row.status) as OutboxStatus,
    attempts: Number(row.attempts),
    occurredAt: Number(row.occurred_at),
    nextAttemptAt: Number(row.next_attempt_at),
    claimedAt: nullable(row.claimed_at),
    deliveredTargets: JSON.parse(String(row.delivered_targets)) as string[],
    lastError: row.last_error === null ? null : String(row.last_error),
    finishedAt: nullable(row.finished_at),
  };
}

/** The object a journal entry's removal is about (still there as this ETag: not removed). */
export interface JournalObject {
  bucket: string;
  key: string;
  etag: string;
}

export interface JournalEntry {
  id: number;
  object: JournalObject;
  events: ObjectEvent[];
}

/** Rows per INSERT statement (9 values each, far below SQLite's variable limit). */
const APPEND_ROWS = 200;

/** `(?, ?, …)` for `n` values. */
function placeholders(n: number): string {
  return `(${new Array(n).fill("?").join(", ")})`;
}

export class OutboxStore {
  readonly #db: DbClient;

  constructor(db: DbClient) {
    this.#db = db;
  }

  /**
   * Appends events in order, in one transaction (ids follow the order given). `deliver` false
   * records them as `recorded` (delivery off).
   */
  async append(
    events: readonly ObjectEvent[],
    deliver: boolean,
    now: number,
    settled: readonly number[] = [],
  ): Promise<void> {
    if (events.length === 0 && settled.length === 0) return;
    const status: OutboxStatus = deliver ? "pending" : "recorded";
    // Multi-row INSERTs (one statement per APPEND_ROWS events): each statement is a call into
    // SQLite on the main thread, so fewer statements keep the event loop free.
    const statements = [];
    for (let start = 0; start < events.length; start += APPEND_ROWS) {
      const chunk = events.slice(start, start + APPEND_ROWS);
      statements.push({
        sql: `INSERT INTO event_outbox (event_id, kind, bucket, object_key, payload, occurred_at,
          status, next_attempt_at, finished_at, updated_at) VALUES
          ${chunk.map(() => "(?, ?, ?, ?, ?, ?, ?, 0, ?, ?)").join(", ")}`,
        args: chunk.flatMap((event) => [
          event.id,
          event.kind,
          event.bucket,
          event.key,
          JSON.stringify(event),
          Date.parse(event.time),
          status,
          deliver ? null : now,
          now,
        ]),
      });
    }
    // Journal entries whose events are among these (or that were dropped) go in the same
    // transaction: an event is never both journaled and in the outbox, nor lost between.
    if (settled.length > 0) {
      statements.push({
        sql: `DELETE FROM event_journal WHERE id IN ${placeholders(settled.length)}`,
        args: [...settled],
      });
    }
    // Resolved once committed (the writer's waiters: a kill -9 loses nothing); the sync to disk
    // follows within 200 ms (wal-sync.ts), not on every S3 answer's path.
    await this.#db.batch(statements, "write", "committed");
  }

  /**
   * Writes `events` (describing the removal of `object`, which is still there) to the journal
   * before the removal; returns the entry's id. Durable when this resolves.
   */
  async journal(
    object: JournalObject,
    events: readonly ObjectEvent[],
    now: number,
  ): Promise<number> {
    const result = await this.#db.execute({
      sql: `INSERT INTO event_journal (bucket, object_key, etag, payload, created_at)
        VALUES (?, ?, ?, ?, ?)`,
      args: [object.bucket, object.key, object.etag, JSON.stringify(events), now],
    });
    return Number(result.lastInsertRowid);
  }

  /** The journal entries not settled yet (left by a crash, or in flight), oldest first. */
  async journaled(): Promise<JournalEntry[]> {
    const result = await this.#db.execute(
      "SELECT id, bucket, object_key, etag, payload FROM event_journal ORDER BY id",
    );
    return result.rows.map((row) => ({
      id: Number(row.id),
      object: { bucket: String(row.bucket), key: String(row.object_key), etag: String(row.etag) },
      events: JSON.parse(String(row.payload)) as ObjectEvent[],
    }));
  }

  /**
   * Claims up to `limit` due pending rows (oldest first) for `token`; returns them. One
   * transaction, and the update re-checks the status, so two dispatchers never share a row.
   */
  async claim(limit: number, now: number, token: string): Promise<OutboxRow[]> {
    return await this.#db.transaction(async (tx) => {
      const due = await tx.execute({
        sql: `SELECT id FROM event_outbox WHERE status = 'pending' AND next_attempt_at <= ?
          ORDER BY id LIMIT ?`,
        args: [now, limit],
      });
      const ids = due.rows.map((row) => Number(row.id));
      if (ids.length === 0) return [];
      await tx.execute({
        sql: `UPDATE event_outbox SET status = 'delivering', claimed_at = ?, claim_token = ?,
          updated_at = ? WHERE status = 'pending' AND id IN ${placeholders(ids.length)}`,
        args: [now, token, now, ...ids],
      });
      const claimed = await tx.execute({
        sql: `SELECT ${COLUMNS} FROM event_outbox WHERE claim_token = ? AND status = 'delivering'
          AND id IN ${placeholders(ids.length)} ORDER BY id`,
        args: [token, ...ids],
      });
      return claimed.rows.map(toRow);
    });
  }

  /** Records one attempt's outcome of a row this token claimed (a lost claim changes nothing). */
  async finish(id: number, token: string, outcome: AttemptOutcome, now: number): Promise<void> {
    const targets = JSON.stringify(outcome.targets);
    if (outcome.status === "delivered") {
      await this.#db.execute({
        sql: `UPDATE event_outbox SET status = 'delivered', attempts = attempts + 1,
          delivered_targets = ?, last_error = NULL, finished_at = ?, claimed_at = NULL,
          claim_token = NULL, updated_at = ? WHERE id = ? AND claim_token = ?`,
        args: [targets, now, now, id, token],
      });
      return;
    }
    await this.#db.execute({
      sql: `UPDATE event_outbox SET status = ?, attempts = attempts + 1, delivered_targets = ?,
        last_error = ?, next_attempt_at = ?, finished_at = ?, claimed_at = NULL,
        claim_token = NULL, updated_at = ? WHERE id = ? AND claim_token = ?`,
      args: [
        outcome.status,
        targets,
        outcome.error.slice(0, 1000),
        outcome.status === "pending" ? outcome.nextAttemptAt : 0,
        outcome.status === "failed" ? now : null,
        now,
        id,
        token,
      ],
    });
  }

  /** Claims taken before `claimedBefore` go back to pending; returns how many. */
  async reclaimStale(claimedBefore: number, now: number): Promise<number> {
    const result = await this.#db.execute({
      sql: `UPDATE event_outbox SET status = 'pending', claimed_at = NULL, claim_token = NULL,
        updated_at = ? WHERE status = 'delivering' AND claimed_at < ?`,
      args: [now, claimedBefore],
    });
    return result.rowsAffected;
  }

  /**
   * Deletes finished (delivered or recorded) rows older than `finishedBefore`, then the oldest
   * beyond `maxRows`; at most `batch` per call each. Rows after `keepAfter` (a reader's cursor:
   * replication's) are never deleted, whatever their age or count. Returns how many went.
   */
  async prune(
    finishedBefore: number,
    maxRows: number,
    batch: number,
    keepAfter = Number.MAX_SAFE_INTEGER,
  ): Promise<number> {
    const old = await this.#db.execute({
      sql: `DELETE FROM event_outbox WHERE id IN (SELECT id FROM event_outbox
        WHERE status IN ('delivered', 'recorded') AND finished_at < ? AND id <= ?
        ORDER BY id LIMIT ?)`,
      args: [finishedBefore, keepAfter, batch],
    });
    const count = await this.#db.execute(
      `SELECT count(*) AS n FROM event_outbox WHERE status IN ('delivered', 'recorded')`,
    );
    const excess = Math.min(batch, Number(count.rows[0].n) - maxRows);
    if (excess <= 0) return old.rowsAffected;
    const extra = await this.#db.execute({
      sql: `DELETE FROM event_outbox WHERE id IN (SELECT id FROM event_outbox
        WHERE status IN ('delivered', 'recorded') AND id <= ? ORDER BY id LIMIT ?)`,
      args: [keepAfter, excess],
    });
    return old.rowsAffected + extra.rowsAffected;
  }

  /** Row count per status (every status present, zeros included). */
  async counts(): Promise<Record<OutboxStatus, number>> {
    const result = await this.#db.execute(
      "SELECT status, count(*) AS n FROM event_outbox GROUP BY status",
    );
    const counts = Object.fromEntries(OUTBOX_STATUSES.map((s) => [s, 0])) as Record<
      OutboxStatus,
      number
    >;
    for (const row of result.rows) {
      const status = String(row.status) as OutboxStatus;
      if (status in counts) counts[status] = Number(row.n);
    }
    return counts;
  }

  /** A page of rows by occurrence (ties by id), optionally of one status. */
  async list(query: ListQuery): Promise<OutboxRow[]> {
    const where = query.status ? "WHERE status = ?" : "";
    const order = query.order === "asc" ? "ASC" : "DESC";
    const result = await this.#db.execute({
      sql: `SELECT ${COLUMNS} FROM event_outbox ${where}
        ORDER BY occurred_at ${order}, id ${order} LIMIT ? OFFSET ?`,
      args: [...(query.status ? [query.status] : []), query.limit, query.offset],
    });
    return result.rows.map(toRow);
  }

  /** Rows after `afterId` in id order (a cursor reader: tests, replication). */
  async after(afterId: number, limit: number): Promise<OutboxRow[]> {
    const result = await this.#db.execute({
      sql: `SELECT ${COLUMNS} FROM event_outbox WHERE id > ? ORDER BY id LIMIT ?`,
      args: [afterId, limit],
    });
    return result.rows.map(toRow);
  }

  /** One row, or null. */
  async get(id: number): Promise<OutboxRow | null> {
    const result = await this.#db.execute({
      sql: `SELECT ${COLUMNS} FROM event_outbox WHERE id = ?`,
      args: [id],
    });
    return result.rows.length === 0 ? null : toRow(result.rows[0]);
  }

  /**
   * Failed rows back to pending, due now, with their attempts reset (endpoints that already took
   * the event stay recorded: they are not sent it again). `id` absent: every failed row. Returns
   * how many rows were requeued.
   */
  async requeue(id: number | undefined, now: number): Promise<number> {
    const result = await this.#db.execute({
      sql: `UPDATE event_outbox SET status = 'pending', attempts = 0, next_attempt_at = ?,
        finished_at = NULL, updated_at = ? WHERE status = 'failed'
        ${id === undefined ? "" : "AND id = ?"}`,
      args: [now, now, ...(id === undefined ? [] : [id])],
    });
    return result.rowsAffected;
  }
}
