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
  /**
   * Appends an event to the outbox (no-op when the outbox is off); a promise returned resolves
   * once the event is committed.
   */
  recordEvent(event: ObjectEvent): void | Promise<void>;
  /**
   * Journals the events of a removal before it happens (durable once this resolves; the
   * removal's write context carries the id, and the outbox moves the events when it happens).
   * Undefined: nothing journaled (the outbox is off), record after the removal. Absent in tests.
   */
  journalRemoval?(
    object: { bucket: string; key: string; etag: string },
    events: ObjectEvent[],
  ): Promise<number | undefined>;
  /** Drops a journal entry whose removal did not happen. */
  dropJournal?(id: number): Promise<void>;
  metrics: Metrics;
  clock: Clock;
}
