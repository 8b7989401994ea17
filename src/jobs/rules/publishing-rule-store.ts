/**
 * The rule store of an instance in a fleet: as the node-local one, and when a run starts or ends
 * it publishes this instance's recent runs of that rule (fleet-runs.ts), so every instance's
 * `GET /jobs/<id>/runs` shows the run. The run has been recorded here first; a failed publish is
 * logged and the run goes on (the next start or end publishes again).
 */
import type { DbClient } from "../../db/mod.ts";
import { getLogger } from "../../observability/mod.ts";
import { FLEET_RUNS_KEPT, type FleetRuns } from "./fleet-runs.ts";
import { type RuleRunEnd, RuleStore } from "./rule-store.ts";
import { messageOf } from "./run-recorder.ts";

const log = getLogger("svc::jobs");

export class PublishingRuleStore extends RuleStore {
  readonly #runs: FleetRuns;

  constructor(db: DbClient, runs: FleetRuns, now: () => number = Date.now) {
    super(db, now);
    this.#runs = runs;
  }

  /** Publishes this instance's recent runs of rule `id`; never rejects. */
  async publishRuns(id: string): Promise<void> {
    try {
      await this.#runs.publish(id, await this.recentRuns(id, FLEET_RUNS_KEPT));
    } catch (err) {
      log.warn("the rule's runs could not be published to the fleet", {
        job: id,
        error: messageOf(err),
      });
    }
  }

  override async beginRun(id: string, triggeredBy: string, at: number): Promise<number> {
    const runId = await super.beginRun(id, triggeredBy, at);
    await this.publishRuns(id);
    return runId;
  }

  override async endRun(id: string, runId: number, end: RuleRunEnd, at: number): Promise<void> {
    await super.endRun(id, runId, end, at);
    await this.publishRuns(id);
  }
}
