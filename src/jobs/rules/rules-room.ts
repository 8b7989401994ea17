/**
 * Replication and lifecycle on the jobs surface: both schedulers, their rows as `GET /jobs` shows
 * them, and the actions of their matrix (pause, resume, run-now, preview, verify, kill, delete).
 * The jobs service hands every non-maintenance row and action here. In a fleet (`fleet`:
 * fleet-rules.ts) a row shows the fleet-wide pause switch, which instance holds the rule's
 * lease (`leased_by`) and the last run anywhere (`fleet_last_run`: instance, status, trigger,
 * end); pause and resume hold on every instance, and kill reaches a run another instance holds.
 */
import { JobsError } from "../jobs-error.ts";
import type { ConfigPort } from "../../config/mod.ts";
import type { RuleStore } from "./rule-store.ts";
import { type JobAction, type JobRecord, jobRow, runRow } from "../job-model.ts";
import { removeRuleFromConfig } from "./rule-config.ts";
import type { RuleJobs } from "./rule-jobs.ts";
import type { FleetRules } from "./fleet-rules.ts";
import { type FleetRuns, mergeRuns } from "./fleet-runs.ts";
import { getLogger } from "../../observability/mod.ts";
import { messageOf } from "./run-recorder.ts";

const log = getLogger("svc::jobs");

export type RuleKind = "replication" | "lifecycle";

export interface RulesRoomOptions {
  store: RuleStore;
  config: ConfigPort;
  kinds: RuleJobs[];
  audit: (event: string, fields: Record<string, unknown>, level?: "info" | "warn") => void;
  /** Loops that live as long as the schedulers (the replication event consumer). */
  companions?: { start(): void; stop(): Promise<void> }[];
  /** The rule switches and leases shared with the other instances; absent: node-local. */
  fleet?: FleetRules | null;
  /** The run history shared with the other instances (fleet-runs.ts); absent: node-local. */
  fleetRuns?: FleetRuns | null;
}

export class RulesRoom {
  readonly #options: RulesRoomOptions;
  readonly #kinds = new Map<string, RuleJobs>();

  constructor(options: RulesRoomOptions) {
    this.#options = options;
    for (const kind of options.kinds) this.#kinds.set(kind.kind, kind);
  }

  of(kind: RuleKind): RuleJobs | undefined {
    return this.#kinds.get(kind);
  }

  /** Boot: runs a dead process left running become failed; rows follow the config; loops start. */
  async start(now: number): Promise<void> {
    const recovered = await this.#options.store.failAbandonedRuns(now);
    if (recovered.length > 0) {
      this.#options.audit("job_runs_abandoned", { runs: recovered }, "warn");
    }
    for (const kind of this.#kinds.values()) {
      await kind.sync();
      kind.start();
    }
    for (const companion of this.#options.companions ?? []) companion.start();
  }

  async stop(): Promise<void> {
    await Promise.all((this.#options.companions ?? []).map((companion) => companion.stop()));
    await Promise.all([...this.#kinds.values()].map((kind) => kind.stop()));
  }

  /** Rows follow the config before anyone reads them. */
  async sync(): Promise<void> {
    for (const kind of this.#kinds.values()) await kind.sync();
  }

  /** The normalized row of a rule: the common fields plus its last run, schedule and switches. */
  async rows(jobs: JobRecord[]): Promise<Map<string, Record<string, unknown>>> {
    const rules = jobs.filter((job) => this.#kinds.has(job.kind));
    const last = await this.#options.store.lastRuns(rules.map((job) => job.id));
    const out = new Map<string, Record<string, unknown>>();
    for (const job of rules) {
      const kind = this.#kinds.get(job.kind)!;
      const name = job.id.slice(job.kind.length + 1);
      const state = job.state as { next_due_at?: number; last_run_at?: number; lifetime?: unknown };
      const rule = kind.rule(name);
      const fleet = this.#options.fleet;
      const [paused, lease] = fleet
        ? await Promise.all([fleet.paused(job.id), fleet.lease(job.id).catch(() => null)])
        : [null, null];
      const leasedBy = lease?.holder ?? null, lastRun = lease?.lastRun ?? null;
      out.set(job.id, {
        ...jobRow(job),
        paused: paused ?? job.paused,
        ...(fleet
          ? {
            leased_by: leasedBy && {
              holder: leasedBy.holder,
              expires_at: new Date(leasedBy.expiresAt).toISOString(),
            },
            fleet_last_run: lastRun && {
              instance: lastRun.holder,
              status: lastRun.status,
              trigger: lastRun.trigger,
              finished_at: new Date(lastRun.finished_at).toISOString(),
            },
          }
          : {}),
        name,
        enabled: (rule?.enabled ?? false) && kind.settings().enabled,
        running: kind.isRunning(name),
        last_run: runRow(last.get(job.id) ?? null),
        next_run_at: state.next_due_at !== undefined
          ? new Date(state.next_due_at).toISOString()
          : null,
        lifetime: state.lifetime ?? {},
      });
    }
    return out;
  }

  /**
   * A rule's runs, newest first. In a fleet: every instance's (its own rows here, the others'
   * published documents), each naming the instance that ran it; when the others cannot be read,
   * this instance's alone (logged).
   */
  async runs(job: JobRecord, limit: number): Promise<Record<string, unknown>[]> {
    const own = await this.#options.store.recentRuns(job.id, limit);
    const fleetRuns = this.#options.fleetRuns;
    if (!fleetRuns) return own.map((run) => runRow(run)!);
    const others = await fleetRuns.others(job.id).catch((err) => {
      log.warn("the other instances' runs could not be read; answering this one's", {
        job: job.id,
        error: messageOf(err),
      });
      return [];
    });
    return mergeRuns([{ instance: fleetRuns.instance, runs: own }, ...others], limit)
      .map(({ instance, run }) => ({ ...runRow(run)!, instance }));
  }

  /** One action of the kind's matrix (the route already refused the others with 405). */
  async act(
    job: JobRecord,
    action: JobAction,
    actor: { user: string; ip: string },
  ): Promise<{ status: number; body: Record<string, unknown> }> {
    const kind = this.#kinds.get(job.kind);
    if (!kind) throw new JobsError("not_found", `No job "${job.id}"`);
    const name = job.id.slice(job.kind.length + 1);
    const audit = (event: string) =>
      this.#options.audit(
        event,
        { ...actor, job: job.id },
        event === "job_deleted" ? "warn" : "info",
      );
    switch (action) {
      case "pause":
      case "resume":
        await kind.setPaused(name, action === "pause");
        await this.#options.fleet?.setPaused(job.id, action === "pause", actor.user);
        audit(action === "pause" ? "job_paused" : "job_resumed");
        return { status: 200, body: await this.#row(job.id) };
      case "run-now":
        return { status: 200, body: { ...await kind.runNow(name, actor.user) } };
      case "preview":
        return { status: 200, body: { ...await kind.preview(name) } };
      case "verify":
        return { status: 200, body: await kind.verify(name, actor.user) };
      case "kill":
        // A run on another instance of the fleet: its lease is expired, and the run stops there.
        if (!kind.isRunning(name) && await this.#options.fleet?.killElsewhere(job.id)) {
          audit("job_killed");
          return { status: 202, body: { killed: job.id, elsewhere: true } };
        }
        kind.kill(name, actor.user);
        audit("job_killed");
        return { status: 202, body: { killed: job.id } };
      case "delete": {
        if (kind.busy(name)) {
          throw new JobsError("conflict", `Rule "${name}" is running or being verified`);
        }
        await removeRuleFromConfig(this.#options.config, kind.kind, name, actor);
        await this.#options.store.remove(job.id);
        await this.#options.fleetRuns?.forget(job.id).catch(() => {});
        audit("job_deleted");
        return { status: 200, body: { deleted: job.id } };
      }
      default:
        throw new JobsError("method_not_allowed", `Action "${action}" is not supported`);
    }
  }

  async #row(id: string): Promise<Record<string, unknown>> {
    const jobs = await this.#options.store.jobs([id]);
    return (await this.rows(jobs)).get(id) ?? {};
  }
}
