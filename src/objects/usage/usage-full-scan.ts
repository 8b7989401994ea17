/**
 * `POST /usage/scan`: a rescan of every bucket, run in the background (a store of many buckets
 * takes longer than an HTTP request should), one at a time so it never competes with clients for
 * more than one listing. One run at a time: asking again while it runs joins it. Its progress is
 * part of `GET /usage` (`scan`), its start and end are audited by the caller.
 */
import type { BucketUsage, ScanTrigger } from "./usage.ts";

export interface FullScanStatus {
  running: boolean;
  /** ms since the epoch; null before the first run. */
  started_at: number | null;
  finished_at: number | null;
  /** Who started the current or last run. */
  started_by: string | null;
  buckets_total: number;
  buckets_done: number;
  buckets_failed: number;
  /** Buckets whose scan failed in the current or last run (at most 100 listed). */
  failures: { bucket: string; error: string }[];
}

export interface FullScanDeps {
  bucketNames(): Promise<string[]>;
  rescan(bucket: string, trigger: ScanTrigger): Promise<BucketUsage>;
  now?: () => number;
  /** Called when a run ends, with its final status. */
  onFinish?: (status: FullScanStatus, startedFrom: string | null) => void;
}

const MAX_FAILURES_LISTED = 100;

export class FullUsageScan {
  readonly #deps: FullScanDeps;
  readonly #now: () => number;
  #status: FullScanStatus = {
    running: false,
    started_at: null,
    finished_at: null,
    started_by: null,
    buckets_total: 0,
    buckets_done: 0,
    buckets_failed: 0,
    failures: [],
  };
  #run: Promise<void> | undefined;
  /** Where the current or last run was asked from (audit only; not part of the status). */
  #startedFrom: string | null = null;

  constructor(deps: FullScanDeps) {
    this.#deps = deps;
    this.#now = deps.now ?? Date.now;
  }

  status(): FullScanStatus {
    return { ...this.#status, failures: [...this.#status.failures] };
  }

  /** The run in flight, for tests and shutdown. */
  get done(): Promise<void> {
    return this.#run ?? Promise.resolve();
  }

  /**
   * Starts a run over the buckets listed now (the listing is awaited so a listing failure is the
   * caller's error); `started: false` when one is already running (its status is returned).
   */
  async start(
    by: { user: string; ip: string },
  ): Promise<{ started: boolean; status: FullScanStatus }> {
    if (this.#run) return { started: false, status: this.status() };
    const names = [...new Set(await this.#deps.bucketNames())].sort();
    if (this.#run) return { started: false, status: this.status() }; // raced another start
    this.#status = {
      running: true,
      started_at: this.#now(),
      finished_at: null,
      started_by: by.user,
      buckets_total: names.length,
      buckets_done: 0,
      buckets_failed: 0,
      failures: [],
    };
    this.#startedFrom = by.ip;
    this.#run = this.#scan(names).finally(() => {
      this.#status.running = false;
      this.#status.finished_at = this.#now();
      this.#run = undefined;
      this.#deps.onFinish?.(this.status(), this.#startedFrom);
    });
    return { started: true, status: this.status() };
  }

  async #scan(names: string[]): Promise<void> {
    for (const bucket of names) {
      try {
        await this.#deps.rescan(bucket, "scan");
      } catch (err) {
        // A bucket deleted meanwhile is no failure: it has nothing left to count.
        if ((err as { code?: string })?.code !== "NoSuchBucket") {
          this.#status.buckets_failed++;
          if (this.#status.failures.length < MAX_FAILURES_LISTED) {
            this.#status.failures.push({ bucket, error: (err as Error).message ?? String(err) });
          }
        }
      }
      this.#status.buckets_done++;
    }
  }
}
