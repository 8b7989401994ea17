/**
 * The outbox as a write observer: every committed write and removal becomes an event, buffered
 * in memory and committed to the config database in batches, so no S3 write waits on the
 * database. Events are buffered in the order the object service reports them (under the key
 * lock, so in order per key) and committed in that order: ids are monotonic and ordered per key.
 *
 * What an acknowledged write guarantees about its event: it is committed within the flush delay
 * (25 ms by default) plus one commit; a crash (kill -9, power loss) loses at most the events of
 * that window, never reorders or half-writes one (a batch is one transaction). A graceful stop
 * flushes everything. A commit that fails (database error) keeps the batch at the front of the
 * buffer and retries after a second; while the buffer holds `maxBuffered` events, new ones are
 * dropped, counted (`svc_events_dropped_total`) and logged, rather than growing memory without
 * bound. docs/BENCHMARKS.md records the measured append → commit lag.
 */
import { getLogger } from "../observability/mod.ts";
import type { ObjectInfo } from "../storage/mod.ts";
import type { WriteContext, WriteObserver } from "../objects/mod.ts";
import { createdEvent, deletedEvent, type ObjectEvent } from "./event.ts";
import type { EventMetrics } from "./event-metrics.ts";
import type { OutboxStore } from "./outbox-store.ts";

const log = getLogger("svc::events");

export interface OutboxWriterOptions {
  store: Pick<OutboxStore, "append">;
  /** Whether delivery is on now: new rows are `pending` then, else `recorded`. */
  deliver: () => boolean;
  /** Whether events are recorded at all now (`event_delivery.outbox`); default always. */
  record?: () => boolean;
  /** How long an event may wait for companions before its batch commits (ms). */
  flushDelayMs?: number;
  /** Events per commit; a full batch commits at once. */
  maxBatch?: number;
  /** Events held in memory at most (a database outage); beyond it new events are dropped. */
  maxBuffered?: number;
  /** Wait after a failed commit before the next try (ms). */
  retryDelayMs?: number;
  metrics?: EventMetrics;
  now?: () => number;
}

interface Buffered {
  event: ObjectEvent;
  /** performance.now() at append, for the commit-lag histogram. */
  at: number;
}

export class OutboxWriter implements WriteObserver {
  /** Events never need the replaced object: writes skip that metadata read for them. */
  readonly needsReplaced = false;
  readonly #store: Pick<OutboxStore, "append">;
  readonly #deliver: () => boolean;
  readonly #record: () => boolean;
  readonly #flushDelayMs: number;
  readonly #maxBatch: number;
  readonly #maxBuffered: number;
  readonly #retryDelayMs: number;
  readonly #metrics: EventMetrics | undefined;
  readonly #now: () => number;
  #buffer: Buffered[] = [];
  #timer: ReturnType<typeof setTimeout> | undefined;
  #flushing: Promise<void> | undefined;
  #closed = false;
  #lastDropLog = 0;

  constructor(options: OutboxWriterOptions) {
    this.#store = options.store;
    this.#deliver = options.deliver;
    this.#record = options.record ?? (() => true);
    this.#flushDelayMs = options.flushDelayMs ?? 500;
    this.#maxBatch = options.maxBatch ?? 1000;
    this.#maxBuffered = options.maxBuffered ?? 100_000;
    this.#retryDelayMs = options.retryDelayMs ?? 1000;
    this.#metrics = options.metrics;
    this.#now = options.now ?? Date.now;
  }

  /** Events waiting for their commit. */
  get buffered(): number {
    return this.#buffer.length;
  }

  /** Off (`event_delivery.outbox: false`): writes skip even the removed object's read. */
  tracks(_bucket: string): boolean {
    return this.#record();
  }

  committed(bucket: string, info: ObjectInfo, _replaced: unknown, context?: WriteContext): void {
    if (!this.#record()) return;
    this.#push(createdEvent(bucket, info, context, this.#now()));
  }

  removed(bucket: string, info: ObjectInfo, context?: WriteContext): void {
    if (!this.#record()) return;
    this.#push(deletedEvent(bucket, info, context, this.#now()));
  }

  /** Appends an event svc makes itself (lifecycle), in order with the write events. */
  record(event: ObjectEvent): void {
    if (!this.#record()) return;
    this.#push(event);
  }

  #push(event: ObjectEvent): void {
    if (this.#closed || this.#buffer.length >= this.#maxBuffered) {
      this.#metrics?.dropped.inc();
      const now = Date.now();
      if (now - this.#lastDropLog > 10_000) {
        this.#lastDropLog = now;
        log.error("event dropped: the outbox buffer is full or closed", {
          buffered: this.#buffer.length,
          closed: this.#closed,
        });
      }
      return;
    }
    this.#buffer.push({ event, at: performance.now() });
    this.#metrics?.appended.inc();
    this.#schedule(this.#buffer.length >= this.#maxBatch ? 0 : this.#flushDelayMs);
  }

  #schedule(delayMs: number): void {
    if (this.#flushing !== undefined) return; // the running flush looks again when it ends
    if (this.#timer !== undefined) {
      if (delayMs > 0) return;
      clearTimeout(this.#timer);
    }
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      void this.flush();
    }, delayMs);
  }

  /** Commits everything buffered now (one batch after another); resolves when done or failed. */
  flush(): Promise<void> {
    if (this.#flushing !== undefined) return this.#flushing.then(() => this.flush());
    if (this.#buffer.length === 0) return Promise.resolve();
    clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#flushing = this.#drain().finally(() => {
      this.#flushing = undefined;
      if (this.#buffer.length > 0 && !this.#closed) this.#schedule(this.#flushDelayMs);
    });
    return this.#flushing;
  }

  async #drain(): Promise<void> {
    while (this.#buffer.length > 0) {
      const batch = this.#buffer.slice(0, this.#maxBatch);
      try {
        await this.#store.append(batch.map((b) => b.event), this.#deliver(), this.#now());
      } catch (err) {
        this.#metrics?.commitFailures.inc();
        log.error("committing events to the outbox failed; retrying", {
          events: batch.length,
          error: (err as Error).message,
        });
        if (this.#closed) return;
        await new Promise((resolve) => setTimeout(resolve, this.#retryDelayMs));
        continue;
      }
      this.#buffer = this.#buffer.slice(batch.length);
      const done = performance.now();
      this.#metrics?.committed.inc(batch.length);
      for (const { at } of batch) this.#metrics?.commitLag.observe((done - at) / 1000);
    }
  }

  /**
   * Graceful stop: commits what is buffered (one attempt per batch), then refuses new events.
   * Returns how many events could not be committed.
   */
  async close(): Promise<number> {
    this.#closed = true;
    clearTimeout(this.#timer);
    this.#timer = undefined;
    if (this.#flushing) await this.#flushing.catch(() => {});
    await this.#drain();
    const lost = this.#buffer.length;
    if (lost > 0) log.error("events not committed at shutdown", { events: lost });
    this.#buffer = [];
    return lost;
  }
}
