/**
 * Lifecycle as a kind of the rule scheduler (jobs/rules/): its rules, scope and interval, and
 * the run (lifecycle-run.ts): expiry, transition/archive, retain-newest.
 */
import type { Config, LifecycleRule } from "../../config/mod.ts";
import { lifecycleSettings } from "../rules/rule-config.ts";
import type { RuleEnv } from "../rules/rule-env.ts";
import type { RuleDriver } from "../rules/rule-model.ts";
import { runLifecycle } from "./lifecycle-run.ts";
import { RETAIN_NEWEST_CAP } from "./retain-newest.ts";

export function lifecycleDriver(
  env: RuleEnv,
  options: { retainCap?: number } = {},
): RuleDriver<LifecycleRule> {
  const retainCap = options.retainCap ?? RETAIN_NEWEST_CAP;
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
    run: (rule, context) => runLifecycle(rule, context, { env, retainCap }),
  };
}
