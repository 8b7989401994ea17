/**
 * Lifecycle as a kind of the rule scheduler (jobs/rules/): its rules, scope and interval.
 * The run itself (expiry, transition, retain-newest) is being built.
 */
import type { Config } from "../../config/schema.ts";
import type { LifecycleRule } from "../../config/schema-jobs.ts";
import { lifecycleSettings } from "../rules/rule-config.ts";
import type { RuleEnv } from "../rules/rule-env.ts";
import type { RuleDriver } from "../rules/rule-model.ts";

export function lifecycleDriver(_env: RuleEnv): RuleDriver<LifecycleRule> {
  return {
    kind: "lifecycle",
    settings: lifecycleSettings,
    rules: (config: Config) => config.storage.lifecycle.rules ?? [],
    type: (rule) => typeof rule.action === "string" ? rule.action : rule.action.type,
    scope: (rule) => ({
      bucket: rule.bucket,
      prefix: rule.prefix,
      ...(typeof rule.action === "object" && "destination" in rule.action
        ? {
          target: `${rule.action.destination.bucket}/${
            rule.action.destination.prefix ?? rule.prefix
          }`,
        }
        : {}),
    }),
    // The scheduler's tick is the rule's interval: every tick runs every due rule.
    intervalMs: (_rule, config) => lifecycleSettings(config).tickMs,
    run() {
      return Promise.reject(new Error("Lifecycle runs are not built yet"));
    },
  };
}
