/**
 * Readiness (`GET /_/ready`): is this process able to serve storage traffic right now? Unlike
 * `/_/health` it does backend I/O, so it is bounded, retried and coalesced.
 *
 * A `Readiness` runs a list of named checks concurrently and is ready when none reports `error`;
 * the body has one entry per check under `checks`: `backend` here, and server.ts adds `config_db`
 * (admin-plane/config-state.ts) and the slot-wait check (createSlotWaitCheck). Concurrent `check()` calls share one in-flight run: a flood of
 * probes costs the backend one probe at a time. Results are not cached beyond that run.
 *
 * The backend check, with settings read on every run (hot reload applies):
 * 1. `listBuckets()`, each attempt abandoned after `timeoutSecs` (fractional allowed), up to
 *    1 + `retries` attempts with BACKOFF_MS (100 ms) between attempts. Success:
 *    `{ status: "ok", latency_ms, attempts }`.
 * 2. Only when every attempt failed and `cacheTtlSecs` > 0: one `headBucket` of the first bucket
 *    the last successful list returned (skipped when no list has succeeded yet or it was empty),
 *    bounded by the same timeout. Any answer, including "absent", means the backend responds:
 *    `{ status: "ok", probe: "head_bucket", latency_ms, attempts, list_error }`.
 * 3. Then, still with `cacheTtlSecs` > 0: if some backend call succeeded (`lastSuccessAt`, from
 *    ObservedBackend) at most `cacheTtlSecs` ago, the backend is accepted as
 *    `{ status: "stale_ok", last_success_age_ms, attempts, list_error }`.
 * 4. Otherwise `{ status: "error", error, attempts }` (plus `last_success_age_ms` when known),
 *    and the endpoint answers 503.
 * Worst case wall time: (1 + retries) × timeout + retries × 100 ms, plus one more timeout when
 * the headBucket step runs. A check never throws; an abandoned call's late rejection is caught.
 */
import type { AdvancedConfig } from "../config/mod.ts";
import { type Backend, ObservedBackend } from "../storage/mod.ts";
import { withTimeout } from "../lib/mod.ts";
import { getLogger } from "../observability/mod.ts";

const log = getLogger("svc::readiness");

/** Pause between two listBuckets attempts. */
export const BACKOFF_MS = 100;
/** Longest error message put in a body (the endpoint is public). */
const MAX_ERROR_LENGTH = 200;

export interface ReadinessSettings {
  /** Per-attempt timeout in seconds; fractional allowed. */
  timeoutSecs: number;
  /** Extra listBuckets attempts after the first. */
  retries: number;
  /** Last-known-good window in seconds; 0 disables the headBucket and stale steps. */
  cacheTtlSecs: number;
}

/** The readiness settings of one config snapshot. */
export function readinessSettings(advanced: AdvancedConfig): ReadinessSettings {
  return {
    timeoutSecs: advanced.ready_timeout_secs,
    retries: advanced.ready_retries,
    cacheTtlSecs: advanced.ready_cache_ttl_secs,
  };
}

/** One entry of `checks`. `error` makes the whole answer not ready. */
export interface CheckReport {
  status: "ok" | "stale_ok" | "error";
  [field: string]: unknown;
}

export interface ReadinessCheck {
  readonly name: string;
  /** Should not throw; a throw is reported as that check's error. */
  run(): Promise<CheckReport>;
}

export interface ReadinessBody {
  status: "ready" | "not_ready";
  checks: Record<string, CheckReport>;
}

export interface ReadinessResult {
  ready: boolean;
  body: ReadinessBody;
}

export class Readiness {
  #inflight: Promise<ReadinessResult> | null = null;
  #lastReady: boolean | null = null;

  constructor(private readonly checks: readonly ReadinessCheck[]) {}

  /** Runs every check, or joins the run already in flight. Never rejects. */
  check(): Promise<ReadinessResult> {
    if (this.#inflight) return this.#inflight;
    const run = this.#run().finally(() => {
      if (this.#inflight === run) this.#inflight = null;
    });
    this.#inflight = run;
    return run;
  }

  async #run(): Promise<ReadinessResult> {
    const reports = await Promise.all(this.checks.map(async (check) => {
      try {
        return [check.name, await check.run()] as const;
      } catch (err) {
        return [check.name, { status: "error", error: errorMessage(err) } as CheckReport] as const;
      }
    }));
    const ready = reports.every(([, report]) => report.status !== "error");
    if (ready !== this.#lastReady) {
      const fields = Object.fromEntries(reports);
      if (ready && this.#lastReady === false) log.info("ready again", fields);
      if (!ready) log.warn("not ready", fields);
      this.#lastReady = ready;
    }
    return {
      ready,
      body: { status: ready ? "ready" : "not_ready", checks: Object.fromEntries(reports) },
    };
  }
}

export interface BackendCheckOptions {
  backend: Backend;
  /** Read on every run. */
  settings: () => ReadinessSettings;
  /**
   * When the backend last answered a call, epoch ms. Defaults to the backend's own
   * `lastSuccessAt` when it is an ObservedBackend; without one the stale step never accepts.
   */
  lastSuccessAt?: () => number | null;
  /** Pause between listBuckets attempts; BACKOFF_MS unless a test shortens it. */
  backoffMs?: number;
  /** Clock matching lastSuccessAt, epoch ms. */
  now?: () => number;
}

/** The `backend` check described at the top of this file. */
export function createBackendCheck(options: BackendCheckOptions): ReadinessCheck {
  const { backend, settings } = options;
  const backoffMs = options.backoffMs ?? BACKOFF_MS;
  const now = options.now ?? Date.now;
  const lastSuccessAt = options.lastSuccessAt ??
    (backend instanceof ObservedBackend ? () => backend.lastSuccessAt() : () => null);
  /** First bucket of the last successful list: the headBucket fallback's target. */
  let knownBucket: string | undefined;

  return {
    name: "backend",
    async run(): Promise<CheckReport> {
      const { timeoutMs, attempts, ttlMs } = normalise(settings());
      let listError = "";
      for (let attempt = 1; attempt <= attempts; attempt++) {
        if (attempt > 1) await sleep(backoffMs);
        const started = performance.now();
        try {
          const buckets = await withTimeout(
            Promise.resolve().then(() => backend.listBuckets()),
            timeoutMs,
            "listBuckets",
          );
          knownBucket = buckets[0]?.name;
          return { status: "ok", latency_ms: elapsedMs(started), attempts: attempt };
        } catch (err) {
          listError = errorMessage(err);
        }
      }
      if (ttlMs > 0) {
        if (knownBucket !== undefined) {
          const bucket = knownBucket;
          const started = performance.now();
          try {
            await withTimeout(
              Promise.resolve().then(() => backend.headBucket(bucket)),
              timeoutMs,
              "headBucket",
            );
            return {
              status: "ok",
              probe: "head_bucket",
              latency_ms: elapsedMs(started),
              attempts,
              list_error: listError,
            };
          } catch {
            // Fall through to the last-known-good window.
          }
        }
        const last = lastSuccessAt();
        const age = last === null ? null : Math.max(0, now() - last);
        if (age !== null && age <= ttlMs) {
          return { status: "stale_ok", last_success_age_ms: age, attempts, list_error: listError };
        }
      }
      const last = lastSuccessAt();
      const report: CheckReport = { status: "error", error: listError, attempts };
      if (last !== null) report.last_success_age_ms = Math.max(0, now() - last);
      return report;
    },
  };
}

/** A Readiness with the backend check plus any further checks (e.g. the config DB later). */
export function createReadiness(
  options: BackendCheckOptions & { extraChecks?: readonly ReadinessCheck[] },
): Readiness {
  return new Readiness([createBackendCheck(options), ...(options.extraChecks ?? [])]);
}

/**
 * The `request_slots` check: not ready while the longest waiter for a `max_concurrent_requests`
 * slot has waited `maxWaitSecs` or more (0 turns the check off). Slots held by slow clients
 * otherwise leave /_/ready at 200 while every S3 request times out in the queue.
 */
export function createSlotWaitCheck(
  slots: { oldestWaitMs(): number; readonly waiting: number },
  maxWaitSecs: () => number,
): { name: string; run(): CheckReport } {
  return {
    name: "request_slots",
    run(): CheckReport {
      const waitedMs = Math.round(slots.oldestWaitMs());
      const limitMs = maxWaitSecs() * 1000;
      const report = { waiting: slots.waiting, oldest_wait_ms: waitedMs };
      if (limitMs > 0 && waitedMs >= limitMs) {
        return {
          status: "error",
          error: `Requests have waited ${waitedMs} ms for a slot (limit ${limitMs} ms)`,
          ...report,
        };
      }
      return { status: "ok", ...report };
    },
  };
}

/** A readiness result with one more check's report folded in. */
export function withCheck(
  result: ReadinessResult,
  name: string,
  report: CheckReport,
): ReadinessResult {
  const ready = result.ready && report.status !== "error";
  return {
    ready,
    body: {
      status: ready ? "ready" : "not_ready",
      checks: { ...result.body.checks, [name]: report },
    },
  };
}

/** The HTTP answer: JSON body, 200 when ready, else 503; never cached. */
export function readyResponse(result: ReadinessResult): Response {
  return new Response(JSON.stringify(result.body), {
    status: result.ready ? 200 : 503,
    headers: { "content-type": "application/json", "cache-control": "no-store" },
  });
}

/** Guards against values the schema would reject, so a bad getter cannot hang or skip probes. */
function normalise(settings: ReadinessSettings) {
  const finite = (value: number, fallback: number) => Number.isFinite(value) ? value : fallback;
  return {
    timeoutMs: Math.max(1, finite(settings.timeoutSecs, 3) * 1000),
    attempts: 1 + Math.max(0, Math.floor(finite(settings.retries, 0))),
    ttlMs: Math.max(0, finite(settings.cacheTtlSecs, 0) * 1000),
  };
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

function elapsedMs(started: number): number {
  return Math.round((performance.now() - started) * 10) / 10;
}

function errorMessage(err: unknown): string {
  const message = err instanceof Error
    ? ("code" in err && typeof err.code === "string" ? `${err.code}: ${err.message}` : err.message)
    : String(err);
  return message.length > MAX_ERROR_LENGTH ? `${message.slice(0, MAX_ERROR_LENGTH)}…` : message;
}
