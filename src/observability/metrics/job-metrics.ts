/** Maintenance jobs, replication runs and lifecycle runs. */
import {
  type CounterHandle,
  type LabelledCounterHandle,
  type MetricRegistry,
  SourcedGauge,
} from "./metric-registry.ts";

/** `kind`, `status` and `type` come from the fixed sets of src/jobs/job-model.ts. */
export interface JobMetrics {
  count: { set(labels: { kind: string; status: string }, value: number): void };
  objects: LabelledCounterHandle<{ type: string; outcome: "done" | "failed" }>;
  bytes: LabelledCounterHandle<{ type: string }>;
}

export interface ReplicationMetrics {
  listCalls: CounterHandle;
  headCalls: CounterHandle;
  dirsCompleted: CounterHandle;
}

/**
 * Lifecycle runs (jobs/lifecycle/): `action` is `expire`, `transition` or `retain-newest`;
 * `outcome` is `done` or `failed`. Previews are not counted.
 */
export interface LifecycleMetrics {
  objects: LabelledCounterHandle<{ action: string; outcome: "done" | "failed" }>;
  bytes: LabelledCounterHandle<{ action: string }>;
}

export function replicationMetrics({ counter }: MetricRegistry): ReplicationMetrics {
  return {
    listCalls: counter("svc_replication_list_calls_total", "Replication list calls."),
    headCalls: counter("svc_replication_head_calls_total", "Replication head calls."),
    dirsCompleted: counter("svc_replication_dirs_completed_total", "Directories replicated."),
  };
}

export function jobMetrics({ counter, gauge }: MetricRegistry): JobMetrics {
  return {
    count: gauge("svc_jobs", "Jobs by kind and status.", ["kind", "status"]),
    objects: counter(
      "svc_job_objects_total",
      "Objects processed by maintenance jobs (re-encrypt, migrate), by outcome.",
      ["type", "outcome"],
    ),
    bytes: counter("svc_job_bytes_total", "Bytes copied by maintenance jobs.", ["type"]),
  };
}

export function lifecycleMetrics({ counter }: MetricRegistry): LifecycleMetrics {
  return {
    objects: counter(
      "svc_lifecycle_objects_total",
      "Objects lifecycle rules expired or transitioned, by action and outcome.",
      ["action", "outcome"],
    ),
    bytes: counter(
      "svc_lifecycle_bytes_total",
      "Logical bytes lifecycle rules expired or transitioned, by action.",
      ["action"],
    ),
  };
}

/** What the write gate (s3/write-gate.ts) holds right now. */
export interface WriteGateStats {
  /** Buckets whose writes a maintenance job holds, on this instance or another one (a fleet). */
  held: number;
  /** Buckets refused whole: a migration's route record this instance cannot adopt (a fleet). */
  fenced: number;
}

/** Gauges of the write gate, read at scrape time (0 while there is none). */
export function writeGateMetrics(
  { registers }: MetricRegistry,
  gate: () => WriteGateStats | null,
): void {
  new SourcedGauge(
    "svc_write_gated_buckets",
    "Buckets whose writes a maintenance job holds (answered 503 SlowDown), here or elsewhere in the fleet.",
    registers,
    () => gate()?.held ?? 0,
  );
  new SourcedGauge(
    "svc_fenced_buckets",
    "Buckets refused whole because a migration's route record cannot be adopted here.",
    registers,
    () => gate()?.fenced ?? 0,
  );
}
