/**
 * Replication and lifecycle rule state in the config database (migrations 3 and 6). A rule's
 * row lives in `jobs` (id `<kind>:<name>`): `status` is `idle` before its first run, `running`
 * during one, then the last run's outcome; `paused` is the persisted pause flag; `progress` the
 * last run's counters; `state` the kind's resume state plus the scheduler's fields
 * (`next_due_at`, `last_run_at`, lifetime counters). Runs go to `job_runs`, per-object failures
 * to `job_failures` (a ring per rule), the leader lease to `job_leases`.
 */
import type { InStatement } from "@libsql/client";
import type { JobKind, JobRecord, JobScope, JobStatus, RunRecord } from "../job-model.ts";
import { toJob, toRun } from "../jobs-store.ts";
import type { DbClient } from "../../db/mod.ts";

/** A configured rule as the store mirrors it. */
export interface RuleRowSpec {
  id: string;
  kind: Extract<JobKind, "replication" | "lifecycle">;
  type: string;
  scope: JobScope;
}

export interface RuleRunEnd {
  status: Extract<JobStatus, "succeeded" | "failed" | "cancelled">;
  error: string | null;
  counters: Record<string, number>;
  /** The rule's new `state` (merged by the caller). */
  state: Record<string, unknown>;
}

export interface LeaseHolder {
  holder: string;
  expiresAt: number;
}

const RULE_KINDS = "('replication', 'lifecycle')";

export class RuleStore {
  readonly #db: DbClient;
  readonly #now: () => number;

  constructor(db: DbClient, now: () => number = Date.now) {
    this.#db = db;
    this.#now = now;
  }

  /**
   * Mirrors the configured rules of `kind`: a new rule gets an `idle` row, a changed one its new
   * type and scope, and a rule no longer configured loses its row, runs, failures and lease.
   * Returns the ids removed.
   */
  async sync(kind: RuleRowSpec["kind"], rules: RuleRowSpec[]): Promise<string[]> {
    const existing = await this.#db.execute({
      sql: "SELECT id, type, scope FROM jobs WHERE kind = ?",
      args: [kind],
    });
    const known = new Map(existing.rows.map((row) => [String(row.id), row]));
    const now = this.#now();
    const statements: InStatement[] = [];
    for (const rule of rules) {
      const scope = JSON.stringify(rule.scope);
      const row = known.get(rule.id);
      if (row === undefined) {
        statements.push({
          sql: `INSERT INTO jobs (id, kind, type, bucket, scope, status, paused, cancel_requested,
            progress, state, error, created_by, created_at, updated_at)
            VALUES (?, ?, ?, ?, ?, 'idle', 0, 0, '{}', '{}', NULL, 'config', ?, ?)`,
          args: [rule.id, kind, rule.type, rule.scope.bucket, scope, now, now],
        });
      } else if (String(row.type) !== rule.type || String(row.scope) !== scope) {
        statements.push({
          sql: "UPDATE jobs SET type = ?, bucket = ?, scope = ?, updated_at = ? WHERE id = ?",
          args: [rule.type, rule.scope.bucket, scope, now, rule.id],
        });
      }
    }
    const wanted = new Set(rules.map((rule) => rule.id));
    const removed = [...known.keys()].filter((id) => !wanted.has(id));
    for (const id of removed) statements.push(...this.#deleteStatements(id));
    if (statements.length > 0) await this.#db.batch(statements, "write");
    return removed;
  }

  #deleteStatements(id: string): InStatement[] {
    return [
      { sql: "DELETE FROM jobs WHERE id = ?", args: [id] },
      { sql: "DELETE FROM job_runs WHERE job_id = ?", args: [id] },
      { sql: "DELETE FROM job_failures WHERE job_id = ?", args: [id] },
      { sql: "DELETE FROM job_leases WHERE job_id = ?", args: [id] },
    ];
  }

  /** Removes a rule's row with its history (the rule was deleted). */
  async remove(id: string): Promise<void> {
    await this.#db.batch(this.#deleteStatements(id), "write");
  }

  /** The rows of these ids (those that exist). */
  async jobs(ids: string[]): Promise<JobRecord[]> {
    if (ids.length === 0) return [];
    const result = await this.#db.execute({
      sql: `SELECT * FROM jobs WHERE id IN (${ids.map(() => "?").join(", ")})`,
      args: ids,
    });
    return result.rows.map(toJob);
  }

  /** The scheduler's view of a rule row, or null when it has none yet. */
  async row(
    id: string,
  ): Promise<{ status: JobStatus; paused: boolean; state: Record<string, unknown> } | null> {
    const result = await this.#db.execute({
      sql: "SELECT status, paused, state FROM jobs WHERE id = ?",
      args: [id],
    });
    const row = result.rows[0];
    if (!row) return null;
    return {
      status: String(row.status) as JobStatus,
      paused: Number(row.paused) === 1,
      state: JSON.parse(String(row.state)),
    };
  }

  async setPaused(id: string, paused: boolean): Promise<void> {
    await this.#db.execute({
      sql: "UPDATE jobs SET paused = ?, updated_at = ? WHERE id = ?",
      args: [paused ? 1 : 0, this.#now(), id],
    });
  }

  async saveState(id: string, state: Record<string, unknown>): Promise<void> {
    await this.#db.execute({
      sql: "UPDATE jobs SET state = ?, updated_at = ? WHERE id = ?",
      args: [JSON.stringify(state), this.#now(), id],
    });
  }

  /** Records the start of a run: a `running` run row and the rule row `running`. */
  async beginRun(id: string, triggeredBy: string, at: number): Promise<number> {
    const [, inserted] = await this.#db.batch([
      {
        sql: `UPDATE jobs SET status = 'running', error = NULL, started_at = ?, finished_at = NULL,
          updated_at = ? WHERE id = ?`,
        args: [at, this.#now(), id],
      },
      {
        sql: `INSERT INTO job_runs (job_id, triggered_by, status, counters, error, started_at)
          VALUES (?, ?, 'running', '{}', NULL, ?)`,
        args: [id, triggeredBy, at],
      },
    ], "write");
    return Number(inserted.lastInsertRowid);
  }

  /** Records the end of a run on its run row and the rule row, in one batch. */
  async endRun(id: string, runId: number, end: RuleRunEnd, at: number): Promise<void> {
    const counters = JSON.stringify(end.counters);
    await this.#db.batch([
      {
        sql: `UPDATE job_runs SET status = ?, counters = ?, error = ?, finished_at = ?
          WHERE id = ?`,
        args: [end.status, counters, end.error, at, runId],
      },
      {
        sql: `UPDATE jobs SET status = ?, progress = ?, state = ?, error = ?, finished_at = ?,
          updated_at = ? WHERE id = ?`,
        args: [end.status, counters, JSON.stringify(end.state), end.error, at, this.#now(), id],
      },
    ], "write");
  }

  /**
   * Boot: runs a dead process left `running` become `failed` with a diagnostic failure row, and
   * so do their rules' rows; their node-local leases go. Returns the run ids recovered.
   */
  async failAbandonedRuns(at: number): Promise<number[]> {
    const runs = await this.#db.execute(
      `SELECT r.id, r.job_id, j.bucket FROM job_runs r JOIN jobs j ON j.id = r.job_id
        WHERE r.status = 'running' AND j.kind IN ${RULE_KINDS}`,
    );
    const message = "svc stopped while this run was in progress (the run was abandoned)";
    const statements: InStatement[] = [];
    for (const row of runs.rows) {
      statements.push(
        {
          sql: `UPDATE job_runs SET status = 'failed', error = ?, finished_at = ? WHERE id = ?`,
          args: [message, at, row.id],
        },
        {
          sql: `INSERT INTO job_failures (job_id, run_id, bucket, object_key, error_message,
            occurred_at) VALUES (?, ?, ?, '', ?, ?)`,
          args: [row.job_id, row.id, String(row.bucket ?? ""), message, at],
        },
        // The node-local lease of that run died with its process: a kill -9 must not keep the
        // rule from running again for a whole lease_ttl.
        { sql: "DELETE FROM job_leases WHERE job_id = ?", args: [row.job_id] },
      );
    }
    statements.push({
      sql: `UPDATE jobs SET status = 'failed', error = ?, finished_at = ?, updated_at = ?
        WHERE kind IN ${RULE_KINDS} AND status = 'running'`,
      args: [message, at, this.#now()],
    });
    await this.#db.batch(statements, "write");
    return runs.rows.map((row) => Number(row.id));
  }

  /** Appends failures of one run and keeps the newest `keep` of the rule. */
  async addFailures(
    id: string,
    runId: number | null,
    failures: { bucket: string; key: string; message: string; at: number }[],
    keep: number,
  ): Promise<void> {
    if (failures.length === 0) return;
    await this.#db.batch([
      ...failures.map((f) => ({
        sql: `INSERT INTO job_failures (job_id, run_id, bucket, object_key, error_message,
          occurred_at) VALUES (?, ?, ?, ?, ?, ?)`,
        args: [id, runId, f.bucket, f.key, f.message, f.at],
      })),
      {
        sql: `DELETE FROM job_failures WHERE job_id = ? AND id <= (
          SELECT id FROM job_failures WHERE job_id = ? ORDER BY id DESC LIMIT 1 OFFSET ?)`,
        args: [id, id, keep],
      },
    ], "write");
  }

  /** The newest runs of one rule, newest first. */
  async recentRuns(id: string, limit: number): Promise<RunRecord[]> {
    const result = await this.#db.execute({
      sql: "SELECT * FROM job_runs WHERE job_id = ? ORDER BY id DESC LIMIT ?",
      args: [id, limit],
    });
    return result.rows.map(toRun);
  }

  /** The newest run of each rule id given (for the rows' `last_run`). */
  async lastRuns(ids: string[]): Promise<Map<string, RunRecord>> {
    const out = new Map<string, RunRecord>();
    if (ids.length === 0) return out;
    const result = await this.#db.execute({
      sql: `SELECT * FROM job_runs WHERE id IN (SELECT MAX(id) FROM job_runs
        WHERE job_id IN (${ids.map(() => "?").join(", ")}) GROUP BY job_id)`,
      args: ids,
    });
    for (const row of result.rows) out.set(String(row.job_id), toRun(row));
    return out;
  }

  // ── the node-local leader lease ────────────────────────────────────────────

  /**
   * Takes the lease of `id` for `ttlMs` unless another holder has an unexpired one. Returns the
   * new token, or null when it is held elsewhere.
   */
  acquireLease(id: string, holder: string, ttlMs: number): Promise<string | null> {
    return this.#db.transaction(async (tx) => {
      const now = this.#now();
      const current = await tx.execute({
        sql: "SELECT holder, expires_at FROM job_leases WHERE job_id = ?",
        args: [id],
      });
      const row = current.rows[0];
      // The holder's own lease is taken over: a release that failed (a full disk) must not
      // lock its holder out for a lease_ttl (the caller runs one run per rule at a time).
      if (row && Number(row.expires_at) > now && String(row.holder) !== holder) return null;
      const token = crypto.randomUUID();
      await tx.execute({
        sql: `INSERT INTO job_leases (job_id, holder, token, acquired_at, expires_at)
          VALUES (?, ?, ?, ?, ?) ON CONFLICT (job_id) DO UPDATE SET holder = excluded.holder,
          token = excluded.token, acquired_at = excluded.acquired_at,
          expires_at = excluded.expires_at`,
        args: [id, holder, token, now, now + ttlMs],
      });
      return token;
    });
  }

  /** Extends a lease still held under `token`; false when it was lost (taken or removed). */
  async renewLease(id: string, token: string, ttlMs: number): Promise<boolean> {
    const now = this.#now();
    const result = await this.#db.execute({
      sql: "UPDATE job_leases SET expires_at = ? WHERE job_id = ? AND token = ? AND expires_at > ?",
      args: [now + ttlMs, id, token, now],
    });
    return result.rowsAffected === 1;
  }

  async releaseLease(id: string, token: string): Promise<void> {
    await this.#db.execute({
      sql: "DELETE FROM job_leases WHERE job_id = ? AND token = ?",
      args: [id, token],
    });
  }

  /** The unexpired lease of `id`, or null. */
  async lease(id: string): Promise<LeaseHolder | null> {
    const result = await this.#db.execute({
      sql: "SELECT holder, expires_at FROM job_leases WHERE job_id = ? AND expires_at > ?",
      args: [id, this.#now()],
    });
    const row = result.rows[0];
    return row ? { holder: String(row.holder), expiresAt: Number(row.expires_at) } : null;
  }
}
