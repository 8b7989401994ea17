/**
 * The event dispatcher: each tick it reclaims stale claims, prunes finished rows and, when
 * `advanced.event_delivery.enabled`, claims up to `batch_size` due rows and delivers them. It
 * reads the configuration at every tick, so a hot reload applies at the next one.
 *
 * Delivery is at-least-once: a row is `delivered` only when every target answered 2xx (Slack's
 * Web API: and `ok: true`). Targets that took the event are recorded on the row and not sent it
 * again; the others are retried after `retry_base · 2^(attempts-1)`, at most `retry_max`, until
 * `max_attempts`, then the row is `failed` (requeue via the admin API). A crash between a 2xx and
 * the row update re-sends to that target: receivers dedupe on `event.id`.
 *
 * Order: rows of one key in a batch go one after another, keys in parallel (up to 8 requests at
 * once); a row waiting for a retry does not hold back later events of its key, so receivers
 * order by `event.seq` (the outbox id, monotonic per key) where order matters.
 */
import { type EventDeliveryConfig, parseDuration } from "../config/mod.ts";
import { getLogger } from "../observability/mod.ts";
import type { DeliveredEvent } from "./event.ts";
import type { EventMetrics, RequestResult } from "./event-metrics.ts";
import { type DeliveryRequest, deliveryRequests } from "./formats.ts";
import {
  type AttemptOutcome,
  OUTBOX_STATUSES,
  type OutboxRow,
  type OutboxStore,
} from "./outbox-store.ts";

const log = getLogger("svc::events");

/** Requests in flight at once, across keys. */
const CONCURRENCY = 8;

export interface DispatcherOptions {
  store: OutboxStore;
  config: () => EventDeliveryConfig;
  fetch?: typeof fetch;
  /** Clock (ms); tests pass a fake one and call `tick()` themselves. */
  now?: () => number;
  metrics?: EventMetrics;
  /**
   * The id after which rows must be kept for another reader (replication's event consumer), or
   * undefined when none needs them.
   */
  pruneFloor?: () => Promise<number | undefined>;
}

export interface TickReport {
  reclaimed: number;
  pruned: number;
  claimed: number;
  delivered: number;
  retried: number;
  failed: number;
}

const seconds = (text: string) => (parseDuration(text) ?? 0) * 1000;

/** The wait before attempt `attempts + 1`, after `attempts` failed ones (ms). */
export function backoffMs(attempts: number, config: EventDeliveryConfig): number {
  const base = seconds(config.retry_base), max = seconds(config.retry_max);
  return Math.min(max, base * 2 ** Math.max(0, Math.min(attempts - 1, 40)));
}

export class Dispatcher {
  readonly #store: OutboxStore;
  readonly #config: () => EventDeliveryConfig;
  readonly #fetch: typeof fetch;
  readonly #now: () => number;
  readonly #metrics: EventMetrics | undefined;
  readonly #floor: (() => Promise<number | undefined>) | undefined;
  readonly #token = crypto.randomUUID();
  #timer: ReturnType<typeof setTimeout> | undefined;
  #running: Promise<unknown> | undefined;
  #stopped = true;
  readonly #stopping = new AbortController();

  constructor(options: DispatcherOptions) {
    this.#store = options.store;
    this.#config = options.config;
    this.#fetch = options.fetch ?? fetch;
    this.#now = options.now ?? Date.now;
    this.#metrics = options.metrics;
    this.#floor = options.pruneFloor;
  }

  /**
   * Starts the loop. Claims left by a previous process (the database is node-local: nobody else
   * delivers from it) are reclaimed at once rather than after `stale_claim_after`.
   */
  start(): void {
    if (!this.#stopped) return;
    this.#stopped = false;
    this.#running = this.#store.reclaimStale(Number.MAX_SAFE_INTEGER, this.#now())
      .catch((err) => log.error("reclaiming event claims failed", { error: String(err) }))
      .then(() => this.#loop());
  }

  async #loop(): Promise<void> {
    if (this.#stopped) return;
    let report: TickReport | undefined;
    try {
      report = await this.tick();
    } catch (err) {
      log.error("event dispatcher tick failed", { error: (err as Error).message });
    }
    if (this.#stopped) return;
    const config = this.#config();
    // A full batch means more are likely due: go again at once.
    const full = report !== undefined && report.claimed >= config.batch_size;
    const delay = full ? 0 : seconds(config.tick_interval);
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      this.#running = this.#loop();
    }, delay);
  }

  /** Stops the loop; waits for the tick in progress (its requests are cut). */
  async stop(): Promise<void> {
    this.#stopped = true;
    clearTimeout(this.#timer);
    this.#stopping.abort(new Error("svc is stopping"));
    await this.#running?.catch(() => {});
  }

  /** One round: reclaim, prune, refresh the depth gauge, then claim and deliver a batch. */
  async tick(): Promise<TickReport> {
    const config = this.#config();
    const now = this.#now();
    const report: TickReport = {
      reclaimed: await this.#store.reclaimStale(now - seconds(config.stale_claim_after), now),
      pruned: await this.#store.prune(
        now - seconds(config.delivered_retention),
        config.delivered_max_rows,
        config.prune_batch,
        (await this.#floor?.()) ?? undefined,
      ),
      claimed: 0,
      delivered: 0,
      retried: 0,
      failed: 0,
    };
    if (config.enabled && !this.#stopping.signal.aborted) {
      const rows = await this.#store.claim(config.batch_size, now, this.#token);
      report.claimed = rows.length;
      await this.#deliverAll(rows, config, report);
    }
    if (this.#metrics) {
      const counts = await this.#store.counts();
      for (const status of OUTBOX_STATUSES) {
        this.#metrics.depth.set({ status }, counts[status]);
      }
    }
    return report;
  }

  /** Rows of one key in order, keys in parallel (CONCURRENCY chains at most). */
  async #deliverAll(rows: OutboxRow[], config: EventDeliveryConfig, report: TickReport) {
    const chains = new Map<string, OutboxRow[]>();
    for (const row of rows) {
      const name = `${row.event.bucket}/${row.event.key}`;
      const chain = chains.get(name);
      if (chain) chain.push(row);
      else chains.set(name, [row]);
    }
    const queue = [...chains.values()];
    const worker = async () => {
      for (let chain = queue.shift(); chain; chain = queue.shift()) {
        for (const row of chain) {
          const outcome = await this.#deliverRow(row, config);
          // Cut by shutdown: the row stays claimed and the next start reclaims it (at once).
          if (this.#stopping.signal.aborted) return;
          await this.#store.finish(row.id, this.#token, outcome, this.#now());
          const result = outcome.status === "pending" ? "retry" : outcome.status;
          this.#metrics?.deliveries.inc({ result });
          if (outcome.status === "delivered") report.delivered++;
          else if (outcome.status === "failed") report.failed++;
          else report.retried++;
        }
      }
    };
    await Promise.all(Array.from({ length: Math.min(CONCURRENCY, queue.length) }, worker));
  }

  async #deliverRow(row: OutboxRow, config: EventDeliveryConfig): Promise<AttemptOutcome> {
    const event: DeliveredEvent = { ...row.event, seq: row.id };
    const requests = deliveryRequests(event, config, this.#now());
    const done = new Set(row.deliveredTargets);
    const errors: string[] = [];
    for (const [index, request] of requests.entries()) {
      if (done.has(request.target)) continue;
      const error = await this.#send(request, index, config);
      if (error === null) done.add(request.target);
      else errors.push(error);
    }
    const targets = [...done];
    if (errors.length === 0) return { status: "delivered", targets };
    const attempts = row.attempts + 1;
    const error = errors.join("; ");
    if (attempts >= config.max_attempts) {
      log.warn("event delivery failed for good", { id: row.id, attempts, error });
      return { status: "failed", targets, error };
    }
    return {
      status: "pending",
      targets,
      error,
      nextAttemptAt: this.#now() + backoffMs(attempts, config),
    };
  }

  /** One request; null on success, else why it failed (never the URL's secrets or a token). */
  async #send(
    request: DeliveryRequest,
    index: number,
    config: EventDeliveryConfig,
  ): Promise<string | null> {
    const name = describe(request, index);
    const timeout = AbortSignal.timeout(seconds(config.request_timeout));
    const signal = AbortSignal.any([timeout, this.#stopping.signal]);
    const started = performance.now();
    let result: RequestResult = "success";
    try {
      const response = await this.#fetch(request.url, {
        method: "POST",
        headers: request.headers,
        body: request.body,
        signal,
      });
      const text = await response.text();
      if (response.status < 200 || response.status > 299) {
        result = "http_error";
        return `${name} answered ${response.status}`;
      }
      if (request.expectOkField && !slackOk(text)) {
        result = "http_error";
        return `${name} answered ok: false (${slackError(text)})`;
      }
      return null;
    } catch (err) {
      result = timeout.aborted ? "timeout" : "network_error";
      return timeout.aborted
        ? `${name} did not answer within ${config.request_timeout}`
        : `${name}: ${(err as Error).message}`;
    } finally {
      this.#metrics?.requests.inc({ result });
      this.#metrics?.requestDuration.observe((performance.now() - started) / 1000);
    }
  }
}

/**
 * A target as errors name it: the channel, or the endpoint's position and origin only (a Slack
 * incoming-webhook path, or a query, may hold a token; errors are shown by the admin API).
 */
function describe(request: DeliveryRequest, index: number): string {
  if (request.target.startsWith("slack:")) return `Slack channel ${request.target.slice(6)}`;
  try {
    return `endpoint ${index + 1} (${new URL(request.url).origin})`;
  } catch {
    return `endpoint ${index + 1}`;
  }
}

function slackOk(text: string): boolean {
  try {
    return (JSON.parse(text) as { ok?: unknown }).ok === true;
  } catch {
    return false;
  }
}

function slackError(text: string): string {
  try {
    return String((JSON.parse(text) as { error?: unknown }).error ?? "no error given").slice(
      0,
      100,
    );
  } catch {
    return "not JSON";
  }
}
