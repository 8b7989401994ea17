/**
 * Persists the usage counters without putting the database on the write path: a commit or a
 * removal only marks its bucket dirty (a Set insert); every `flushDelayMs` (1 s) the dirty
 * buckets' current totals are written in one transaction, however many writes they saw. A bucket
 * written a thousand times in a second costs one row update.
 *
 * A crash (kill -9, power loss) loses at most the last delay's updates: the counters restart from
 * the last flushed totals and drift by what that window wrote until the next scan or refresh
 * (the counter is approximate by design, SPEC "per-instance and approximate"). A graceful stop
 * flushes everything. A failed write keeps its buckets dirty and is retried at the next tick.
 */
import { getLogger } from "../../observability/mod.ts";
import type { UsageRow, UsageStore } from "../../db/mod.ts";

const log = getLogger("svc::usage");

export interface UsageFlusherOptions {
  store: Pick<UsageStore, "write">;
  /** The row to persist for a bucket now; null when the bucket has no counter (any more). */
  row: (bucket: string) => UsageRow | null;
  flushDelayMs?: number;
  /** Called with the outcome of each write. */
  onFlush?: (outcome: "ok" | "error") => void;
}

export class UsageFlusher {
  readonly #options: UsageFlusherOptions;
  readonly #delayMs: number;
  #dirty = new Set<string>();
  #removed = new Set<string>();
  #timer: ReturnType<typeof setTimeout> | undefined;
  #running: Promise<void> | undefined;
  #closed = false;

  constructor(options: UsageFlusherOptions) {
    this.#options = options;
    this.#delayMs = options.flushDelayMs ?? 1000;
  }

  /** The bucket's counter changed. */
  changed(bucket: string): void {
    if (this.#closed) return;
    this.#dirty.add(bucket);
    this.#schedule();
  }

  /** The bucket's counter is gone (bucket deleted): its row is deleted at the next flush. */
  removed(bucket: string): void {
    if (this.#closed) return;
    this.#dirty.delete(bucket);
    this.#removed.add(bucket);
    this.#schedule();
  }

  get pending(): number {
    return this.#dirty.size + this.#removed.size;
  }

  #schedule(): void {
    if (this.#timer !== undefined || this.#running !== undefined) return;
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      void this.flush();
    }, this.#delayMs);
  }

  /** Writes what is pending now; resolves when written or failed (failures stay pending). */
  flush(): Promise<void> {
    if (this.#running) return this.#running.then(() => this.flush());
    if (this.pending === 0) return Promise.resolve();
    clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#running = this.#write().finally(() => {
      this.#running = undefined;
      if (this.pending > 0 && !this.#closed) this.#schedule();
    });
    return this.#running;
  }

  async #write(): Promise<void> {
    const dirty = this.#dirty, removed = this.#removed;
    this.#dirty = new Set();
    this.#removed = new Set();
    const rows: UsageRow[] = [];
    for (const bucket of dirty) {
      const row = this.#options.row(bucket);
      if (row !== null) rows.push(row);
    }
    try {
      await this.#options.store.write(rows, [...removed]);
      this.#options.onFlush?.("ok");
    } catch (err) {
      this.#options.onFlush?.("error");
      log.error("persisting the usage counters failed; retrying", {
        buckets: dirty.size + removed.size,
        error: (err as Error).message,
      });
      // Put back what is not superseded: a bucket removed meanwhile must not be rewritten.
      for (const bucket of removed) if (!this.#dirty.has(bucket)) this.#removed.add(bucket);
      for (const bucket of dirty) if (!this.#removed.has(bucket)) this.#dirty.add(bucket);
    }
  }

  /** Graceful stop: one last write of everything pending, then nothing more is accepted. */
  async close(): Promise<void> {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    if (this.#running) await this.#running;
    await this.flush();
    this.#closed = true;
    clearTimeout(this.#timer);
    this.#timer = undefined;
  }
}
