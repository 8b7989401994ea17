/**
 * Job, run and failure rows in the config database (migration 3). The store checks every status
 * change against the transition table of jobs/job-model.ts inside the transaction that writes
 * it, so two callers racing (a cancel and the runner finishing) cannot both win. Failures are a
 * ring per job: only the newest `maxFailures` rows are kept.
 */
import type { Transaction } from "@libsql/client";
import {
  ACTIVE,
  canTransition,
  type FailureRecord,
  type JobKind,
  type JobProgress,
  type JobRecord,
  type JobScope,
  type JobStatus,
  type RunRecord,
} from "../jobs/job-model.ts";
import type { DbClient } from "../db/mod.ts";

/** A second job on a bucket that already has an active one. */
export class BucketBusyError extends Error {
  constructor(readonly bucket: string, readonly jobId: string) {
    super(`Bucket "${bucket}" already has an active maintenance job (${jobId})`);
    this.name = "BucketBusyError";
  }
}

/** A status change the transition table refuses (or a job that is gone). */
export class JobStateError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "JobStateError";
  }
}

export interface NewMaintenanceJob {
  type: string;
  scope: JobScope;
  progress: JobProgress;
  state: Record<string, unknown>;
  createdBy: string;
}

export interface JobPatch {
  status?: JobStatus;
  progress?: JobProgress;
  state?: Record<string, unknown>;
  error?: string | null;
  cancelRequested?: boolean;
  startedAt?: number;
  finishedAt?: number;
}

type Row = Record<string, unknown>;

const nullableNumber = (value: unknown) => value === null ? null : Number(value);

/** A `jobs` row as a JobRecord. */
export function toJob(row: Row): JobRecord {
  return {
    id: String(row.id),
    kind: String(row.kind) as JobKind,
    type: String(row.type),
    scope: JSON.parse(String(row.scope)),
    status: String(row.status) as JobStatus,
    paused: Number(row.paused) === 1,
    cancelRequested: Number(row.cancel_requested) === 1,
    progress: JSON.parse(String(row.progress)),
    state: JSON.parse(String(row.state)),
    error: row.error === null ? null : String(row.error),
    createdBy: String(row.created_by),
    createdAt: Number(row.created_at),
    startedAt: nullableNumber(row.started_at),
    finishedAt: nullableNumber(row.finished_at),
    updatedAt: Number(row.updated_at),
  };
}

/** A `job_runs` row as a RunRecord. */
export function toRun(row: Row): RunRecord {
  return {
    id: Number(row.id),
    jobId: String(row.job_id),
    triggeredBy: String(row.triggered_by),
    status: String(row.status) as JobStatus,
    counters: JSON.parse(String(row.counters)),
    error: row.error === null ? null : String(row.error),
    startedAt: Number(row.started_at),
    finishedAt: nullableNumber(row.finished_at),
  };
}

const ACTIVE_LIST = [...ACTIVE].map((status) => `'${status}'`).join(", ");

export class JobsStore {
  readonly #db: DbClient;
  readonly #now: () => number;
  readonly #maxFailures: number;

  constructor(db: DbClient, options: { now?: () => number; maxFailures?: number } = {}) {
    this.#db = db;
    this.#now = options.now ?? Date.now;
    this.#maxFailures = options.maxFailures ?? 1000;
  }

  /**
   * Creates `maintenance:<n>` (n from a sequence that never repeats) as `queued`, refusing with
   * BucketBusyError when the bucket already has an active job. One transaction.
   */
  createMaintenance(job: NewMaintenanceJob): Promise<JobRecord> {
    return this.#db.transaction(async (tx) => {
      const busy = await tx.execute({
        sql: `SELECT id FROM jobs WHERE kind = 'maintenance' AND bucket = ?
          AND status IN (${ACTIVE_LIST}) LIMIT 1`,
        args: [job.scope.bucket],
      });
      if (busy.rows.length > 0) {
        throw new BucketBusyError(job.scope.bucket, String(busy.rows[0].id));
      }
      const seq = await tx.execute("SELECT value FROM meta WHERE key = 'maintenance_seq'");
      const n = Number(seq.rows[0]?.value ?? 0) + 1;
      await tx.execute({
        sql: "UPDATE meta SET value = ? WHERE key = 'maintenance_seq'",
        args: [String(n)],
      });
      const now = this.#now();
      const id = `maintenance:${n}`;
      await tx.execute({
        sql: `INSERT INTO jobs (id, kind, type, bucket, scope, status, paused, cancel_requested,
          progress, state, error, created_by, created_at, updated_at)
          VALUES (?, 'maintenance', ?, ?, ?, 'queued', 0, 0, ?, ?, NULL, ?, ?, ?)`,
        args: [
          id,
          job.type,
          job.scope.bucket,
          JSON.stringify(job.scope),
          JSON.stringify(job.progress),
          JSON.stringify(job.state),
          job.createdBy,
          now,
          now,
        ],
      });
      return toJob(
        (await tx.execute({ sql: "SELECT * FROM jobs WHERE id = ?", args: [id] }))
          .rows[0],
      );
    });
  }

  async get(id: string): Promise<JobRecord | null> {
    const result = await this.#db.execute({ sql: "SELECT * FROM jobs WHERE id = ?", args: [id] });
    return result.rows[0] ? toJob(result.rows[0]) : null;
  }

  /** Every job, newest first. */
  async list(): Promise<JobRecord[]> {
    const result = await this.#db.execute("SELECT * FROM jobs ORDER BY created_at DESC, id DESC");
    return result.rows.map(toJob);
  }

  /** The active maintenance job of a bucket (queued, running or cancelling), or null. */
  async activeForBucket(bucket: string): Promise<JobRecord | null> {
    const result = await this.#db.execute({
      sql: `SELECT * FROM jobs WHERE kind = 'maintenance' AND bucket = ?
        AND status IN (${ACTIVE_LIST}) ORDER BY created_at DESC LIMIT 1`,
      args: [bucket],
    });
    return result.rows[0] ? toJob(result.rows[0]) : null;
  }

  /** Active jobs of a kind, oldest first (the order they resume in). */
  async active(kind: JobKind): Promise<JobRecord[]> {
    const result = await this.#db.execute({
      sql: `SELECT * FROM jobs WHERE kind = ? AND status IN (${ACTIVE_LIST})
        ORDER BY created_at, id`,
      args: [kind],
    });
    return result.rows.map(toJob);
  }

  /** Counts by kind and status (the jobs gauge). */
  async counts(): Promise<{ kind: JobKind; status: JobStatus; count: number }[]> {
    const result = await this.#db.execute(
      "SELECT kind, status, COUNT(*) AS n FROM jobs GROUP BY kind, status",
    );
    return result.rows.map((row) => ({
      kind: String(row.kind) as JobKind,
      status: String(row.status) as JobStatus,
      count: Number(row.n),
    }));
  }

  /**
   * Applies `patch`; a status change must be allowed from the stored status (and, when
   * `expect` is given, the stored status must be one of it). Throws JobStateError otherwise.
   */
  update(id: string, patch: JobPatch, expect?: readonly JobStatus[]): Promise<JobRecord> {
    return this.#db.transaction(async (tx) => {
      const job = await this.#read(tx, id);
      if (expect && !expect.includes(job.status)) {
        throw new JobStateError(`Job ${id} is ${job.status}`);
      }
      if (
        patch.status !== undefined && patch.status !== job.status &&
        !canTransition(job.kind, job.status, patch.status)
      ) {
        throw new JobStateError(`Job ${id} cannot go from ${job.status} to ${patch.status}`);
      }
      const sets: string[] = ["updated_at = ?"];
      const args: (string | number | null)[] = [this.#now()];
      const set = (column: string, value: string | number | null) => {
        sets.push(`${column} = ?`);
        args.push(value);
      };
      if (patch.status !== undefined) set("status", patch.status);
      if (patch.progress !== undefined) set("progress", JSON.stringify(patch.progress));
      if (patch.state !== undefined) set("state", JSON.stringify(patch.state));
      if (patch.error !== undefined) set("error", patch.error);
      if (patch.cancelRequested !== undefined) {
        set("cancel_requested", patch.cancelRequested ? 1 : 0);
      }
      if (patch.startedAt !== undefined) set("started_at", patch.startedAt);
      if (patch.finishedAt !== undefined) set("finished_at", patch.finishedAt);
      args.push(id);
      await tx.execute({ sql: `UPDATE jobs SET ${sets.join(", ")} WHERE id = ?`, args });
      return await this.#read(tx, id);
    });
  }

  async #read(tx: Transaction, id: string): Promise<JobRecord> {
    const result = await tx.execute({ sql: "SELECT * FROM jobs WHERE id = ?", args: [id] });
    if (!result.rows[0]) throw new JobStateError(`Job ${id} does not exist`);
    return toJob(result.rows[0]);
  }

  /**
   * Boot: every maintenance job a dead process left `running` or `cancelling` goes back to
   * `queued` (a pending cancel stays requested). Returns the active jobs, oldest first.
   */
  async requeueUnfinished(): Promise<JobRecord[]> {
    await this.#db.execute({
      sql: `UPDATE jobs SET status = 'queued', updated_at = ?
        WHERE kind = 'maintenance' AND status IN ('running', 'cancelling')`,
      args: [this.#now()],
    });
    return await this.active("maintenance");
  }

  /** Records a per-object failure; keeps the newest `maxFailures` of the job. */
  async addFailure(failure: Omit<FailureRecord, "id">): Promise<void> {
    await this.#db.batch([
      {
        sql: `INSERT INTO job_failures (job_id, run_id, bucket, object_key, error_message,
          occurred_at) VALUES (?, ?, ?, ?, ?, ?)`,
        args: [
          failure.jobId,
          failure.runId,
          failure.bucket,
          failure.key,
          failure.message,
          failure.occurredAt,
        ],
      },
      {
        sql: `DELETE FROM job_failures WHERE job_id = ? AND id <= (
          SELECT id FROM job_failures WHERE job_id = ? ORDER BY id DESC LIMIT 1 OFFSET ?)`,
        args: [failure.jobId, failure.jobId, this.#maxFailures],
      },
    ], "write");
  }

  async failures(jobId: string, limit: number): Promise<FailureRecord[]> {
    const result = await this.#db.execute({
      sql: "SELECT * FROM job_failures WHERE job_id = ? ORDER BY id DESC LIMIT ?",
      args: [jobId, limit],
    });
    return result.rows.map((row) => ({
      id: Number(row.id),
      jobId: String(row.job_id),
      runId: nullableNumber(row.run_id),
      bucket: String(row.bucket),
      key: String(row.object_key),
      message: String(row.error_message),
      occurredAt: Number(row.occurred_at),
    }));
  }

  /** Recorded runs of a recurring job, newest first. */
  async runs(jobId: string, limit: number): Promise<RunRecord[]> {
    const result = await this.#db.execute({
      sql: "SELECT * FROM job_runs WHERE job_id = ? ORDER BY id DESC LIMIT ?",
      args: [jobId, limit],
    });
    return result.rows.map(toRun);
  }
}
