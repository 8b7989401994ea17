/**
 * Replication as a kind of the rule scheduler (jobs/rules/): its rules, scope and interval.
 * The run itself (planner, copy, full reconcile, event consumer, verify) is being built.
 */
import type { Config } from "../../config/schema.ts";
import type { ReplicationRule } from "../../config/schema-jobs.ts";
import { ms, replicationSettings } from "../rules/rule-config.ts";
import type { RuleEnv } from "../rules/rule-env.ts";
import type { RuleDriver } from "../rules/rule-model.ts";

export function replicationDriver(_env: RuleEnv): RuleDriver<ReplicationRule> {
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
    run() {
      return Promise.reject(new Error("Replication runs are not built yet"));
    },
  };
}
