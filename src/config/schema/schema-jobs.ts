/**
 * `storage.replication` and `storage.lifecycle`: global scheduling knobs and their rules.
 * Durations stay humantime strings as written (parse them with `parseDuration`); minimums are
 * checked here, cross-field rules (unique names, heartbeat below lease) in schema.ts.
 */
import * as v from "valibot";
import {
  bool,
  describe,
  duration,
  int,
  list,
  nonEmpty,
  oneOf,
  ruleName,
  str,
  strict,
  u64,
} from "./schema-common.ts";

const globs = v.optional(list(str), []);

export const replicationRuleSchema = strict({
  name: ruleName,
  enabled: v.optional(bool, true),
  source: strict({ bucket: nonEmpty, prefix: v.optional(str, "") }),
  destination: strict({ bucket: nonEmpty, prefix: v.optional(str) }),
  interval: v.optional(duration(30), "24h"),
  batch_size: v.optional(int(1, 10000), 1000),
  replicate_deletes: v.optional(bool, false),
  conflict: v.optional(oneOf(["newer-wins", "content-diff", "skip-if-dest-exists"]), "newer-wins"),
  include_globs: globs,
  exclude_globs: globs,
});

export const replicationSchema = strict({
  enabled: v.optional(bool, true),
  tick_interval: v.optional(duration(5), "30s"),
  lease_ttl: v.optional(duration(15), "5m"),
  heartbeat_interval: v.optional(duration(5), "30s"),
  max_failures_retained: v.optional(int(1), 100),
  dir_concurrency: v.optional(int(1, 16), 4),
  rules: v.optional(list(replicationRuleSchema), []),
});

const transitionAction = strict({
  type: oneOf(["transition", "archive"]),
  destination: strict({ bucket: nonEmpty, prefix: v.optional(str) }),
  delete_source_after_success: v.optional(bool, false),
});

const retainNewestAction = strict({
  type: v.literal("retain-newest"),
  count: int(1),
  qualify: v.optional(strict({
    min_size_bytes: v.optional(u64),
    min_age: v.optional(duration()),
  })),
  protect_younger_than: v.optional(duration()),
});

export const lifecycleActionSchema = v.union(
  [
    v.literal("delete", (issue) => `expected "delete", got ${describe(issue.input)}`),
    v.variant(
      "type",
      [transitionAction, retainNewestAction],
      (issue) => `expected type transition, archive or retain-newest, got ${describe(issue.input)}`,
    ),
  ],
  (issue) =>
    `expected "delete" or {type: transition|archive|retain-newest}, got ${describe(issue.input)}`,
);

export const lifecycleRuleSchema = strict({
  name: ruleName,
  enabled: v.optional(bool, false),
  bucket: nonEmpty,
  prefix: v.optional(str, ""),
  action: lifecycleActionSchema,
  expire_after: v.optional(duration()),
  batch_size: v.optional(int(1, 10000), 1000),
  include_globs: globs,
  exclude_globs: globs,
});

export const lifecycleSchema = strict({
  enabled: v.optional(bool, false),
  tick_interval: v.optional(duration(60), "1h"),
  max_failures_retained: v.optional(int(1), 100),
  rules: v.optional(list(lifecycleRuleSchema), []),
});

export type ReplicationConfig = v.InferOutput<typeof replicationSchema>;
export type ReplicationRule = v.InferOutput<typeof replicationRuleSchema>;
export type LifecycleConfig = v.InferOutput<typeof lifecycleSchema>;
export type LifecycleRule = v.InferOutput<typeof lifecycleRuleSchema>;
