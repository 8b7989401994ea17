/**
 * The jobs room: maintenance jobs (re-encrypt, migrate) and the rule schedulers (replication and
 * lifecycle) over the config database, their runs reaching the storage stack in use.
 */
import type { AuditFn } from "../../observability/mod.ts";
import type { ConfigDb } from "../../db/mod.ts";
import type { EventOutbox } from "../../events/mod.ts";
import {
  type CoordinationBucket,
  coordinationLeases,
  DbLeases,
  FleetGate,
  FleetRoutes,
  FleetRuns,
  GateDocs,
  JobsService,
  JobsStore,
  lifecycleDriver,
  type MaintenanceSettings,
  OutboxConsumer,
  OutboxCursor,
  PublishingRuleStore,
  replicationDriver,
  routeBucketVia,
  RouteDocs,
  type RuleEnv,
  RuleJobs,
  RulesRoom,
  RuleStore,
  S3FleetRules,
} from "../../jobs/mod.ts";
import type { ConfigRuntime } from "../config-runtime.ts";
import type { Services } from "../services.ts";
import { fleetInstanceId } from "./usage-plane.ts";

export interface JobsDeps {
  services: Services;
  runtime: ConfigRuntime;
  db: ConfigDb;
  events: EventOutbox;
  audit: AuditFn;
  /** Where rule leases and switches live when set; else they stay node-local. */
  sharedBucket: CoordinationBucket | null;
  env: Record<string, string | undefined>;
  /** This instance's stable id in the fleet (its published runs are named by it). */
  fleetInstance?: string;
}

/**
 * Maintenance job pacing from the environment: `SVC_MAINTENANCE_BATCH_SIZE` keys per listing page
 * (default 1000), `SVC_MAINTENANCE_PACE_MS` pause after each object (default 0: as fast as the
 * backends go; set it to bound the load a re-encrypt or migration puts on a busy backend).
 */
export function maintenanceSettings(env: Record<string, string | undefined>): MaintenanceSettings {
  const int = (name: string, fallback: number, min: number) => {
    const raw = env[name];
    const value = Number(raw);
    return raw !== undefined && /^\d+$/.test(raw) && value >= min ? value : fallback;
  };
  return {
    batchSize: Math.min(int("SVC_MAINTENANCE_BATCH_SIZE", 1000, 1), 1000),
    paceMs: int("SVC_MAINTENANCE_PACE_MS", 0, 0),
    attempts: 3,
  };
}

/**
 * Replication and lifecycle: both schedulers over the config database, their runs reaching the
 * storage stack in use. Leases live in the coordination bucket when one is set (one instance of
 * the fleet runs a rule at a time, and the rule switches are shared: fleet-rules.ts), else in the
 * config database, under an id of this process.
 */
function openRulesRoom(
  { services, runtime, db, events, audit, sharedBucket, fleetInstance }: JobsDeps,
) {
  const instance = `${Deno.hostname()}:${Deno.pid}:${crypto.randomUUID().slice(0, 8)}`;
  // Runs are published under the instance's stable id, so its rows keep their name after a
  // restart (the lease holder id changes with every process).
  const fleetRuns = sharedBucket === null
    ? null
    : new FleetRuns(sharedBucket.client, sharedBucket.bucket, fleetInstance ?? instance);
  const store = fleetRuns === null ? new RuleStore(db) : new PublishingRuleStore(db, fleetRuns);
  const leases = new DbLeases(store, instance);
  // Rule leases live in the coordination bucket when one is set (checked now: svc refuses to
  // start when it cannot hold them).
  const shared = coordinationLeases(sharedBucket, instance);
  const fleet = shared === null || sharedBucket === null
    ? null
    : new S3FleetRules(sharedBucket.client, sharedBucket.bucket, shared);
  const env: RuleEnv = {
    config: () => services.config.current,
    objects: () => services.storage.objects,
    backendKind: async (bucket) => (await services.storage.router.route(bucket)).backend.kind,
    // A bucket fenced for a route record it cannot adopt (fleet-routes.ts) is skipped as well.
    gatedBy: (bucket) =>
      services.maintenanceGate.holder(bucket) ??
        (services.maintenanceGate.fenced(bucket) ? "fleet-route-record" : undefined),
    recordEvent: (event) => events.writer.record(event),
    journalRemoval: (object, removal) => events.writer.journal(object, removal),
    dropJournal: (id) => events.writer.settle(id, false),
    metrics: services.metrics,
    clock: services.clock,
  };
  const options = {
    store,
    config: () => services.config.current,
    clock: services.clock,
    leases: () => shared ?? leases,
    audit,
    fleetPaused: fleet === null ? undefined : (id: string) => fleet.paused(id),
  };
  const replication = new RuleJobs(replicationDriver(env), options);
  const consumer = new OutboxConsumer({
    env,
    outbox: events.store,
    cursor: new OutboxCursor(db),
    rules: () => replication.driver.rules(services.config.current),
    active: (name) => replication.active(name),
    addFailures: (name, failures) => replication.addFailures(name, failures),
    maxFailures: () => replication.settings().maxFailures,
  });
  return new RulesRoom({
    store,
    config: runtime,
    audit,
    kinds: [replication, new RuleJobs(lifecycleDriver(env), options)],
    companions: [consumer],
    fleet,
    fleetRuns,
  });
}

/** The jobs room, started: a re-queued job's write gate is engaged before any S3 write. */
export async function openJobs(deps: JobsDeps): Promise<JobsService> {
  const { services, runtime, db, audit } = deps;
  const holder = services.config;
  const jobMetrics = services.metrics.jobs;
  const pacing = maintenanceSettings(deps.env);
  const fleet = await openFleetGate(deps);
  const flip = (bucket: string, backend: string) => routeBucketVia(runtime, bucket, backend);
  const jobs = new JobsService({
    deps: {
      store: new JobsStore(db),
      clock: services.clock,
      gate: fleet ?? services.maintenanceGate,
      route: (bucket) => services.storage.router.route(bucket),
      routedTo: (bucket) => holder.current.storage.buckets[bucket]?.backend,
      backend: (name) => services.storage.backends.get(name),
      routeBucket: (bucket, backend) =>
        fleet ? fleet.flip(bucket, backend, () => flip(bucket, backend)) : flip(bucket, backend),
      settings: () => pacing,
      audit,
      ...(fleet ? { fleet } : {}),
      metrics: {
        objects: (type, outcome, n = 1) => jobMetrics.objects.inc({ type, outcome }, n),
        bytes: (type, n) => jobMetrics.bytes.inc({ type }, n),
      },
    },
    gauge: jobMetrics.count,
    rules: openRulesRoom(deps),
  });
  await jobs.start();
  return jobs;
}

/**
 * Fleet mode: the maintenance write gate held on every instance (jobs/maintenance/fleet-gate.ts),
 * under this instance's stable fleet id; its first listing runs now, before the listener opens,
 * so a gate another instance holds is engaged before this one serves a write. A routing flip made
 * elsewhere is adopted through the same config apply path as a local one, from the gate or from
 * the durable route record (`_svc/routes/<bucket>.json`, fleet-routes.ts) an instance that was down
 * during the flip reads at boot; per bucket, the record it last settled is kept in node-local meta
 * (`fleet_route:<bucket>`).
 */
async function openFleetGate(deps: JobsDeps): Promise<FleetGate | null> {
  const { sharedBucket, services, runtime, db } = deps;
  if (sharedBucket === null) return null;
  const instance = await fleetInstanceId(db);
  const docs = new GateDocs(sharedBucket.client, sharedBucket.bucket);
  const routedTo = (bucket: string) => services.config.current.storage.buckets[bucket]?.backend;
  const known = (backend: string) => services.storage.backends.has(backend);
  // Both ways a flip reaches this instance (the gate, the route record) apply it alike.
  const adopt = async (bucket: string, backend: string, via: Record<string, unknown>) => {
    if (routedTo(bucket) === backend) return;
    if (!known(backend)) throw new Error(`Backend "${backend}" is not configured on this instance`);
    await routeBucketVia(runtime, bucket, backend);
    deps.audit("job_bucket_flip_adopted", { bucket, backend, ...via });
  };
  const settledKey = (bucket: string) => `fleet_route:${bucket}`;
  const routes = new FleetRoutes({
    store: new RouteDocs(sharedBucket.client, sharedBucket.bucket, (prefix) => docs.list(prefix)),
    instance,
    routedTo,
    known,
    adopt: (record) =>
      adopt(record.bucket, record.backend, {
        via: "route_record",
        job: record.job,
        holder: record.holder,
      }),
    settled: async (bucket) => {
      const found = await db.execute({
        sql: "SELECT value FROM meta WHERE key = ?",
        args: [settledKey(bucket)],
      });
      return found.rows.length > 0 ? String(found.rows[0].value) : null;
    },
    settle: async (bucket, identity) => {
      await db.execute({
        sql: "INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)",
        args: [settledKey(bucket), identity],
      });
    },
    fence: (bucket, reason) => services.maintenanceGate.fence(bucket, reason),
  });
  const gate = new FleetGate({
    docs,
    instance,
    local: services.maintenanceGate,
    adopt: (bucket, backend) => adopt(bucket, backend, { via: "gate" }),
    routes,
  });
  await gate.start();
  return gate;
}
