/**
 * The scheduler of one recurring kind (replication or lifecycle): it mirrors the configured rules
 * into rows, runs each rule when it is due (every `tick`), and carries out the actions of the
 * jobs surface — pause, resume, run-now, preview, kill. A real run holds the rule's leader lease
 * (renewed every heartbeat; a lost lease aborts the run and records a failure), has a run row
 * from start to end, and writes its per-object failures to the rule's ring. A preview runs the
 * same code with `dryRun`, without lease, run row or failure rows.
 */
import { JobsError } from "../jobs-error.ts";
import type { Config } from "../../config/mod.ts";
import type { RuleStore } from "./rule-store.ts";
import { getLogger } from "../../observability/mod.ts";
import type { Clock } from "../clock.ts";
import type { Lease, Leases } from "./leases.ts";
import type { KindSettings, RuleDriver, RunOutcome, RunReport, RunTrigger } from "./rule-model.ts";
import { messageOf, RunRecorder } from "./run-recorder.ts";
import { renewWhileRunning, RunAborted } from "./run-lease.ts";

const log = getLogger("svc::jobs");

export interface RuleJobsOptions {
  store: RuleStore;
  config: () => Config;
  clock: Clock;
  leases: () => Leases;
  audit: (event: string, fields: Record<string, unknown>, level?: "info" | "warn") => void;
  /** Told about every run that ended (metrics). */
  onRunEnd?: (kind: string, status: string, seconds: number) => void;
  /** The fleet-wide pause switch (fleet-rules.ts), which wins over the row's when set. */
  fleetPaused?: (id: string) => Promise<boolean | null>;
}

interface Running {
  abort: AbortController;
  done: Promise<RunReport>;
  trigger: RunTrigger;
}

type AnyRule = { name: string; enabled: boolean };

/** Scheduler fields kept in a rule's `state` beside the kind's own. */
interface SchedulerState {
  next_due_at?: number;
  last_run_at?: number;
  lifetime?: Record<string, number>;
}

export class RuleJobs<Rule extends AnyRule = AnyRule> {
  readonly driver: RuleDriver<Rule>;
  readonly #options: RuleJobsOptions;
  readonly #running = new Map<string, Running>();
  readonly #verifying = new Set<string>();
  readonly #stopping = new AbortController();
  #loop: Promise<void> | null = null;

  constructor(driver: RuleDriver<Rule>, options: RuleJobsOptions) {
    this.driver = driver;
    this.#options = options;
  }

  get kind(): "replication" | "lifecycle" {
    return this.driver.kind;
  }

  idOf(name: string): string {
    return `${this.kind}:${name}`;
  }

  settings(): KindSettings {
    return this.driver.settings(this.#options.config());
  }

  /** The configured rule of that name, or undefined. */
  rule(name: string): Rule | undefined {
    return this.driver.rules(this.#options.config()).find((rule) => rule.name === name);
  }

  /** Enabled, not paused, and its kind switched on: what the scheduler and event paths run. */
  async active(name: string): Promise<boolean> {
    const rule = this.rule(name);
    if (!rule || !rule.enabled || !this.settings().enabled) return false;
    const row = await this.#options.store.row(this.idOf(name));
    return row !== null && !(await this.#paused(this.idOf(name), row.paused));
  }

  async #paused(id: string, local: boolean): Promise<boolean> {
    return (await this.#options.fleetPaused?.(id)) ?? local;
  }

  isRunning(name: string): boolean {
    return this.#running.has(this.idOf(name));
  }

  /** Mirrors the configured rules into rows (rows of removed rules go, with their history). */
  async sync(): Promise<void> {
    const config = this.#options.config();
    const removed = await this.#options.store.sync(
      this.kind,
      this.driver.rules(config).map((rule) => ({
        id: this.idOf(rule.name),
        kind: this.kind,
        type: this.driver.type(rule),
        scope: this.driver.scope(rule),
      })),
    );
    for (const id of removed) {
      this.#options.audit("job_rule_removed", { job: id, reason: "no longer configured" });
    }
  }

  /** Starts the scheduler loop (one tick per `tick_interval`, re-read every tick). */
  start(): void {
    if (this.#loop) return;
    this.#loop = (async () => {
      const signal = this.#stopping.signal;
      while (!signal.aborted) {
        try {
          await this.tick();
        } catch (err) {
          log.warn("scheduler tick failed", { kind: this.kind, error: messageOf(err) });
        }
        await this.#options.clock.sleep(this.settings().tickMs, signal).catch(() => {});
      }
    })();
  }

  /** Stops the loop, aborts runs in flight and waits for them to record their end. */
  async stop(): Promise<void> {
    this.#stopping.abort(new RunAborted("shutdown"));
    for (const running of this.#running.values()) running.abort.abort(new RunAborted("shutdown"));
    await Promise.allSettled([this.#loop, ...[...this.#running.values()].map((r) => r.done)]);
  }

  /** One scheduler tick: every active rule whose next due time passed starts a run. */
  async tick(): Promise<void> {
    await this.sync();
    if (!this.settings().enabled) return;
    const now = this.#options.clock.now();
    for (const rule of this.driver.rules(this.#options.config())) {
      if (!rule.enabled || this.isRunning(rule.name)) continue;
      const row = await this.#options.store.row(this.idOf(rule.name));
      if (row === null || ((row.state as SchedulerState).next_due_at ?? 0) > now) continue;
      if (await this.#paused(this.idOf(rule.name), row.paused)) continue;
      // A rule leased elsewhere skips this tick; anything else is logged by the run itself.
      this.#begin(rule, "scheduler").catch((err) => {
        if (!(err instanceof JobsError && err.code === "conflict")) {
          log.warn("scheduled run did not start", {
            job: this.idOf(rule.name),
            error: messageOf(err),
          });
        }
      });
    }
  }

  /**
   * Runs a rule now and answers when it ended. 409 when it is already running here or leased by
   * another runner. `ignorePause` lets replication run a disabled or paused rule once.
   */
  async runNow(name: string, actor: string): Promise<RunReport> {
    const rule = this.#required(name);
    // SPEC: lifecycle run-now needs the kind and the rule enabled and the rule not paused;
    // replication's runs a disabled or paused rule once without flipping the flag.
    const precheck = this.kind !== "lifecycle" ? undefined : async () => {
      const row = await this.#options.store.row(this.idOf(name));
      const why = !this.settings().enabled
        ? "lifecycle is disabled (storage.lifecycle.enabled)"
        : !rule.enabled
        ? "the rule is disabled"
        : row !== null && await this.#paused(this.idOf(name), row.paused)
        ? "the rule is paused"
        : null;
      if (why !== null) throw new JobsError("conflict", `Rule "${name}" cannot run now: ${why}`);
    };
    return await this.#begin(rule, "run-now", actor, precheck);
  }

  /** A dry run: what a run would do now; no lease, no history, no failure rows. */
  async preview(name: string): Promise<RunReport> {
    const rule = this.#required(name);
    return await this.#execute(rule, "preview", null, new AbortController());
  }

  /** Interrupts the run in flight (mid-object); 409 when none runs. */
  kill(name: string, actor: string): void {
    const running = this.#running.get(this.idOf(this.#required(name).name));
    if (!running) {
      throw new JobsError("conflict", `Rule "${name}" has no run in progress`);
    }
    running.abort.abort(new RunAborted("kill", actor));
  }

  /** The parity audit; 409 while a run is in flight (a run-now meanwhile is refused too). */
  async verify(name: string, actor: string): Promise<Record<string, unknown>> {
    const rule = this.#required(name);
    const id = this.idOf(name);
    if (!this.driver.verify) {
      throw new JobsError("method_not_allowed", `${this.kind} rules have no verify`);
    }
    if (this.#running.has(id) || this.#verifying.has(id)) {
      throw new JobsError("conflict", `Rule "${name}" is running; verify after the run ends`);
    }
    this.#verifying.add(id);
    try {
      this.#options.audit("job_verify", { job: id, user: actor });
      return await this.driver.verify(rule, this.#stopping.signal);
    } finally {
      this.#verifying.delete(id);
    }
  }

  /** Whether a run or a verify of the rule is in flight (delete answers 409 then). */
  busy(name: string): boolean {
    const id = this.idOf(name);
    return this.#running.has(id) || this.#verifying.has(id);
  }

  /** Appends failures found outside a run (the replication event path) to the rule's ring. */
  async addFailures(
    name: string,
    failures: { bucket: string; key: string; message: string; at: number }[],
  ): Promise<void> {
    await this.#options.store.addFailures(
      this.idOf(name),
      null,
      failures,
      this.settings().maxFailures,
    );
  }

  async setPaused(name: string, paused: boolean): Promise<void> {
    this.#required(name);
    await this.sync();
    await this.#options.store.setPaused(this.idOf(name), paused);
  }

  #required(name: string): Rule {
    const rule = this.rule(name);
    if (!rule) throw new JobsError("not_found", `No ${this.kind} rule "${name}" is configured`);
    return rule;
  }

  async #begin(
    rule: Rule,
    trigger: RunTrigger,
    actor?: string,
    precheck?: () => Promise<void>,
  ): Promise<RunReport> {
    const id = this.idOf(rule.name);
    if (this.#running.has(id)) {
      throw new JobsError("conflict", `Rule "${rule.name}" is already running`);
    }
    if (this.#verifying.has(id)) {
      throw new JobsError("conflict", `Rule "${rule.name}" is being verified`);
    }
    const abort = new AbortController();
    // Claimed synchronously: a second run-now racing this one sees it at once.
    const entry = { abort, trigger, done: null as unknown as Promise<RunReport> };
    this.#running.set(id, entry);
    entry.done = (async () => {
      try {
        await this.sync();
        await precheck?.();
        const settings = this.settings();
        // A scheduled run skips a rule another instance of the fleet just ran (s3-leases.ts).
        const recent = trigger === "scheduler"
          ? { notRunWithinMs: this.driver.intervalMs(rule, this.#options.config()) / 2 }
          : undefined;
        const lease = await this.#options.leases().acquire(id, settings.leaseTtlMs, recent);
        if (lease === null) {
          const holder = await this.#options.leases().holder(id).catch(() => null);
          throw new JobsError(
            "conflict",
            `Rule "${rule.name}" is leased by another runner${
              holder ? ` (${holder.holder}, until ${new Date(holder.expiresAt).toISOString()})` : ""
            }`,
          );
        }
        let report: RunReport | undefined;
        try {
          return report = await this.#execute(rule, trigger, lease, abort, actor);
        } finally {
          const ended = report && { status: report.status, trigger };
          await this.#options.leases().release(lease, ended).catch((err) =>
            log.warn("lease release failed", { job: id, error: messageOf(err) })
          );
        }
      } finally {
        this.#running.delete(id);
      }
    })();
    return await entry.done;
  }

  async #execute(
    rule: Rule,
    trigger: RunTrigger,
    lease: Lease | null,
    abort: AbortController,
    actor?: string,
  ): Promise<RunReport> {
    const { store, clock } = this.#options;
    const id = this.idOf(rule.name);
    const config = this.#options.config();
    const settings = this.driver.settings(config);
    const dryRun = lease === null;
    const started = clock.now();
    const row = await store.row(id);
    const state = { ...(row?.state ?? {}) } as Record<string, unknown>;
    const runId = dryRun ? null : await store.beginRun(id, trigger, started);
    const recorder = new RunRecorder(
      settings.maxFailures,
      () => clock.now(),
      dryRun
        ? undefined
        : (failures) => store.addFailures(id, runId, failures, settings.maxFailures),
    );
    if (!dryRun) {
      this.#options.audit("job_run_started", {
        job: id,
        run_id: runId,
        trigger,
        user: actor ?? null,
      });
    }
    const heartbeat = lease
      ? renewWhileRunning(lease, settings, abort, this.#options.leases, clock)
      : null;
    let outcome: RunOutcome;
    try {
      outcome = await this.driver.run(rule, {
        trigger,
        dryRun,
        signal: AbortSignal.any([abort.signal, this.#stopping.signal]),
        clock,
        recorder,
        state,
        saveState: async (next) => {
          Object.assign(state, next);
          if (!dryRun) await store.saveState(id, state);
        },
      });
    } catch (err) {
      const reason = abort.signal.aborted ? abort.signal.reason : this.#stopping.signal.reason;
      outcome = reason instanceof RunAborted
        ? {
          status: reason.why === "kill" || reason.why === "shutdown" ? "cancelled" : "failed",
          error: reason.message,
        }
        : { status: "failed", error: messageOf(err) };
    } finally {
      if (heartbeat !== null) clearInterval(heartbeat);
    }
    const reason = abort.signal.reason;
    if (reason instanceof RunAborted && reason.why === "lease-lost") {
      outcome = { status: "failed", error: reason.message };
      recorder.fail(rule.name, "", reason);
    }
    const ended = clock.now();
    const report: RunReport = {
      ...(runId !== null ? { run_id: runId } : {}),
      ...recorder.counters,
      status: outcome.status,
      error: outcome.error ?? null,
      candidates: recorder.candidates,
      failures: recorder.failures,
    };
    if (dryRun) return report;
    await recorder.flush().catch((err) =>
      log.warn("failure rows not written", { job: id, error: messageOf(err) })
    );
    const scheduler = state as SchedulerState;
    const lifetime = { ...(scheduler.lifetime ?? {}) };
    for (const [name, value] of Object.entries(recorder.counters)) {
      lifetime[name] = (lifetime[name] ?? 0) + value;
    }
    lifetime.runs = (lifetime.runs ?? 0) + 1;
    Object.assign(state, {
      last_run_at: ended,
      next_due_at: started + this.driver.intervalMs(rule, config),
      lifetime,
    });
    await store.endRun(id, runId!, {
      status: outcome.status,
      error: outcome.error ?? null,
      counters: { ...recorder.counters },
      state,
    }, ended);
    this.#options.onRunEnd?.(this.kind, outcome.status, (ended - started) / 1000);
    this.#options.audit("job_run_finished", {
      job: id,
      run_id: runId,
      trigger,
      status: outcome.status,
      error: outcome.error ?? null,
      ...recorder.counters,
    }, outcome.status === "failed" ? "warn" : "info");
    return report;
  }
}
