/**
 * The outbox as a write observer: every committed write and removal becomes an event, committed
 * to the config database by group commit. The object service waits for the promise `committed` /
 * `removed` return before it answers, so an acknowledged write's event is committed (a kill -9
 * right after the answer loses nothing; the commit reaches the disk within 200 ms, see
 * db/wal-sync.ts). A commit starts at the end of the task in which an event arrives, when no
 * commit runs; events arriving during a commit form the next batch, so concurrent writers share
 * one commit (docs/BENCHMARKS.md, "Issue 27: durable events").
 * Events are buffered in the order the object service reports them (under the key lock, so in
 * order per key) and committed in that order: ids are monotonic and ordered per key.
 *
 * Removals done by jobs journal their events first (`journal`, durable before the removal; the
 * removal's write context names the entry): the removal then moves them into the outbox in order,
 * and an entry a crash left is settled at the next start (`settleJournal`). So a job's removal
 * never goes unrecorded, even when the process dies between the removal and the commit.
 *
 * A commit that fails (database error, a full disk) releases every waiter, and writes stop
 * waiting until a commit succeeds again (the write is done; the database is what is missing, and
 * SPEC records events "when the config database is available"); the batch stays at the front of
 * the buffer and is retried after a second; while the buffer holds `maxBuffered` events, new
 * ones are dropped, counted (`svc_events_dropped_total`) and logged, rather than growing memory
 * without bound. A graceful stop flushes everything.
 */
import { getLogger } from "../observability/mod.ts";
import type { ObjectInfo } from "../storage/mod.ts";
import type { WriteContext, WriteObserver } from "../objects/mod.ts";
import { createdEvent, deletedEvent, type ObjectEvent } from "./event.ts";
import type { EventMetrics } from "./event-metrics.ts";
import type { JournalObject, OutboxStore } from "./outbox-store.ts";

const log = getLogger("svc::events");

export interface OutboxWriterOptions {
  store: Pick<OutboxStore, "append"> & Partial<Pick<OutboxStore, "journal" | "journaled">>;
  /** Whether delivery is on now: new rows are `pending` then, else `recorded`. */
  deliver: () => boolean;
  /** Whether events are recorded at all now (`event_delivery.outbox`); default always. */
  record?: () => boolean;
  /** How long a commit waits for companions after the first event arrives (ms); default 0. */
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
  /** Absent for an entry that only settles a journal entry (a removal that did not happen). */
  event?: ObjectEvent;
  /** The journal entry this settles (its events move into the outbox with it). */
  settles?: number;
  /** performance.now() at append, for the commit-lag histogram. */
  at: number;
  /** The last entry of one push (a journal entry's events are never split across commits). */
  ends: boolean;
  /** Resolves the promise the writer handed out for it (after the commit, or its failure). */
  done?: () => void;
}

const DONE: Promise<void> = Promise.resolve();

export class OutboxWriter implements WriteObserver {
  /** Events never need the replaced object: writes skip that metadata read for them. */
  readonly needsReplaced = false;
  readonly #store: OutboxWriterOptions["store"];
  readonly #deliver: () => boolean;
  readonly #record: () => boolean;
  readonly #flushDelayMs: number;
  readonly #maxBatch: number;
  readonly #maxBuffered: number;
  readonly #retryDelayMs: number;
  readonly #metrics: EventMetrics | undefined;
  readonly #now: () => number;
  #buffer: Buffered[] = [];
  /** Events of journal entries written by this process and not settled yet. */
  readonly #journaled = new Map<number, ObjectEvent[]>();
  #timer: ReturnType<typeof setTimeout> | undefined;
  /** A flush is queued as a microtask. */
  #soon = false;
  #flushing: Promise<void> | undefined;
  #closed = false;
  /** The last commit failed: writes do not wait for commits until one succeeds again. */
  #failing = false;
  #lastDropLog = 0;

  constructor(options: OutboxWriterOptions) {
    this.#store = options.store;
    this.#deliver = options.deliver;
    this.#record = options.record ?? (() => true);
    this.#flushDelayMs = options.flushDelayMs ?? 0;
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

  /** Resolves when the event is committed (or its commit failed, or it was not recorded). */
  committed(
    bucket: string,
    info: ObjectInfo,
    _replaced: unknown,
    context?: WriteContext,
  ): Promise<void> {
    if (!this.#record()) return DONE;
    return this.#push([createdEvent(bucket, info, context, this.#now())]);
  }

  /** Like `committed`; a removal whose context names a journal entry moves that entry's events. */
  removed(bucket: string, info: ObjectInfo, context?: WriteContext): Promise<void> {
    if (context?.journal !== undefined) return this.settle(context.journal, true);
    if (!this.#record()) return DONE;
    return this.#push([deletedEvent(bucket, info, context, this.#now())]);
  }

  /** Appends events svc makes itself (lifecycle), in order with the write events. */
  record(event: ObjectEvent): Promise<void> {
    if (!this.#record()) return DONE;
    return this.#push([event]);
  }

  /**
   * Writes the events of a removal to the journal, durably, before the removal (the object is
   * still there as `object.etag`); returns the entry's id, for the removal's write context.
   * Undefined when events are not recorded now. Throws when the database refuses: the caller
   * must not remove then.
   */
  async journal(object: JournalObject, events: ObjectEvent[]): Promise<number | undefined> {
    if (!this.#record() || this.#closed || this.#store.journal === undefined) return undefined;
    const id = await this.#store.journal(object, events, this.#now());
    this.#journaled.set(id, events);
    return id;
  }

  /**
   * Settles a journal entry of this process: `happened` moves its events into the outbox (in
   * order with everything pushed before), else the entry is only deleted. Resolves when committed.
   */
  settle(id: number, happened: boolean): Promise<void> {
    const events = this.#journaled.get(id);
    this.#journaled.delete(id);
    // An entry of an earlier process is settled by settleJournal at start.
    if (events === undefined) return DONE;
    return this.#push(happened && events.length > 0 ? events : [], id);
  }

  /**
   * Settles the journal entries a crash left (run once at start, before jobs run): an entry whose
   * object is still there as journaled did not happen and goes; any other's events are appended.
   * Returns how many entries had happened.
   */
  async settleJournal(stillThere: (object: JournalObject) => Promise<boolean>): Promise<number> {
    if (this.#store.journaled === undefined) return 0;
    let happened = 0;
    for (const entry of await this.#store.journaled()) {
      if (this.#journaled.has(entry.id)) continue; // this process's, in flight
      const there = await stillThere(entry.object);
      if (!there) happened++;
      this.#journaled.set(entry.id, entry.events);
      await this.settle(entry.id, !there);
    }
    return happened;
  }

  #push(events: ObjectEvent[], settles?: number): Promise<void> {
    if (this.#closed || this.#buffer.length >= this.#maxBuffered) {
      this.#metrics?.dropped.inc(Math.max(1, events.length));
      const now = Date.now();
      if (now - this.#lastDropLog > 10_000) {
        this.#lastDropLog = now;
        log.error("event dropped: the outbox buffer is full or closed", {
          buffered: this.#buffer.length,
          closed: this.#closed,
        });
      }
      return DONE;
    }
    const at = performance.now();
    // While the database refuses commits, a write would wait a retry delay for nothing.
    const { promise, resolve } = this.#failing
      ? { promise: DONE, resolve: undefined }
      : Promise.withResolvers<void>();
    if (events.length === 0) this.#buffer.push({ settles, at, ends: true, done: resolve });
    events.forEach((event, index) => {
      const ends = index === events.length - 1;
      // The settling goes with the entry's last event: one batch never splits it from its rows.
      this.#buffer.push({ event, at, ends, ...(ends ? { settles, done: resolve } : {}) });
    });
    this.#metrics?.appended.inc(events.length);
    this.#schedule(this.#buffer.length >= this.#maxBatch ? 0 : this.#flushDelayMs);
    return promise;
  }

  #schedule(delayMs: number): void {
    if (this.#flushing !== undefined) return; // the running flush looks again when it ends
    if (delayMs === 0) {
      // At the end of this task, not a timer: a timer's turn (clamped to 4 ms when nested)
      // would add its wait to every S3 answer that waits for the commit.
      if (this.#soon) return;
      clearTimeout(this.#timer);
      this.#timer = undefined;
      this.#soon = true;
      queueMicrotask(() => {
        this.#soon = false;
        void this.flush();
      });
      return;
    }
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

  /** The next batch: up to maxBatch entries, extended so a journal entry's events stay whole. */
  #nextBatch(): Buffered[] {
    let end = Math.min(this.#maxBatch, this.#buffer.length);
    while (end < this.#buffer.length && !this.#buffer[end - 1].ends) end++;
    return this.#buffer.slice(0, end);
  }

  async #drain(): Promise<void> {
    while (this.#buffer.length > 0) {
      const batch = this.#nextBatch();
      const events = batch.flatMap((b) => b.event === undefined ? [] : [b.event]);
      const settled = batch.flatMap((b) => b.settles === undefined ? [] : [b.settles]);
      try {
        await this.#store.append(events, this.#deliver(), this.#now(), settled);
      } catch (err) {
        this.#metrics?.commitFailures.inc();
        log.error("committing events to the outbox failed; retrying", {
          events: events.length,
          error: (err as Error).message,
        });
        // The writes are done: their answers do not wait for a database that may be gone.
        this.#failing = true;
        for (const b of this.#buffer) b.done?.();
        if (this.#closed) return;
        await new Promise((resolve) => setTimeout(resolve, this.#retryDelayMs));
        continue;
      }
      this.#buffer = this.#buffer.slice(batch.length);
      this.#failing = false;
      const done = performance.now();
      this.#metrics?.committed.inc(events.length);
      for (const b of batch) {
        b.done?.();
        if (b.event !== undefined) this.#metrics?.commitLag.observe((done - b.at) / 1000);
      }
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
    const lost = this.#buffer.filter((b) => b.event !== undefined).length;
    if (lost > 0) log.error("events not committed at shutdown", { events: lost });
    for (const b of this.#buffer) b.done?.();
    this.#buffer = [];
    return lost;
  }
}
