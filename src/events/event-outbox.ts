/**
 * The event outbox of a running svc: the buffered writer registered as a write observer of the
 * object service, and the dispatcher loop, over the config database. Built by the admin plane
 * (which owns the database); closed before the database closes: the dispatcher stops (requests in
 * flight are cut; their rows are reclaimed at the next start), then the writer commits what it
 * holds.
 *
 * While the config database awaits recovery (a bootstrap-hash mismatch), S3 answers 503, so no
 * write happens and no event is made; the outbox lives in the fresh database from then on.
 */
import type { EventDeliveryConfig } from "../config/mod.ts";
import { getLogger } from "../observability/mod.ts";
import type { DbClient } from "../db/mod.ts";
import type { WriteObserver } from "../objects/mod.ts";
import { Dispatcher } from "./dispatcher.ts";
import type { EventMetrics } from "./event-metrics.ts";
import { type JournalObject, OutboxStore } from "./outbox-store.ts";
import { OutboxWriter } from "./outbox-writer.ts";

const log = getLogger("svc::events");

export interface EventOutboxDeps {
  db: DbClient;
  /** The current delivery settings (read at each append batch and each tick). */
  config: () => EventDeliveryConfig;
  metrics: EventMetrics;
  /** Registers the writer with every object service svc uses; returns the unregistration. */
  observe: (observer: WriteObserver) => () => void;
  fetch?: typeof fetch;
  /** Rows after this id are kept (replication's event consumer has not read them yet). */
  pruneFloor?: () => Promise<number | undefined>;
  /**
   * Whether the object a journal entry a crash left is about is still there as that ETag (its
   * removal did not happen). Throws when it cannot tell (the entry waits for the next start).
   */
  stillThere?: (object: JournalObject) => Promise<boolean>;
}

export interface EventOutbox {
  store: OutboxStore;
  writer: OutboxWriter;
  dispatcher: Dispatcher;
  close(): Promise<void>;
}

export function openEventOutbox(deps: EventOutboxDeps): EventOutbox {
  const store = new OutboxStore(deps.db);
  const writer = new OutboxWriter({
    store,
    deliver: () => deps.config().enabled,
    record: () => deps.config().outbox,
    metrics: deps.metrics,
  });
  const unobserve = deps.observe(writer);
  const dispatcher = new Dispatcher({
    store,
    config: deps.config,
    metrics: deps.metrics,
    fetch: deps.fetch,
    pruneFloor: deps.pruneFloor,
  });
  dispatcher.start();
  // Journal entries a crash left (a job's removal killed midway) are settled now, in the
  // background: their events land in the outbox or, when the removal never happened, go.
  const { stillThere } = deps;
  if (stillThere) {
    writer.settleJournal(stillThere).then((happened) => {
      if (happened > 0) log.info("journaled removals settled at start", { removals: happened });
    }).catch((err) =>
      log.warn("journaled removals not settled; retried at the next start", {
        error: (err as Error).message,
      })
    );
  }
  return {
    store,
    writer,
    dispatcher,
    async close() {
      unobserve();
      await dispatcher.stop();
      await writer.close();
    },
  };
}
