/**
 * IAM over the config database: the store, the index S3 authorizes against (built before S3
 * hears of it, so the first request already sees every user), declarative IAM reconciled at boot,
 * config sync with the other instances when a coordination bucket is set, and the hooks S3 is
 * built with (IAM keys before the bootstrap pair, IAM decisions on every request).
 */
import type { AuditFn, IamMetrics } from "../../observability/mod.ts";
import type { Config } from "../../config/mod.ts";
import { type ConfigDb, type ConfigSync, IamReconciler, IamStore } from "../../db/mod.ts";
import { IamCredentials, IamIndexHolder } from "../../iam/mod.ts";
import { type CoordinationBucket, coordinationBucket } from "../../jobs/mod.ts";
import { iamS3Access } from "../../s3/mod.ts";
import type { IamHooks } from "../s3-surface.ts";
import { reconcileAtBoot } from "./config-iam-boot.ts";
import { startConfigSync } from "./config-sync-start.ts";

export interface IamPlane {
  store: IamStore;
  /** The IAM index in effect (rebuilt after every IAM change). */
  index: IamIndexHolder;
  reconciler: IamReconciler;
  /** After an IAM change: rebuilds the index and publishes the change to the other instances. */
  changed(): Promise<unknown>;
  /** What S3 is built with. */
  hooks: IamHooks;
  /**
   * Publishes the config database's synced part (session revocations) without an IAM change;
   * resolves once done, never rejects. Nothing to do without config sync.
   */
  publish(): Promise<unknown>;
  /** Config sync, or null when it is off (no coordination bucket, declarative IAM). */
  sync(): ConfigSync | null;
  /** The coordination bucket (replication leases use it too), or null. */
  sharedBucket: CoordinationBucket | null;
  /** Stops config sync. */
  close(): Promise<void>;
}

export async function openIamPlane(deps: {
  db: ConfigDb;
  stateDir: string;
  config: Config;
  metrics: IamMetrics;
  audit: AuditFn;
  /** The running bootstrap key id (config sync refuses a copy giving it to a user). */
  bootstrapKeyId?: () => string | undefined;
}): Promise<IamPlane> {
  const { db, config, metrics, audit } = deps;
  const store = new IamStore(db);
  const index = new IamIndexHolder(store, (seconds) => {
    metrics.rebuilds.inc();
    metrics.rebuildDuration.observe(seconds);
  });
  await index.rebuild();
  // Sync starts after the boot reconcile (below); until then a change has no one to publish to.
  let sync: ConfigSync | null = null;
  const changed = () => {
    const rebuilt = index.rebuild();
    void sync?.changed();
    return rebuilt;
  };
  // Declarative IAM: the file is authoritative from the first request on, and every later
  // config apply reconciles through the runtime's one apply path.
  const reconciler = new IamReconciler(db, { onChange: changed });
  await reconcileAtBoot(reconciler, config.access, audit);
  // Checked now: svc refuses to start when the bucket cannot coordinate (conditional writes).
  const sharedBucket = await coordinationBucket(config);
  sync = await startConfigSync(sharedBucket, config, {
    db,
    stateDir: deps.stateDir,
    onAdopted: () => index.rebuild(),
    audit,
    count: (outcome) => metrics.syncs.inc({ outcome }),
    bootstrapKeyId: deps.bootstrapKeyId ?? (() => config.access.access_key_id),
  });
  const hooks: IamHooks = {
    credentials: new IamCredentials(index),
    access: iamS3Access(index, (decision) =>
      metrics.decisions.inc({
        decision: decision.allowed ? "allow" : "deny",
        reason: decision.reason === "bootstrap" ? "allow" : decision.reason,
      })),
  };
  const running = sync;
  return {
    store,
    index,
    reconciler,
    changed,
    publish: async () => await running?.changed(),
    sync: () => running,
    hooks,
    sharedBucket,
    close: async () => await running?.stop(),
  };
}
