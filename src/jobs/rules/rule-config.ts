/**
 * The rules' side of the config: each kind's global knobs in milliseconds, and deleting a rule,
 * which removes it from the operator's document through the one apply path (persisted to the
 * config file like every admin change) before its row and history go.
 */
import { JobsError } from "../jobs-error.ts";
import { type Config, type ConfigPort, parseDuration } from "../../config/mod.ts";
import { isPlainObject } from "../../lib/mod.ts";
import type { KindSettings } from "./rule-model.ts";

/** Milliseconds of a humantime string the schema already validated. */
export function ms(text: string | undefined, fallbackSeconds: number): number {
  const seconds = text === undefined ? null : parseDuration(text);
  return Math.round((seconds ?? fallbackSeconds) * 1000);
}

export function replicationSettings(config: Config): KindSettings {
  const r = config.storage.replication;
  return {
    enabled: r.enabled,
    tickMs: ms(r.tick_interval, 30),
    maxFailures: r.max_failures_retained,
    leaseTtlMs: ms(r.lease_ttl, 300),
    heartbeatMs: ms(r.heartbeat_interval, 30),
  };
}

/**
 * Lifecycle has no lease settings: its runs hold a node-local lease with replication's defaults
 * (5 min, renewed every 30 s), enough to keep two runners of one database apart.
 */
export function lifecycleSettings(config: Config): KindSettings {
  const l = config.storage.lifecycle;
  return {
    enabled: l.enabled,
    tickMs: ms(l.tick_interval, 3600),
    maxFailures: l.max_failures_retained,
    leaseTtlMs: 300_000,
    heartbeatMs: 30_000,
  };
}

/**
 * Removes rule `name` of `kind` from the config document and applies it (persisted). A rule that
 * is not in the operator's document (it came from elsewhere) cannot be deleted here: 409.
 */
export async function removeRuleFromConfig(
  config: ConfigPort,
  kind: "replication" | "lifecycle",
  name: string,
  actor: { user: string; ip: string },
): Promise<void> {
  const document = config.document();
  const storage = document.storage;
  const section = isPlainObject(storage) ? storage[kind] : undefined;
  const rules = isPlainObject(section) ? section.rules : undefined;
  if (!Array.isArray(rules) || !rules.some((rule) => isPlainObject(rule) && rule.name === name)) {
    throw new JobsError(
      "conflict",
      `Rule "${name}" is not in the config document (storage.${kind}.rules); edit its source`,
    );
  }
  (section as Record<string, unknown>).rules = rules.filter((rule) =>
    !(isPlainObject(rule) && rule.name === name)
  );
  await config.apply({ document, source: "admin_api", dryRun: false, persist: true, actor });
}
