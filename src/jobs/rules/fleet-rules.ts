/**
 * Rule switches shared by the instances of a fleet (a coordination bucket,
 * `advanced.config_sync_bucket`), so the jobs surface of any instance steers a rule everywhere:
 *
 * - pause/resume: `_svc/rules/<kind>/<name>.json` holds `{paused, by, at}`. Once it exists it
 *   wins over each instance's own row (the last pause or resume made anywhere holds); an
 *   instance that cannot read it falls back to its own row.
 * - kill of a run on another instance: the run's lease (s3-leases.ts) is expired with a
 *   conditional write; the holder's next heartbeat fails to renew it and aborts the run.
 *
 * Leases themselves keep two instances from running one rule at once; a scheduled run also
 * skips a rule another instance ran within half its interval (`notRunWithinMs`), so a rule runs
 * about once per interval fleet-wide rather than once per instance.
 */
import { getLogger } from "../../observability/mod.ts";
import { BackendError, type S3Client } from "../../storage/mod.ts";
import type { LeaseHolder } from "./rule-store.ts";
import type { LastRun, S3Leases } from "./s3-leases.ts";
import { messageOf } from "./run-recorder.ts";

const log = getLogger("svc::jobs");

export interface FleetSwitch {
  paused: boolean;
  by: string;
  at: number;
}

/** What the schedulers and the rules room ask of the fleet (null: no fleet). */
export interface FleetRules {
  /** The fleet-wide pause switch of a rule; null when none was set or it cannot be read. */
  paused(id: string): Promise<boolean | null>;
  setPaused(id: string, paused: boolean, by: string): Promise<void>;
  /** Who holds the rule's lease now anywhere in the fleet, and how its last run there ended. */
  lease(id: string): Promise<{ holder: LeaseHolder | null; lastRun: LastRun | null }>;
  /** Ends the run another instance holds (its lease expires); false when none holds it. */
  killElsewhere(id: string): Promise<boolean>;
}

export function switchKey(id: string): string {
  const colon = id.indexOf(":");
  return `_svc/rules/${id.slice(0, colon)}/${id.slice(colon + 1)}.json`;
}

export class S3FleetRules implements FleetRules {
  constructor(
    private readonly client: S3Client,
    private readonly bucket: string,
    private readonly leases: S3Leases,
    private readonly now: () => number = Date.now,
  ) {}

  async paused(id: string): Promise<boolean | null> {
    try {
      const response = await this.client.send({
        method: "GET",
        bucket: this.bucket,
        key: switchKey(id),
        idempotent: true,
      });
      const parsed = JSON.parse(response.text) as Partial<FleetSwitch>;
      return typeof parsed?.paused === "boolean" ? parsed.paused : null;
    } catch (err) {
      if (err instanceof BackendError && err.status === 404 && err.code !== "NoSuchBucket") {
        return null;
      }
      log.warn("the fleet-wide pause switch could not be read; this instance's row decides", {
        job: id,
        error: messageOf(err),
      });
      return null;
    }
  }

  async setPaused(id: string, paused: boolean, by: string): Promise<void> {
    const doc: FleetSwitch = { paused, by, at: this.now() };
    await this.client.send({
      method: "PUT",
      bucket: this.bucket,
      key: switchKey(id),
      headers: { "content-type": "application/json" },
      body: JSON.stringify(doc),
      idempotent: true,
    });
  }

  lease(id: string): Promise<{ holder: LeaseHolder | null; lastRun: LastRun | null }> {
    return this.leases.state(id);
  }

  killElsewhere(id: string): Promise<boolean> {
    return this.leases.expire(id);
  }
}
