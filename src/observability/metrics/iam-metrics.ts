/**
 * IAM: decisions on S3 requests, index rebuilds, the index in effect (read at scrape time from
 * `index`, the IAM plane's holder), config sync steps and OIDC logins.
 */
import {
  type CounterHandle,
  DURATION_BUCKETS,
  type HistogramHandle,
  type LabelledCounterHandle,
  type MetricRegistry,
  SourcedGauge,
} from "./metric-registry.ts";

export type IamDecisionReason = "allow" | "explicit_deny" | "no_match" | "unknown_principal";
export type ConfigSyncOutcome = "published" | "adopted" | "conflict" | "failed";

/** The IAM index in effect: its user count and the IAM version it was built from. */
export interface IamIndexStats {
  users: number;
  version: number;
}

export interface IamMetrics {
  /** IAM decisions on S3 requests (the bootstrap key and open access are not counted). */
  decisions: LabelledCounterHandle<{ decision: "allow" | "deny"; reason: IamDecisionReason }>;
  rebuilds: CounterHandle;
  rebuildDuration: HistogramHandle;
  /** Config sync steps (db/config-sync.ts) by outcome. */
  syncs: LabelledCounterHandle<{ outcome: ConfigSyncOutcome }>;
  /** OIDC logins (admin/oauth-routes.ts): `ok`, or the refusal reason (a fixed set). */
  oauthLogins: LabelledCounterHandle<{ outcome: string }>;
}

/** `index` answers null while there is no IAM index (the gauges then read 0). */
export function iamMetrics(
  { counter, histogram, registers }: MetricRegistry,
  index: () => IamIndexStats | null,
): IamMetrics {
  new SourcedGauge(
    "svc_iam_users",
    "IAM users in the index in effect.",
    registers,
    () => index()?.users ?? 0,
  );
  new SourcedGauge(
    "svc_iam_index_version",
    "The IAM version the index in effect was built from.",
    registers,
    () => index()?.version ?? 0,
  );
  return {
    decisions: counter("svc_iam_decisions_total", "IAM decisions on S3 requests.", [
      "decision",
      "reason",
    ]),
    rebuilds: counter("svc_iam_index_rebuilds_total", "IAM index rebuilds."),
    oauthLogins: counter(
      "svc_oauth_logins_total",
      "OIDC logins by outcome (ok, or why one was refused).",
      ["outcome"],
    ),
    syncs: counter(
      "svc_config_sync_total",
      "Config sync steps: IAM published, adopted, lost to a conflict, or failed.",
      ["outcome"],
    ),
    rebuildDuration: histogram(
      "svc_iam_index_rebuild_seconds",
      "Time to rebuild the IAM index.",
      DURATION_BUCKETS,
    ),
  };
}
