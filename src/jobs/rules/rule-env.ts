/**
 * What replication and lifecycle runs reach in the running svc: the object service of the
 * storage stack in use (logical objects: each bucket's own delta compression and encryption
 * apply, write observers — usage counters, the event outbox — hear every change), the kind of
 * backend a bucket lives on, the maintenance write gate, and the outbox for the events svc
 * makes itself. Built in runtime/admin-plane.ts.
 */
import type { Config } from "../../config/mod.ts";
import type { ObjectEvent } from "../../events/mod.ts";
import type { Metrics } from "../../observability/mod.ts";
import type { ObjectService } from "../../objects/mod.ts";
import type { Clock } from "../clock.ts";

export interface RuleEnv {
  /** The config in force (a reload may replace it: call it each time). */
  config(): Config;
  /** The object service in use (a config change may replace it: call it each time). */
  objects(): ObjectService;
  /** `filesystem` or `s3`: the kind of backend `bucket` routes to. Throws for a bad bucket. */
  backendKind(bucket: string): Promise<"filesystem" | "s3">;
  /** The maintenance job holding `bucket`'s write gate, or undefined when writes are open. */
  gatedBy(bucket: string): string | undefined;
  /** Appends an event to the outbox (no-op when the outbox is off). */
  recordEvent(event: ObjectEvent): void;
  metrics: Metrics;
  clock: Clock;
}
