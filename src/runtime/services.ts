/**
 * The composition root: every long-lived service of a running svc, built once from the loaded
 * configuration. The listener (server.ts) and the admin routes receive what they need from here;
 * nothing reaches for a global. The storage stack is the one member a config change may replace
 * (config-runtime.ts swaps it), so it is read through `storage` each time.
 */
import { admissionChainSource } from "../admission/build.ts";
import type { AdmissionChain } from "../admission/build.ts";
import { Authenticator } from "../auth/authenticator.ts";
import {
  BootstrapCredentials,
  ChainedCredentials,
  type CredentialStore,
} from "../iam/credentials.ts";
import type { Config } from "../config/schema/schema.ts";
import { Semaphore } from "../lib/semaphore.ts";
import { activeLogging, type Logging } from "../observability/log.ts";
import { createMetrics, type Metrics } from "../observability/metrics.ts";
import { UsageCounter } from "../objects/usage/usage.ts";
import { usageScanSource } from "./usage-source.ts";
import type { S3Access } from "../s3/access.ts";
import type { WriteObserver } from "../objects/usage/write-observer.ts";
import { bucketPolicySource } from "../s3/bucket-policy.ts";
import { createS3Handler, type S3Handler } from "../s3/handler.ts";
import { BucketWriteGate } from "../s3/write-gate.ts";
import { VERSION } from "../lib/version.ts";
import { type Clock, systemClock } from "../jobs/clock.ts";
import { backendPlanOf } from "../config/backend-plan.ts";
import { openStorageStack, type StorageStack } from "./storage-stack.ts";

/** Holds the current config snapshot; readers take `current` once per request. */
export class ConfigHolder {
  #current: Config;
  constructor(initial: Config) {
    this.#current = initial;
  }
  get current(): Config {
    return this.#current;
  }
  swap(next: Config): void {
    this.#current = next;
  }
}

export interface Services {
  config: ConfigHolder;
  /**
   * The clock objects are stamped with and jobs judge ages by: the system clock, or shifted by
   * the test aid `SVC_TEST_CLOCK_OFFSET_SECS` (runtime/test-clock.ts). Never request auth.
   */
  clock: Clock;
  /** The storage stack in use (replaced when a config change rebuilds it). */
  readonly storage: StorageStack;
  replaceStorage(next: StorageStack): StorageStack;
  /**
   * Registers a write observer with the object service in use and with every one a config
   * change brings (the event outbox); returns the unregistration.
   */
  addWriteObserver(observer: WriteObserver): () => void;
  credentials: () => CredentialStore;
  authenticator: Authenticator;
  metrics: Metrics;
  logging: Logging;
  /** The admission chain of the current snapshot (rebuilt when the snapshot changes). */
  admission: () => AdmissionChain;
  semaphore: Semaphore;
  /** Buckets held by maintenance jobs (S3 writes 503 SlowDown) and writes in flight per bucket. */
  maintenanceGate: BucketWriteGate;
  s3: S3Handler;
  /**
   * The per-bucket usage counters (quotas, `/_/stats`, `/usage`): one for the life of the
   * process, observing every object service the storage stack brings; the admin plane persists it.
   */
  usage: UsageCounter;
  /**
   * Plugs IAM in once the config database is open (admin-plane.ts): its keys are asked before
   * the bootstrap pair (a migrated pair signs as its IAM user), and its access hooks authorize
   * every S3 request from then on.
   */
  attachIam(iam: IamAttachment): void;
  stop(): void;
}

export interface IamAttachment {
  credentials: CredentialStore;
  access: S3Access;
}

function defaultBackendType(config: Config): string {
  const plan = backendPlanOf(config);
  return plan.specs.find((spec) => spec.name === plan.defaultName)?.type ?? "filesystem";
}

/** Settings the authenticator reads per request from the current snapshot. */
function authSettings(holder: ConfigHolder) {
  return () => {
    const { access, advanced } = holder.current;
    return {
      open: access.authentication?.trim().toLowerCase() === "none",
      clockSkewSeconds: advanced.clock_skew_seconds,
      replayWindowSeconds: advanced.replay_window_secs,
      trustProxyHeaders: advanced.trust_proxy_headers,
      lockout: {
        maxAttempts: advanced.rate_limit_max_attempts,
        windowSeconds: advanced.rate_limit_window_secs,
        lockoutSeconds: advanced.rate_limit_lockout_secs,
      },
    };
  };
}

export async function openServices(
  config: Config,
  options: { clock?: Clock } = {},
): Promise<Services> {
  const clock = options.clock ?? systemClock;
  const holder = new ConfigHolder(config);
  const logging = activeLogging();
  // One credential store per config snapshot, rebuilt when a change swaps the snapshot.
  let keys: { config: Config; store: CredentialStore } | undefined;
  let iam: IamAttachment | undefined;
  const credentials = () => {
    const current = holder.current;
    if (keys?.config !== current) {
      const { access_key_id, secret_access_key } = current.access;
      const bootstrap = new BootstrapCredentials(access_key_id, secret_access_key);
      keys = {
        config: current,
        // IAM first: after POST /migrate the bootstrap pair is an IAM user, governed by IAM.
        store: iam ? new ChainedCredentials([iam.credentials, bootstrap]) : bootstrap,
      };
    }
    return keys.store;
  };
  const authenticator = new Authenticator(
    credentials,
    authSettings(holder),
    (event, fields) => logging.auditRing.record(event, fields),
  );
  let stack: StorageStack | undefined;
  const metrics = createMetrics({
    version: VERSION,
    backendType: defaultBackendType(config),
    authStats: () => authenticator.stats,
    codecSlots: () => stack?.delta.pool.available ?? 0,
  });
  stack = await openStorageStack(config, () => holder.current, metrics, {
    probe: config.advanced.boot_backend_probe,
    now: clock.now,
  });
  // One counter over whatever stack is in use: a rebuilt stack (backends changed) holds the same
  // buckets, so the counters carry over.
  const usageSource = usageScanSource(() => stack!);
  const usage = new UsageCounter(usageSource.list, {
    baselineSize: usageSource.baselineSize,
    onScan: (trigger, outcome, seconds) => {
      metrics.usage.scans.inc({ trigger, outcome });
      metrics.usage.scanDuration.observe(seconds);
    },
  });
  const admission = admissionChainSource(() => holder.current);
  admission(); // built now: its warnings (a bucket made entirely public) show at startup
  const semaphore = new Semaphore(config.advanced.max_concurrent_requests);
  const maintenanceGate = new BucketWriteGate();
  const s3 = createS3Handler({
    authenticator,
    onComplete: (sample) => metrics.observeRequest(sample),
    // Read per request: a config change that moves the data directory swaps the whole stack.
    services: {
      get objects() {
        return stack!.objects;
      },
      get multipart() {
        return stack!.multipart;
      },
      credentials,
      get access() {
        return iam?.access;
      },
      admission,
      bucketPolicy: bucketPolicySource(() => holder.current),
      usage,
      maintenanceGate,
    },
    semaphore,
    requestTimeoutMs: () => holder.current.advanced.request_timeout_secs * 1000,
    bodyStallMs: () => holder.current.advanced.body_stall_timeout_secs * 1000,
    formFieldsMs: () => holder.current.advanced.header_timeout_secs * 1000,
    debugHeaders: () => holder.current.advanced.debug_headers,
    trustProxyHeaders: () => holder.current.advanced.trust_proxy_headers,
  });
  // Each observer's registrations; an old stack keeps its own (writes in flight on it during a
  // swap are still observed).
  const observers = new Map<WriteObserver, (() => void)[]>();
  observers.set(usage, [stack.objects.observers.add(usage)]);
  return {
    config: holder,
    clock,
    get storage() {
      return stack!;
    },
    replaceStorage(next) {
      const old = stack!;
      stack = next;
      for (const [observer, registrations] of observers) {
        registrations.push(next.objects.observers.add(observer));
      }
      return old;
    },
    addWriteObserver(observer) {
      observers.set(observer, [stack!.objects.observers.add(observer)]);
      return () => {
        for (const unregister of observers.get(observer) ?? []) unregister();
        observers.delete(observer);
      };
    },
    credentials,
    authenticator,
    metrics,
    logging,
    admission,
    semaphore,
    maintenanceGate,
    s3,
    usage,
    attachIam(next) {
      iam = next;
      keys = undefined; // the next lookup chains the IAM keys
    },
    stop() {
      stack!.stop();
    },
  };
}
