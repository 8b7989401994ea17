/**
 * What the Jobs page shows of a fleet (docs/ARCHITECTURE.md "Admin in a fleet"): a maintenance
 * job another instance runs (its row carries `held_by`), the buttons such a row offers, and the
 * columns of a rule's run history, whose rows name the instance that ran them. Pure (no DOM), so
 * job-fleet_test.ts tests it with plain Deno.
 */
import { formatAgo } from "../format.ts";

export interface HeldBy {
  instance: string;
  heartbeat_at: string;
}

/** The holder of a remote maintenance job, or null for a job of this instance. */
export function heldBy(row: Record<string, unknown>): HeldBy | null {
  const held = row.held_by as Partial<HeldBy> | null | undefined;
  return typeof held?.instance === "string"
    ? { instance: held.instance, heartbeat_at: String(held.heartbeat_at ?? "") }
    : null;
}

/** `running on host-1a2b, heartbeat 2 s ago` for a remote row. */
export function heldByText(held: HeldBy, now: number): string {
  return `running on ${held.instance}, heartbeat ${formatAgo(held.heartbeat_at, now)}`;
}

/** The one action another instance's job takes from here: cancel (written into its gate). */
const REMOTE_ACTIONS = new Set(["cancel"]);
/** Actions a job that ended no longer takes (the API answers 409). */
const ENDED_REFUSES = new Set(["cancel"]);
const ENDED = new Set(["succeeded", "failed", "cancelled"]);

/** The buttons a row offers: its `actions`, less what its state or its holder refuses. */
export function rowActions(row: Record<string, unknown>): string[] {
  const actions = Array.isArray(row.actions) ? row.actions.map(String) : [];
  const remote = heldBy(row) !== null;
  return actions.filter((name) =>
    !(ENDED_REFUSES.has(name) && ENDED.has(String(row.status))) &&
    (!remote || REMOTE_ACTIONS.has(name))
  );
}

/**
 * The columns of a run history: as the rows come (a single instance's page is unchanged), with
 * `instance` right after the run id once any row names one (run ids are per instance).
 */
export function runColumns(runs: Record<string, unknown>[]): string[] | undefined {
  if (!runs.some((run) => typeof run.instance === "string")) return undefined;
  const keys = [...new Set(runs.flatMap((run) => Object.keys(run)))].filter((k) =>
    k !== "instance"
  );
  const at = keys.indexOf("id") + 1;
  return [...keys.slice(0, at), "instance", ...keys.slice(at)];
}
