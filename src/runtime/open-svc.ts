/**
 * The composition root: every long-lived part of a running svc, built once, in dependency order,
 * each given what it needs at construction.
 *
 * 1. services: the config snapshot, the metrics registry and the storage stack (first, so a
 *    storage that cannot open stops svc before any admin state is written);
 * 2. the config database and the bootstrap password (admin-plane/config-state.ts);
 * 3. IAM over that database (admin-plane/iam-plane.ts);
 * 4. the S3 surface, built with IAM's keys and access hooks;
 * 5. the config runtime (the one apply path), built with IAM's reconciler;
 * 6. the admin plane: sessions, events, usage, jobs and the admin routes.
 *
 * One cycle is real and stays lazy: the registry (1) reads the authenticator (4) and the IAM
 * index (3) at scrape time, and both are built after it because they feed it. A scrape needs the
 * listener, which opens after all of this, so the getters below always find them.
 */
import type { AuditFn } from "../observability/mod.ts";
import type { Config } from "../config/mod.ts";
import type { Clock } from "../jobs/mod.ts";
import { type AdminPlane, openAdminPlane } from "./admin-plane/admin-plane.ts";
import { openConfigState } from "./admin-plane/config-state.ts";
import { type IamPlane, openIamPlane } from "./admin-plane/iam-plane.ts";
import { ConfigRuntime, type ConfigRuntimeOptions } from "./config-runtime.ts";
import { openS3Surface, type S3Surface } from "./s3-surface.ts";
import { openServices, type Services } from "./services.ts";

export interface Svc {
  services: Services;
  surface: S3Surface;
  runtime: ConfigRuntime;
  admin: AdminPlane;
}

export interface SvcOptions {
  clock: Clock;
  /** The environment at startup (bootstrap password, maintenance pacing). */
  env: Record<string, string | undefined>;
  /** bcrypt cost of hashes svc makes (first run, password change); default 12. */
  bcryptCost?: number;
  runtime: Omit<ConfigRuntimeOptions, "iamReconciler">;
}

export async function openSvc(config: Config, options: SvcOptions): Promise<Svc> {
  // The scrape-time holder (see above): filled in as steps 3 and 4 are built.
  const late: { iam?: IamPlane; surface?: S3Surface } = {};
  const services = await openServices(config, {
    clock: options.clock,
    scrape: {
      authStats: () => late.surface?.authenticator.stats ?? null,
      iamIndex: () => {
        const index = late.iam?.index;
        return index ? { users: index.current.userCount, version: index.version } : null;
      },
    },
  });
  const audit: AuditFn = (event, fields, level) =>
    void services.logging.auditRing.record(event, fields, level);
  const state = await openConfigState(config, { env: options.env, bcryptCost: options.bcryptCost });
  const iam = late.iam = await openIamPlane({
    db: state.db,
    stateDir: state.stateDir,
    config,
    metrics: services.metrics.iam,
    audit,
    bootstrapKeyId: () => services.config.current.access.access_key_id,
  });
  const surface = late.surface = openS3Surface(services, iam.hooks);
  const runtime = new ConfigRuntime(services, {
    ...options.runtime,
    iamReconciler: iam.reconciler,
  });
  const admin = await openAdminPlane({
    services,
    runtime,
    s3: surface.s3,
    state,
    iam,
    audit,
    env: options.env,
  });
  surface.useQuotaUsage(admin.quotaUsage);
  return { services, surface, runtime, admin };
}
