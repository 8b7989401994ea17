/**
 * Replication as a kind of the rule scheduler (jobs/rules/): its rules, scope and interval, the
 * full-reconcile run (reconcile-run.ts) and the parity audit (parity-audit.ts). The event path
 * (outbox-consumer.ts) runs beside the scheduler and plans through the same replicator.
 */
import type { Config, ReplicationRule } from "../../config/mod.ts";
import { ms, replicationSettings } from "../rules/rule-config.ts";
import type { RuleEnv } from "../rules/rule-env.ts";
import type { RuleDriver } from "../rules/rule-model.ts";
import { parityAudit } from "./parity-audit.ts";
import { reconcileRun } from "./reconcile-run.ts";

export function replicationDriver(env: RuleEnv): RuleDriver<ReplicationRule> {
  return {
    kind: "replication",
    settings: replicationSettings,
    rules: (config: Config) => config.storage.replication.rules ?? [],
    type: () => "replication",
    scope: (rule) => ({
      bucket: rule.source.bucket,
      prefix: rule.source.prefix,
      target: `${rule.destination.bucket}/${rule.destination.prefix ?? rule.source.prefix}`,
    }),
    intervalMs: (rule) => ms(rule.interval, 86400),
    run: (rule, context) => reconcileRun(rule, env, context),
    verify: (rule, signal) => parityAudit(rule, env, signal),
  };
}
