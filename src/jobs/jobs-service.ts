/**
 * The jobs room as the admin API sees it: creating maintenance jobs (validated before anything
 * changes), cancelling, listing rows, runs and failures, and the boot step that re-queues what a
 * dead process left. It owns the runner and keeps the write gate in step with the jobs: engaged
 * when a job is created (or re-queued at boot), lifted when it ends (a migration lifts it itself
 * at the routing flip).
 */
import { JobsError } from "./jobs-error.ts";
import { BucketBusyError, type JobsStore } from "./jobs-store.ts";
import { bucketNameProblem } from "../lib/mod.ts";
import { getLogger } from "../observability/mod.ts";
import {
  emptyProgress,
  failureRow,
  JOB_KINDS,
  JOB_STATUSES,
  type JobKind,
  type JobRecord,
  jobRow,
  type JobStatus,
  runRow,
  synthesizedRun,
  TERMINAL,
} from "./job-model.ts";
import { progressView } from "./job-progress.ts";
import { JobRunner, type JobWorker } from "./runner.ts";
import type { MaintenanceDeps } from "./maintenance/maintenance-deps.ts";
import { type MigrateState, migrateWorker } from "./maintenance/migrate.ts";
import { reencryptWorker } from "./maintenance/reencrypt.ts";
import { messageOf } from "./maintenance/job-steps.ts";
import { activeRow, checkFleetFree, claimNew, reclaim } from "./maintenance/fleet-jobs.ts";
import type { RulesRoom } from "./rules/rules-room.ts";
import type { JobAction } from "./job-model.ts";

const log = getLogger("svc::jobs");

/** SPEC: a re-encrypt request names at most this many buckets. */
export const MAX_REENCRYPT_BUCKETS = 100;

export interface Actor {
  user: string;
  ip: string;
}

export interface JobsGauge {
  set(labels: { kind: JobKind; status: JobStatus }, value: number): void;
}

export interface JobsServiceOptions {
  deps: MaintenanceDeps;
  /** Maintenance jobs running at once. */
  concurrency?: number;
  gauge?: JobsGauge;
  /** Replication and lifecycle rules (their rows, runs and actions). */
  rules?: RulesRoom;
}

export class JobsService {
  readonly #deps: MaintenanceDeps;
  readonly #store: JobsStore;
  readonly #runner: JobRunner;
  readonly #gauge?: JobsGauge;
  readonly #rules?: RulesRoom;

  constructor(options: JobsServiceOptions) {
    const deps = options.deps;
    this.#rules = options.rules;
    this.#deps = deps;
    this.#store = deps.store;
    this.#gauge = options.gauge;
    const workers: Record<string, JobWorker> = {
      reencrypt: reencryptWorker(deps),
      migrate: migrateWorker(deps),
    };
    this.#runner = new JobRunner({
      store: deps.store,
      clock: deps.clock,
      concurrency: options.concurrency ?? 2,
      workerFor: (job) => {
        const worker = workers[job.type];
        if (!worker) throw new Error(`No worker for job type "${job.type}"`);
        return worker;
      },
      onEnd: (job) => this.#ended(job),
    });
    deps.fleet?.attach({
      row: (id) => activeRow(this.#store, id),
      cancel: async (id, by) => {
        const job = await this.#store.get(id);
        if (job && !TERMINAL.has(job.status)) await this.cancel(job, { user: by, ip: "fleet" });
      },
      lost: async (id, why) => {
        const job = await this.#store.get(id);
        if (!job || TERMINAL.has(job.status)) return;
        log.warn("a maintenance job lost its fleet gate and stops", { job: id, why });
        await this.cancel(job, { user: "$fleet", ip: "local" }).catch(() => {});
      },
    });
  }

  get runner(): JobRunner {
    return this.#runner;
  }

  /** Boot: re-queues unfinished maintenance jobs, engages their gates, starts them. */
  async start(): Promise<void> {
    const resumed = await this.#store.requeueUnfinished();
    for (const job of resumed) {
      const state = job.state as Partial<MigrateState>;
      if (!(job.type === "migrate" && state.flipped)) {
        this.#deps.gate.engage(job.scope.bucket, job.id);
        const fleet = this.#deps.fleet;
        if (fleet && !(await reclaim(fleet, this.#store, job, this.#deps.audit))) {
          this.#deps.gate.lift(job.scope.bucket, job.id);
          continue;
        }
      }
      this.#deps.audit("job_requeued", { job: job.id, type: job.type, bucket: job.scope.bucket });
      log.info("maintenance job re-queued after a restart", { job: job.id, type: job.type });
      this.#runner.enqueue(job.id);
    }
    await this.#rules?.start(this.#deps.clock.now());
    await this.refreshGauge();
  }

  async stop(): Promise<void> {
    await Promise.all([this.#runner.stop(), this.#rules?.stop()]);
    await this.#deps.fleet?.stop();
  }

  async list(): Promise<Record<string, unknown>[]> {
    await this.#rules?.sync();
    const jobs = await this.#store.list();
    const rules = await this.#rules?.rows(jobs);
    const rows = jobs.map((job) => rules?.get(job.id) ?? jobRow(job));
    return [...rows, ...(this.#deps.fleet?.remoteRows() ?? [])];
  }

  /** The row of one job as `GET /jobs` shows it. */
  async row(job: JobRecord): Promise<Record<string, unknown>> {
    const remote = this.#deps.fleet?.isRemote(job.id) ? this.#deps.fleet.remoteRow(job.id) : null;
    if (remote) return remote;
    return (await this.#rules?.rows([job]))?.get(job.id) ?? jobRow(job);
  }

  /** An action of the job's kind (the route checked the matrix). */
  async action(
    job: JobRecord,
    action: JobAction,
    actor: Actor,
  ): Promise<{ status: number; body: Record<string, unknown> }> {
    if (job.kind === "maintenance") {
      return { status: 202, body: jobRow(await this.cancel(job, actor)) };
    }
    if (!this.#rules) throw new JobsError("not_found", `No job "${job.id}"`);
    const outcome = await this.#rules.act(job, action, actor);
    await this.refreshGauge();
    return outcome;
  }

  /** The job of an id from a URL (`maintenance:<n>`, or just `<n>`); 404 when unknown. */
  async job(id: string): Promise<JobRecord> {
    if (!/^maintenance:|^\d+$/.test(id)) await this.#rules?.sync();
    const fleet = this.#deps.fleet;
    if (fleet?.isRemote(id)) {
      const remote = fleet.remoteJob(id);
      if (remote === null) throw new JobsError("not_found", `No job "${id}"`);
      return remote;
    }
    const full = /^\d+$/.test(id) ? `maintenance:${id}` : id;
    const job = await this.#store.get(full);
    if (job === null) throw new JobsError("not_found", `No job "${id}"`);
    return job;
  }

  async runs(job: JobRecord, limit: number): Promise<Record<string, unknown>[]> {
    if (job.kind === "maintenance") {
      const run = synthesizedRun(job);
      return run === null ? [] : [runRow(run)!];
    }
    // A rule's runs: in a fleet, every instance's (rules-room.ts).
    if (this.#rules) return await this.#rules.runs(job, limit);
    return (await this.#store.runs(job.id, limit)).map((run) => runRow(run)!);
  }

  async failures(job: JobRecord, limit: number): Promise<Record<string, unknown>[]> {
    return (await this.#store.failures(job.id, limit)).map(failureRow);
  }

  /** The active job of a bucket: status, phase and counts only (browse sessions read it). */
  async bucketStatus(bucket: string): Promise<Record<string, unknown>> {
    const job = (await this.#store.activeForBucket(bucket)) ??
      this.#deps.fleet?.remoteJobOf(bucket) ?? null;
    const gated = this.#deps.gate.holder(bucket) !== undefined;
    if (job === null) return { bucket, write_gate: gated ? "gated" : "open", job: null };
    const { phase, objects_done, objects_failed, bytes_done, objects_total, percent, eta_seconds } =
      progressView(job.progress as unknown as Record<string, unknown>, job);
    return {
      bucket,
      write_gate: gated ? "gated" : "open",
      job: {
        id: job.id,
        type: job.type,
        status: job.status,
        phase,
        objects_done,
        objects_failed,
        bytes_done,
        objects_total,
        percent,
        eta_seconds,
      },
    };
  }

  /** Checks that `bucket` names an existing bucket; returns its route. */
  async #existing(bucket: string) {
    const problem = bucketNameProblem(bucket);
    if (problem !== null) {
      throw new JobsError("bad_request", `Bucket name "${bucket}" is not valid: ${problem}`);
    }
    let route;
    try {
      route = await this.#deps.route(bucket);
      if ((await route.backend.headBucket(route.real)) !== null) return route;
    } catch (err) {
      throw new JobsError(
        "unavailable",
        `Bucket "${bucket}" cannot be reached: ${messageOf(err)}`,
      );
    }
    throw new JobsError("not_found", `Bucket "${bucket}" does not exist`);
  }

  async #create(
    type: "reencrypt" | "migrate",
    scope: JobRecord["scope"],
    state: Record<string, unknown>,
    actor: Actor,
  ): Promise<JobRecord> {
    await checkFleetFree(this.#deps.fleet, scope.bucket);
    let job: JobRecord;
    try {
      job = await this.#store.createMaintenance({
        type,
        scope,
        progress: emptyProgress("queued"),
        state,
        createdBy: actor.user,
      });
    } catch (err) {
      if (err instanceof BucketBusyError) throw new JobsError("conflict", err.message);
      throw err;
    }
    // Engaged now: from here every new write to the bucket answers 503 SlowDown (in a fleet,
    // on every instance once it sees the gate; the worker waits for their acks).
    if (this.#deps.fleet) await claimNew(this.#deps.fleet, this.#store, job);
    this.#deps.gate.engage(scope.bucket, job.id);
    this.#deps.audit("job_created", { ...actor, job: job.id, type, ...scope });
    this.#runner.enqueue(job.id);
    await this.refreshGauge();
    return job;
  }

  /** `POST /jobs/reencrypt`: one job per bucket; per-bucket refusals are listed, not thrown. */
  async reencrypt(buckets: string[], actor: Actor) {
    const started: { bucket: string; job_id: number; id: string }[] = [];
    const errors: { bucket: string; error: string; message: string }[] = [];
    for (const bucket of new Set(buckets)) {
      try {
        await this.#existing(bucket);
        const job = await this.#create(
          "reencrypt",
          { bucket, prefix: "" },
          { cursor: null },
          actor,
        );
        started.push({ bucket, job_id: numberOf(job.id), id: job.id });
      } catch (err) {
        if (!(err instanceof JobsError)) throw err;
        errors.push({ bucket, error: err.code, message: err.message });
      }
    }
    return { started, errors };
  }

  /** `POST /buckets/:bucket/migrate`: validated in full before the job exists. */
  async migrate(bucket: string, target: string, deleteSource: boolean, actor: Actor) {
    if (this.#deps.backend(target) === undefined) {
      throw new JobsError("bad_request", `Unknown backend "${target}"`);
    }
    const route = await this.#existing(bucket);
    if (route.name === target) {
      throw new JobsError("bad_request", `Bucket "${bucket}" is already on backend "${target}"`);
    }
    const targetBackend = this.#deps.backend(target)!;
    try {
      if ((await targetBackend.headBucket(route.real)) !== null) {
        const page = await targetBackend.listObjects(route.real, { prefix: "", maxKeys: 1 });
        if (page.objects.length > 0 || page.commonPrefixes.length > 0) {
          throw new JobsError(
            "conflict",
            `Backend "${target}" already has a non-empty bucket "${route.real}"`,
          );
        }
      }
    } catch (err) {
      if (err instanceof JobsError) throw err;
      throw new JobsError(
        "unavailable",
        `Backend "${target}" cannot be reached: ${messageOf(err)}`,
      );
    }
    const state: MigrateState = {
      from: route.name,
      to: target,
      real: route.real,
      deleteSource,
      cursor: null,
      createdTarget: false,
      flipped: false,
      cleanupCursor: null,
    };
    const job = await this.#create("migrate", { bucket, prefix: "", target }, state, actor);
    return {
      job_id: numberOf(job.id),
      id: job.id,
      bucket,
      from_backend: route.name,
      to_backend: target,
    };
  }

  /** `POST /jobs/:id/cancel` of a maintenance job. */
  async cancel(job: JobRecord, actor: Actor): Promise<JobRecord> {
    if (this.#deps.fleet?.isRemote(job.id)) {
      const refused = await this.#deps.fleet.requestCancel(job.id, actor.user);
      if (refused !== null) throw new JobsError("conflict", refused);
      this.#deps.audit("job_cancel_requested", { ...actor, job: job.id, bucket: job.scope.bucket });
      return { ...job, status: "cancelling", cancelRequested: true };
    }
    if (TERMINAL.has(job.status)) {
      throw new JobsError("conflict", `Job ${job.id} already ended (${job.status})`);
    }
    if (job.type === "migrate" && (job.state as Partial<MigrateState>).flipped) {
      throw new JobsError(
        "conflict",
        `Job ${job.id} already moved bucket "${job.scope.bucket}" to its new backend; ` +
          `it can no longer be cancelled`,
      );
    }
    let updated = job;
    if (job.status !== "cancelling") {
      updated = await this.#store.update(job.id, { status: "cancelling", cancelRequested: true }, [
        "queued",
        "running",
      ]).catch(async (err) => {
        const now = await this.#store.get(job.id);
        if (now && TERMINAL.has(now.status)) {
          throw new JobsError("conflict", `Job ${job.id} already ended (${now.status})`);
        }
        throw err;
      });
      this.#deps.audit("job_cancel_requested", { ...actor, job: job.id, bucket: job.scope.bucket });
    }
    this.#runner.cancel(job.id);
    await this.refreshGauge();
    return updated;
  }

  #ended(job: JobRecord): void {
    this.#deps.gate.lift(job.scope.bucket, job.id);
    this.#deps.audit(job.status === "cancelled" ? "job_cancelled" : "job_finished", {
      job: job.id,
      type: job.type,
      bucket: job.scope.bucket,
      status: job.status,
      objects_done: job.progress.objects_done,
      objects_failed: job.progress.objects_failed,
      error: job.error,
    }, job.status === "failed" ? "warn" : "info");
    this.refreshGauge().catch(() => {});
  }

  /** Sets the jobs gauge from the stored rows (every kind and status, 0 when none). */
  async refreshGauge(): Promise<void> {
    if (!this.#gauge) return;
    const counts = await this.#store.counts();
    for (const kind of JOB_KINDS) {
      for (const status of JOB_STATUSES) {
        const found = counts.find((c) => c.kind === kind && c.status === status);
        this.#gauge.set({ kind, status }, found?.count ?? 0);
      }
    }
  }
}

function numberOf(id: string): number {
  return Number(id.slice(id.indexOf(":") + 1));
}
