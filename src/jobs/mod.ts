// The jobs room's surface: everything another room may use of it. Generated from what
// the other rooms import (scripts/imports/make-mods.ts); the import check keeps every
// entry into the room going through this file.

export { offsetClock, systemClock } from "./clock.ts";
export type { Clock } from "./clock.ts";
export { JOB_ACTIONS, KIND_ACTIONS } from "./job-model.ts";
export type { JobAction } from "./job-model.ts";
export { JobsError } from "./jobs-error.ts";
export { JobsService, MAX_REENCRYPT_BUCKETS } from "./jobs-service.ts";
export { JobsStore } from "./jobs-store.ts";
export { lifecycleDriver } from "./lifecycle/lifecycle-driver.ts";
export { GateDocs } from "./maintenance/fleet-gate-docs.ts";
export { FleetGate } from "./maintenance/fleet-gate.ts";
export { FleetRoutes, RouteDocs } from "./maintenance/fleet-routes.ts";
export type { MaintenanceSettings } from "./maintenance/maintenance-deps.ts";
export { routeBucketVia } from "./maintenance/route-flip.ts";
export { OutboxConsumer } from "./replication/outbox-consumer.ts";
export { OutboxCursor } from "./replication/outbox-cursor.ts";
export { replicationDriver } from "./replication/replication-driver.ts";
export {
  coordinationBucket,
  coordinationLeases,
  isAbsent,
  readDocument,
} from "./rules/coordination.ts";
export type { CoordinationBucket } from "./rules/coordination.ts";
export { S3FleetRules } from "./rules/fleet-rules.ts";
export { FleetRuns } from "./rules/fleet-runs.ts";
export { DbLeases } from "./rules/leases.ts";
export { PublishingRuleStore } from "./rules/publishing-rule-store.ts";
export type { RuleEnv } from "./rules/rule-env.ts";
export { RuleJobs } from "./rules/rule-jobs.ts";
export { RuleStore } from "./rules/rule-store.ts";
export { RulesRoom } from "./rules/rules-room.ts";
