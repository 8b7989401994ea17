import assert from "node:assert/strict";
import { HASH_A } from "../../../tests/helpers/config-db.ts";
import { openConfigDb } from "../../db/config-db.ts";
import { emptyProgress } from "../job-model.ts";
import { JobsError } from "../jobs-error.ts";
import { JobsStore } from "../jobs-store.ts";
import { checkFleetFree, claimNew, reclaim } from "./fleet-jobs.ts";
import type { MaintenanceFleet } from "./maintenance-deps.ts";

/** A fleet whose claim answers `outcome` (or throws it) and whose check answers `held`. */
function fleetAnswering(outcome: "created" | "own" | "held" | Error, held: string | null = null) {
  return {
    claim: () => outcome instanceof Error ? Promise.reject(outcome) : Promise.resolve(outcome),
    check: () => Promise.resolve(held),
  } as unknown as MaintenanceFleet;
}

async function withStore(fn: (store: JobsStore) => Promise<void>) {
  const dir = await Deno.makeTempDir({ prefix: "svc-fleet-jobs-" });
  const db = await openConfigDb({ dir: `${dir}/db`, passwordHash: HASH_A });
  try {
    await fn(new JobsStore(db));
  } finally {
    await db.close();
    await Deno.remove(dir, { recursive: true });
  }
}

function create(store: JobsStore, type: "reencrypt" | "migrate", bucket: string, cursor: unknown) {
  return store.createMaintenance({
    type,
    scope: { bucket, prefix: "" },
    progress: emptyProgress("queued"),
    state: { cursor, flipped: false },
    createdBy: "t",
  });
}

Deno.test("a resumed job re-claims its gate; a lapse fails or unwinds only what it must", async () => {
  await withStore(async (store) => {
    const audits: string[] = [];
    const audit = (event: string) => audits.push(event);
    // Its own gate still there, or a lapse before any copy: it runs as in one process.
    const own = await create(store, "migrate", "a", "k/3");
    assert.equal(await reclaim(fleetAnswering("own"), store, own, audit), true);
    const early = await create(store, "migrate", "b", null);
    assert.equal(await reclaim(fleetAnswering("created"), store, early, audit), true);
    assert.equal((await store.get(early.id))?.state.gateLapsed, undefined);
    const reencrypt = await create(store, "reencrypt", "c", "k/3");
    assert.equal(await reclaim(fleetAnswering("created"), store, reencrypt, audit), true);
    assert.deepEqual(audits, []);
    // A migration that had copied: marked, so its worker unwinds.
    const copying = await create(store, "migrate", "d", "k/3");
    assert.equal(await reclaim(fleetAnswering("created"), store, copying, audit), true);
    assert.equal((await store.get(copying.id))?.state.gateLapsed, true);
    // Another job took the bucket: a re-encrypt fails without running.
    const taken = await create(store, "reencrypt", "e", "k/3");
    assert.equal(await reclaim(fleetAnswering("held"), store, taken, audit), false);
    const failed = await store.get(taken.id);
    assert.equal(failed?.status, "failed");
    assert.match(failed?.error ?? "", /taken by another job/);
    assert.deepEqual(audits, ["job_fleet_gate_lapsed", "job_fleet_gate_lapsed"]);
  });
});

Deno.test("a new job is refused when the fleet holds its bucket or cannot be asked", async () => {
  await withStore(async (store) => {
    await assert.rejects(
      checkFleetFree(fleetAnswering("created", 'Bucket "x" is held'), "x"),
      (err: JobsError) => err.code === "conflict",
    );
    await checkFleetFree(undefined, "x");
    const lost = await create(store, "reencrypt", "x", null);
    await assert.rejects(
      claimNew(fleetAnswering("held"), store, lost),
      (err: JobsError) => err.code === "conflict",
    );
    assert.equal((await store.get(lost.id))?.status, "failed");
    const blind = await create(store, "reencrypt", "y", null);
    await assert.rejects(
      claimNew(fleetAnswering(new Error("connection refused")), store, blind),
      (err: JobsError) => err.code === "unavailable" && /connection refused/.test(err.message),
    );
    assert.equal((await store.get(blind.id))?.status, "failed", "never run ungated");
    const fine = await create(store, "reencrypt", "z", null);
    await claimNew(fleetAnswering("created"), store, fine);
    assert.equal((await store.get(fine.id))?.status, "queued");
  });
});
