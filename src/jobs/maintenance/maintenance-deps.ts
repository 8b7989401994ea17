/**
 * What the maintenance workers (re-encrypt, migrate) need from the running svc, as an
 * interface: the runtime (src/runtime/admin-plane.ts) builds it over the storage stack and the
 * config runtime; unit tests pass real backends on temp directories.
 */
import type { AuditFn } from "../../observability/mod.ts";
import type { JobsStore } from "../jobs-store.ts";
import type { Backend } from "../../storage/mod.ts";
import type { Clock } from "../clock.ts";
import type { JobRecord } from "../job-model.ts";

export interface BucketRoute {
  /** The backend's name in the config. */
  name: string;
  backend: Backend;
  /** The bucket's name on that backend (its alias, or the bucket itself). */
  real: string;
}

export interface MaintenanceSettings {
  /** Keys listed per page (and the cursor's granularity is one object). */
  batchSize: number;
  /** Pause after each object, to bound the load a job puts on the backends (0 = none). */
  paceMs: number;
  /** Attempts per object before it is recorded as failed. */
  attempts: number;
}

/**
 * The buckets maintenance jobs hold against client writes. The S3 layer's `BucketWriteGate`
 * (s3/write-gate.ts) implements it: a held bucket answers client writes with 503 SlowDown, and
 * the gate counts the writes in flight. Declared here so the jobs depend on this port, not on the
 * S3 layer above them.
 */
export interface MaintenanceWriteGate {
  /** The job holding `bucket`, or undefined when writes may pass. */
  holder(bucket: string): string | undefined;
  /** Holds `bucket` for `jobId`: client writes are refused from now on. */
  engage(bucket: string, jobId: string): void;
  /** Releases `bucket` if `jobId` (when given) is the one holding it. */
  lift(bucket: string, jobId?: string): void;
  /** Resolves once no client write to `bucket` is in flight; rejects with the signal's reason. */
  drained(bucket: string, signal?: AbortSignal): Promise<void>;
}

/** What the fleet gate asks of this instance's jobs (jobs-service.ts answers). */
export interface FleetJobHooks {
  /** The row of a local job still active (queued, running, cancelling); else null. */
  row(id: string): Promise<Record<string, unknown> | null>;
  /** Cancels a local job (asked on another instance). */
  cancel(id: string, by: string): Promise<void>;
  /** The job's fleet gate was lifted under it (its heartbeat lapsed): it must stop. */
  lost(id: string, why: string): Promise<void>;
}

/**
 * The fleet side of maintenance jobs (fleet-gate.ts), present in fleet mode only: the gate held
 * on every instance, and the jobs other instances run.
 */
export interface MaintenanceFleet {
  attach(hooks: FleetJobHooks): void;
  /** Why `bucket` cannot get a job now (another instance's job holds it), or null. */
  check(bucket: string): Promise<string | null>;
  /** Takes the bucket's fleet gate for `job`: new, already its own (a resume), or held. */
  claim(job: JobRecord): Promise<"created" | "own" | "held">;
  remoteRows(): Record<string, unknown>[];
  remoteRow(id: string): Record<string, unknown> | null;
  remoteJob(id: string): JobRecord | null;
  /** The job another instance runs on `bucket`, if any. */
  remoteJobOf(bucket: string): JobRecord | null;
  isRemote(id: string): boolean;
  /** Asks the holder to cancel; a message when it cannot be, else null. */
  requestCancel(id: string, by: string): Promise<string | null>;
  stop(): Promise<void>;
}

/** Bounded-label counters the workers feed (`type` is `reencrypt` or `migrate`). */
export interface JobMetrics {
  objects(type: string, outcome: "done" | "failed", n?: number): void;
  bytes(type: string, n: number): void;
}

export interface MaintenanceDeps {
  store: JobsStore;
  clock: Clock;
  gate: MaintenanceWriteGate;
  /** Where a bucket lives now. */
  route(bucket: string): Promise<BucketRoute>;
  /** The backend `storage.buckets.<bucket>.backend` names in the running config, if any. */
  routedTo(bucket: string): string | undefined;
  /** A configured backend by name (undefined when not configured). */
  backend(name: string): Backend | undefined;
  /**
   * Routes `bucket` to `backend` through the one config apply path, persisted to the config
   * file (`storage.buckets.<bucket>.backend`).
   */
  routeBucket(bucket: string, backend: string): Promise<void>;
  settings(): MaintenanceSettings;
  audit: AuditFn;
  metrics?: JobMetrics;
  /** Fleet mode only (`advanced.config_sync_bucket`): the gate is then also `gate`. */
  fleet?: MaintenanceFleet;
}
