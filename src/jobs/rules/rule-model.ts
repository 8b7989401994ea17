/**
 * What replication and lifecycle rules share on the jobs surface: the run report (SPEC "Run-now
 * and preview responses"), the recorder a run reports through, and the driver each kind plugs
 * into the rule scheduler (rule-jobs.ts). A driver knows its rules and how to run one; the
 * scheduler owns rows, leases, history, failures, pause flags and the actions.
 */
import type { Config } from "../../config/mod.ts";
import type { Clock } from "../clock.ts";
import type { JobScope } from "../job-model.ts";

/** Counters of one run; they cover the whole run (candidates and failures are capped). */
export interface RunCounters {
  objects_scanned: number;
  objects_affected: number;
  objects_skipped: number;
  bytes_affected: number;
  errors: number;
  /** retain-newest: objects failing `qualify` (never counted, never deleted). */
  objects_ignored?: number;
  /** retain-newest: selected for deletion but younger than `protect_younger_than`. */
  objects_protected?: number;
}

export function emptyCounters(): RunCounters {
  return {
    objects_scanned: 0,
    objects_affected: 0,
    objects_skipped: 0,
    bytes_affected: 0,
    errors: 0,
  };
}

/** One object a run acted on (or, in a preview, would act on). */
export interface RunCandidate {
  bucket: string;
  key: string;
  /** `copy`, `delete`, `expire`, `transition`, … (the kind's own words). */
  action: string;
  destination_bucket?: string;
  destination_key?: string;
  /** ISO 8601; null when unknown. */
  created_at: string | null;
  size: number;
}

export interface RunFailure {
  bucket: string;
  key: string;
  message: string;
  /** ISO 8601. */
  occurred_at: string;
}

/** How a run ended, as the driver judges it. */
export interface RunOutcome {
  status: "succeeded" | "failed" | "cancelled";
  error?: string | null;
}

/** The answer of run-now and preview. `run_id` only for real executions. */
export interface RunReport extends RunCounters {
  run_id?: number;
  status: RunOutcome["status"];
  error: string | null;
  candidates: RunCandidate[];
  failures: RunFailure[];
}

/**
 * What a driver's run reports through. Counters are mutated in place; `fail` records a
 * per-object failure (the failure ring of the rule, except in a preview) and counts an error.
 */
export interface RunRecorder {
  readonly counters: RunCounters;
  candidate(candidate: RunCandidate): void;
  fail(bucket: string, key: string, error: unknown): void;
}

export type RunTrigger = "scheduler" | "run-now" | "preview";

export interface RunContext<State = Record<string, unknown>> {
  trigger: RunTrigger;
  /** A preview: decide everything, change nothing, record no history. */
  dryRun: boolean;
  /** Aborts on kill, shutdown or a lost lease (the reason says which). */
  signal: AbortSignal;
  clock: Clock;
  recorder: RunRecorder;
  /** The rule's persisted resume state (a replication cursor); `{}` at first. */
  state: State;
  /** Persists the resume state (a no-op in a preview). */
  saveState(state: State): Promise<void>;
}

/** The global knobs of a kind, as the scheduler needs them (milliseconds). */
export interface KindSettings {
  enabled: boolean;
  tickMs: number;
  maxFailures: number;
  /** Replication only; lifecycle runs hold a node-local lease of one tick. */
  leaseTtlMs: number;
  heartbeatMs: number;
}

export interface RuleDriver<Rule extends { name: string; enabled: boolean }> {
  kind: "replication" | "lifecycle";
  settings(config: Config): KindSettings;
  rules(config: Config): Rule[];
  /** The work within the kind (the row's `type`). */
  type(rule: Rule): string;
  scope(rule: Rule): JobScope;
  /** Time between two scheduled runs of the rule. */
  intervalMs(rule: Rule, config: Config): number;
  run(rule: Rule, context: RunContext): Promise<RunOutcome>;
  /** Replication: the parity audit of a rule's source and destination (no lease, no history). */
  verify?(rule: Rule, signal: AbortSignal): Promise<Record<string, unknown>>;
}
